/*
 * cmd_acall_bench.c - `pony acall bench`: keeps N ops in flight per thread
 * (each thread its own ring, as each fio job has its own) for S seconds
 * and prints the rate. Every result is checked, so a fast wrong answer
 * shows up as errors, not as speed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_acall.h"
#include "pony/util.h"
#include "table.h"

#define CMD "pony acall bench"

enum bench_op { BENCH_RANDREAD, BENCH_RANDWRITE, BENCH_MIXED, BENCH_STATX };
static const char *const bench_op_names[] = { "randread", "randwrite", "mixed", "statx" };

struct bench {
	enum bench_op op;
	unsigned depth, threads, workers;
	uint64_t size, bs;
	double seconds;
	bool direct, nocache, json;
	enum acall_path path;
	const char *target;
	int fd;                 /* the file, or the directory for statx */
	char **names;           /* statx: files under the directory */
	size_t nnames;
	uint64_t end_ns;
};

struct job {
	struct bench *b;
	pthread_t thread;
	unsigned id;
	uint64_t ops, errors;
	uint64_t rng;
	int err;
};

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: cheap, and good enough to scatter offsets. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void prep_one(struct job *jb, struct acall_op *op, uint8_t *buf, size_t *next_name,
		     struct statx *stx)
{
	struct bench *b = jb->b;
	uint64_t off;
	bool write;

	if (b->op == BENCH_STATX) {
		acall_prep_statx(op, b->fd, b->names[*next_name], AT_STATX_DONT_SYNC,
				 STATX_BASIC_STATS, stx);
		*next_name += b->threads;
		if (*next_name >= b->nnames)
			*next_name = jb->id;    /* next pass */
		return;
	}
	off = rng_next(&jb->rng) % (b->size / b->bs) * b->bs;
	write = b->op == BENCH_RANDWRITE || (b->op == BENCH_MIXED && rng_next(&jb->rng) % 10 < 3);
	if (write) {
		acall_prep_write(op, b->fd, buf, b->bs, off);
	} else {
		acall_prep_read(op, b->fd, buf, b->bs, off);
	}
	if (b->nocache)
		acall_op_set_flags(op, ACALL_F_NOCACHE);
}

static int job_loop(struct job *jb, struct acall_ring *ring)
{
	struct bench *b = jb->b;
	_cleanup_(freep) uint8_t *bufs = util_aligned_alloc(b->depth * b->bs);
	_cleanup_(freep) struct statx *stx = calloc(b->depth, sizeof(*stx));
	_cleanup_(freep) struct acall_op **done = calloc(b->depth, sizeof(*done));
	_cleanup_(freep) unsigned *free_slots = calloc(b->depth, sizeof(unsigned));
	unsigned nfree = b->depth, inflight = 0;
	size_t next_name = jb->id;
	bool stop = false;

	if (!bufs || !stx || !done || !free_slots)
		return -ENOMEM;
	memset(bufs, 0xa5, b->depth * b->bs);
	for (unsigned i = 0; i < b->depth; i++)
		free_slots[i] = i;
	while (!stop || inflight) {
		int n;

		if (!stop && nfree) {
			unsigned got = acall_get_ops(ring, done, nfree);

			if (!got)
				return -ENOMEM;
			for (unsigned i = 0; i < got; i++) {
				unsigned slot = free_slots[--nfree];

				prep_one(jb, done[i], bufs + slot * b->bs, &next_name, &stx[slot]);
				acall_op_set_data(done[i], (void *)(uintptr_t)slot);
			}
			inflight += got;
			acall_submit(ring);
		}
		n = acall_wait_batch(ring, done, b->depth, 1);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			int64_t want = b->op == BENCH_STATX ? 0 : (int64_t)b->bs;

			if (acall_op_result(done[i]) != want) {
				if (!jb->errors)
					jb->err = (int)acall_op_result(done[i]);
				jb->errors++;
			}
			free_slots[nfree++] = (unsigned)(uintptr_t)acall_op_data(done[i]);
		}
		acall_op_done_batch(ring, done, (unsigned)n);
		inflight -= (unsigned)n;
		jb->ops += (uint64_t)n;
		stop = stop || util_now_ns() >= b->end_ns;
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct job *jb = arg;
	struct acall_ring_params p = {
		.entries = MAX(jb->b->depth, 8u), .workers = jb->b->workers, .path = jb->b->path,
	};
	struct acall_ring *ring;
	int r = acall_ring_new(&p, &ring);

	if (r == 0) {
		r = job_loop(jb, ring);
		acall_ring_free(ring);
	}
	if (r < 0)
		jb->err = r;
	return NULL;
}

