/*
 * acall_uring_statx.c - the peers of acall's batched statx: io_uring's own
 * IORING_OP_STATX at a fixed depth, and a plain statx() loop in one thread,
 * over every file of a directory tree (one level of subdirectories, as
 * `pony acall mkfiles` makes). Prints "statx/s N".
 *
 *   acall_uring_statx uring DEPTH DIR SECONDS
 *   acall_uring_statx loop DIR SECONDS
 */
#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char **names;
static size_t nnames, cap;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void add(const char *dir, const char *name)
{
	if (nnames == cap) {
		cap = cap ? cap * 2 : 1024;
		names = realloc(names, cap * sizeof(*names));
		if (!names)
			exit(1);
	}
	if (dir) {
		if (asprintf(&names[nnames], "%s/%s", dir, name) < 0)
			exit(1);
	} else {
		names[nnames] = strdup(name);
	}
	nnames++;
}

static void list(int dfd)
{
	DIR *top = fdopendir(dup(dfd));
	struct dirent *d, *e;

	while (top && (d = readdir(top))) {
		DIR *sub;

		if (d->d_name[0] == '.')
			continue;
		if (d->d_type != DT_DIR) {
			add(NULL, d->d_name);
			continue;
		}
		sub = fdopendir(openat(dfd, d->d_name, O_DIRECTORY | O_RDONLY));
		while (sub && (e = readdir(sub)))
			if (e->d_name[0] != '.')
				add(d->d_name, e->d_name);
		if (sub)
			closedir(sub);
	}
	if (top)
		closedir(top);
}

static unsigned long run_loop(int dfd, double end)
{
	struct statx stx;
	unsigned long n = 0;

	while (now() < end)
		for (size_t i = 0; i < nnames && (i % 1024 || now() < end); i++, n++)
			if (statx(dfd, names[i], AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx) < 0)
				exit(1);
	return n;
}

static unsigned long run_uring(int dfd, unsigned depth, double end)
{
	struct statx *stx = calloc(depth, sizeof(*stx));
	struct io_uring ring;
	unsigned long n = 0;
	unsigned inflight = 0;
	size_t next = 0;
	bool stop = false;

	if (!stx || io_uring_queue_init(depth, &ring, 0) < 0)
		exit(1);
	/* slot i's statx buffer belongs to the op whose user_data is i */
	for (unsigned i = 0; i < depth; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_statx(sqe, dfd, names[next++ % nnames], AT_STATX_DONT_SYNC,
				    STATX_BASIC_STATS, &stx[i]);
		io_uring_sqe_set_data64(sqe, i);
		inflight++;
	}
	while (inflight) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		io_uring_submit_and_wait(&ring, 1);
		io_uring_for_each_cqe(&ring, head, cqe) {
			if (cqe->res < 0)
				exit(1);
			seen++;
			if (stop) {
				inflight--;
				continue;
			}
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned slot = (unsigned)cqe->user_data;

			io_uring_prep_statx(sqe, dfd, names[next++ % nnames], AT_STATX_DONT_SYNC,
					    STATX_BASIC_STATS, &stx[slot]);
			io_uring_sqe_set_data64(sqe, slot);
		}
		io_uring_cq_advance(&ring, seen);
		n += seen;
		stop = stop || now() >= end;
	}
	io_uring_queue_exit(&ring);
	free(stx);
	return n;
}

int main(int argc, char **argv)
{
	bool uring = argc == 5 && !strcmp(argv[1], "uring");
	const char *dir = uring ? argv[3] : argv[2];
	double secs, t0;
	unsigned long n;
	int dfd;

	if (!uring && !(argc == 4 && !strcmp(argv[1], "loop"))) {
		fprintf(stderr, "usage: acall_uring_statx uring DEPTH DIR SECONDS\n"
				"       acall_uring_statx loop DIR SECONDS\n");
		return 2;
	}
	secs = atof(argv[argc - 1]);
	dfd = open(dir, O_DIRECTORY | O_RDONLY);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	list(dfd);
	if (!nnames)
		return 1;
	t0 = now();
	n = uring ? run_uring(dfd, (unsigned)atoi(argv[2]), t0 + secs) : run_loop(dfd, t0 + secs);
	printf("statx/s %.0f\n", n / (now() - t0));
	return 0;
}