/* statx input: every regular file in dir and one level of subdirectories. */
static int list_files(struct bench *b)
{
	DIR *top = fdopendir(dup(b->fd));
	struct dirent *d;
	size_t cap = 0;

	if (!top)
		return -errno;
	while ((d = readdir(top))) {
		DIR *sub;
		struct dirent *e;

		if (d->d_name[0] == '.')
			continue;
		if (d->d_type != DT_DIR) {
			e = d;
			sub = NULL;
			goto add;
		}
		sub = fdopendir(openat(b->fd, d->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC));
		while (sub && (e = readdir(sub))) {
			if (e->d_name[0] == '.')
				continue;
add:
			if (b->nnames == cap) {
				char **n = realloc(b->names, (cap = cap ? cap * 2 : 1024) * sizeof(*n));

				if (!n)
					break;
				b->names = n;
			}
			if (sub) {
				if (asprintf(&b->names[b->nnames], "%s/%s", d->d_name, e->d_name) < 0)
					break;
			} else if (!(b->names[b->nnames] = strdup(e->d_name))) {
				break;
			}
			b->nnames++;
			if (!sub)
				break;
		}
		if (sub)
			closedir(sub);
	}
	closedir(top);
	return b->nnames ? 0 : -ENOENT;
}

static void usage(void)
{
	printf("Usage: " CMD " [OPTIONS] PATH\n"
	       "Keeps DEPTH ops in flight per thread for SECONDS and prints the rate.\n"
	       "PATH is a file (randread, randwrite, mixed: 70%% reads) or a directory\n"
	       "whose files (and those one level down) are statx'ed (statx).\n\n"
	       "  --op OP          randread (default), randwrite, mixed, statx\n"
	       "  --depth N        ops in flight per thread (32)\n"
	       "  --threads N      submitting threads, one ring each (1)\n"
	       "  --workers N      worker threads per ring (0: one per CPU, at least 2)\n"
	       "  --bs SIZE        I/O size (4K)\n"
	       "  --size SIZE      offsets stay below SIZE (the file's size)\n"
	       "  --seconds S      run time (5)\n"
	       "  --direct         open with O_DIRECT\n"
	       "  --nocache        ACALL_F_NOCACHE on every op\n"
	       "  --path P         auto (default), uring, workers\n"
	       "  --json           machine-readable output\n");
}

static int parse_args(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "op", required_argument, NULL, 'o' },
		{ "depth", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "workers", required_argument, NULL, 'w' },
		{ "bs", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "direct", no_argument, NULL, 'D' },
		{ "nocache", no_argument, NULL, 'N' },
		{ "path", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, op;

	while ((c = getopt_long(argc, argv, "o:d:t:w:b:s:S:DNp:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			for (op = 0; op < (int)ARRAY_SIZE(bench_op_names); op++)
				if (!strcmp(optarg, bench_op_names[op]))
					break;
			if (op == (int)ARRAY_SIZE(bench_op_names))
				return cli_usage_error(CMD, "unknown op '%s'", optarg);
			b->op = (enum bench_op)op;
			break;
		case 'd':
			if (cli_parse_unsigned(CMD, "--depth", optarg, 1, 4096, &b->depth))
				return CLI_EXIT_USAGE;
			break;
		case 't':
			if (cli_parse_unsigned(CMD, "--threads", optarg, 1, 256, &b->threads))
				return CLI_EXIT_USAGE;
			break;
		case 'w':
			if (cli_parse_unsigned(CMD, "--workers", optarg, 1, 256, &b->workers))
				return CLI_EXIT_USAGE;
			break;
		case 'b':
			if (cli_parse_size(CMD, "--bs", optarg, 1, 64 << 20, 1, &b->bs))
				return CLI_EXIT_USAGE;
			break;
		case 's':
			if (cli_parse_size(CMD, "--size", optarg, 1, UINT64_MAX, 1, &b->size))
				return CLI_EXIT_USAGE;
			break;
		case 'S':
			if (cli_parse_seconds(CMD, "--seconds", optarg, 0.001, 86400, &b->seconds))
				return CLI_EXIT_USAGE;
			break;
		case 'D':
			b->direct = true;
			break;
		case 'N':
			b->nocache = true;
			break;
		case 'p':
			if (acall_parse_path(optarg, &b->path) < 0)
				return cli_usage_error(CMD, "bad path '%s' (auto, uring, workers)", optarg);
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			usage();
			return -1;
		default:
			return cli_usage_error(CMD, "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error(CMD, "expected one PATH");
	b->target = argv[optind];
	return 0;
}

static int open_target(struct bench *b)
{
	struct stat st;

	if (b->op == BENCH_STATX) {
		b->fd = open(b->target, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		if (b->fd < 0)
			return cli_error("cannot open directory %s: %m", b->target);
		if (list_files(b) < 0)
			return cli_error("no files under %s", b->target);
		return 0;
	}
	b->fd = open(b->target, (b->op == BENCH_RANDREAD ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		     (b->direct ? O_DIRECT : 0));
	if (b->fd < 0 || fstat(b->fd, &st) < 0)
		return cli_error("cannot open %s: %m", b->target);
	if (!b->size)
		b->size = (uint64_t)st.st_size;
	if (b->size < b->bs)
		return cli_error("%s is smaller than one block (%llu bytes)", b->target,
				 (unsigned long long)b->bs);
	return 0;
}

/*
 * The run's figures, a record (table.c): OP, OPS_PER_SEC, MIB_PER_SEC (not
 * for statx), OPS, ERRORS and how it ran (DEPTH, THREADS, BS, PATH,
 * DIRECT, NOCACHE, SECONDS); --json {"bench": [{"op": ..., ...}]}.
 */
static int report(const struct bench *b, uint64_t ops, uint64_t errors, double secs)
{
	struct cli_record *r = cli_record_new("bench", b->json);
	double rate = ops / secs;

	cli_record_set(r, "OP", 0, "%s", bench_op_names[b->op]);
	cli_record_set(r, "OPS_PER_SEC", CLI_COL_NUMBER, "%.0f", rate);
	if (b->op != BENCH_STATX)
		cli_record_set(r, "MIB_PER_SEC", CLI_COL_NUMBER, "%.1f",
			       rate * (double)b->bs / 1048576);
	cli_record_set_u64(r, "OPS", ops);
	cli_record_set_u64(r, "ERRORS", errors);
	cli_record_set_u64(r, "DEPTH", b->depth);
	cli_record_set_u64(r, "THREADS", b->threads);
	cli_record_set_u64(r, "BS", b->bs);
	cli_record_set(r, "PATH", 0, "%s", b->path == ACALL_PATH_URING ? "uring" :
		       b->path == ACALL_PATH_WORKERS ? "workers" : "auto");
	cli_record_set_bool(r, "DIRECT", b->direct);
	cli_record_set_bool(r, "NOCACHE", b->nocache);
	cli_record_set(r, "SECONDS", CLI_COL_NUMBER, "%.3f", secs);
	return cli_record_print(r);
}

int acall_bench_run(int argc, char **argv)
{
	struct bench b = { .depth = 32, .threads = 1, .bs = 4096, .seconds = 5, .fd = -1 };
	_cleanup_(freep) struct job *jobs = NULL;
	uint64_t ops = 0, errors = 0, t0;
	int r, err = 0;

	r = parse_args(&b, argc, argv);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	r = open_target(&b);
	if (r)
		goto out;
	jobs = calloc(b.threads, sizeof(*jobs));
	if (!jobs) {
		r = cli_error("out of memory");
		goto out;
	}
	t0 = util_now_ns();
	b.end_ns = t0 + (uint64_t)(b.seconds * 1e9);
	for (unsigned i = 0; i < b.threads; i++) {
		jobs[i] = (struct job){ .b = &b, .id = i, .rng = 0x9e3779b97f4a7c15ull * (i + 1) };
		if (pthread_create(&jobs[i].thread, NULL, job_main, &jobs[i])) {
			b.end_ns = 0;   /* the started ones stop at once */
			b.threads = i;
			err = -EAGAIN;
		}
	}
	for (unsigned i = 0; i < b.threads; i++) {
		pthread_join(jobs[i].thread, NULL);
		ops += jobs[i].ops;
		errors += jobs[i].errors;
		if (jobs[i].err && !err)
			err = jobs[i].err;
	}
	if (err && (!ops || errors)) {
		r = cli_error("%s %s: %s", bench_op_names[b.op], b.target, strerror(-err));
		goto out;
	}
	r = report(&b, ops, errors, (double)(util_now_ns() - t0) / 1e9);
out:
	for (size_t i = 0; i < b.nnames; i++)
		free(b.names[i]);
	free(b.names);
	if (b.fd >= 0)
		close(b.fd);
	return r;
}
