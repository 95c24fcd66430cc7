/*
 * ponyfs_mt_model.c - `ponyfs_mt_model MNT MODEL SECONDS [THREADS]`: the
 * helper of ponyfs_mt_model.sh. THREADS (8) threads create, rewrite,
 * rename (over a name and between directories), write in place, truncate,
 * hard-link (then unlink the link again) and delete files in four directories they all share, for SECONDS. Each
 * thread repeats every step in MODEL, a directory of the host's
 * filesystem: the model. A thread's names are its own (t3-17), so the
 * model's final state does not depend on how the threads interleaved,
 * while the directories (their rows, link counts, cookies and listings)
 * take every thread's changes at once. After each step a thread reads the
 * file back through the mount and compares it with the model (size from
 * stat, then every byte), so a stale cached size, attribute or page shows
 * at once. Exit 0: no difference; 1: the first difference, on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIRS 4
#define NAMES 24                /* names per thread */
#define MAX_LEN (48 * 1024)

static const char *mnt, *model;
static double seconds;
static atomic_int failed;
static atomic_ulong steps;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&failed, 1))
		return -1;
	va_start(ap, fmt);
	fputs("ponyfs_mt_model: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct worker {
	unsigned id;
	uint64_t rng;
	int dir[NAMES];                 /* where name i is; -1: absent */
	uint8_t *buf, *got;
};

static uint64_t next(struct worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static void path(char *out, size_t size, const char *root, int dir, unsigned t, int i,
		 const char *suffix)
{
	snprintf(out, size, "%s/d%d/t%u-%d%s", root, dir, t, i, suffix);
}

/* Writes len bytes at off into root's copy of the file (O_TRUNC: its whole new content). */
static int put(const char *p, const uint8_t *buf, size_t len, off_t off, int flags)
{
	int fd = open(p, O_WRONLY | O_CREAT | flags, 0644);
	ssize_t n;

	if (fd < 0)
		return fail("open %s: %s", p, strerror(errno));
	n = len ? pwrite(fd, buf, len, off) : 0;
	if (close(fd) < 0 || n != (ssize_t)len)
		return fail("write %s: %s", p, n < 0 ? strerror(errno) : "short");
	return 0;
}

/* Both copies of the same step, the mount's first. */
static int both_put(struct worker *w, int dir, int i, const char *suffix, size_t len, off_t off,
		    int flags)
{
	char p[4096];

	path(p, sizeof(p), mnt, dir, w->id, i, suffix);
	if (put(p, w->buf, len, off, flags) < 0)
		return -1;
	path(p, sizeof(p), model, dir, w->id, i, suffix);
	return put(p, w->buf, len, off, flags);
}

static int both_rename(struct worker *w, int from_dir, int i, const char *suffix, int to_dir)
{
	char a[4096], b[4096];

	for (int k = 0; k < 2; k++) {
		const char *root = k ? model : mnt;

		path(a, sizeof(a), root, from_dir, w->id, i, suffix);
		path(b, sizeof(b), root, to_dir, w->id, i, "");
		if (rename(a, b) < 0)
			return fail("rename %s %s: %s", a, b, strerror(errno));
	}
	return 0;
}

static int both_unlink(struct worker *w, int dir, int i)
{
	char p[4096];

	for (int k = 0; k < 2; k++) {
		path(p, sizeof(p), k ? model : mnt, dir, w->id, i, "");
		if (unlink(p) < 0)
			return fail("unlink %s: %s", p, strerror(errno));
	}
	return 0;
}

/* A second name beside dir/t-i: both copies must count two links; then it goes again. */
static int both_link_unlink(struct worker *w, int dir, int i)
{
	char p[4096], l[4096];
	struct stat st;

	for (int k = 0; k < 2; k++) {
		path(p, sizeof(p), k ? model : mnt, dir, w->id, i, "");
		path(l, sizeof(l), k ? model : mnt, dir, w->id, i, ".lnk");
		if (link(p, l) < 0)
			return fail("link %s %s: %s", p, l, strerror(errno));
		if (stat(p, &st) < 0 || st.st_nlink != 2)
			return fail("%s: %lu links after a link, not 2", p, (unsigned long)st.st_nlink);
		if (unlink(l) < 0)
			return fail("unlink %s: %s", l, strerror(errno));
	}
	return 0;
}

static int both_truncate(struct worker *w, int dir, int i, off_t size)
{
	char p[4096];

	for (int k = 0; k < 2; k++) {
		path(p, sizeof(p), k ? model : mnt, dir, w->id, i, "");
		if (truncate(p, size) < 0)
			return fail("truncate %s: %s", p, strerror(errno));
	}
	return 0;
}

/* Reads a whole file into buf (MAX_LEN); its length, or -1 (errno). */
static ssize_t slurp(const char *p, uint8_t *buf)
{
	int fd = open(p, O_RDONLY);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + got, MAX_LEN - (size_t)got)) > 0)
		got += n;
	close(fd);
	return n < 0 ? -1 : got;
}

/* The mount's file dir/t-i against the model's: stat's size and type, then the bytes. */
static int check(struct worker *w, int dir, int i)
{
	char p[4096], q[4096];
	struct stat a, b;
	ssize_t na, nb;

	path(p, sizeof(p), mnt, dir, w->id, i, "");
	path(q, sizeof(q), model, dir, w->id, i, "");
	if (stat(p, &a) < 0 || stat(q, &b) < 0)
		return fail("stat %s: %s", p, strerror(errno));
	if (a.st_size != b.st_size || !S_ISREG(a.st_mode) || a.st_nlink != 1)
		return fail("%s: size %lld nlink %lu, the model's size %lld", p, (long long)a.st_size,
			    (unsigned long)a.st_nlink, (long long)b.st_size);
	na = slurp(p, w->got);
	nb = slurp(q, w->buf);
	if (na != nb || na < 0 || memcmp(w->got, w->buf, (size_t)na))
		return fail("%s: its %zd bytes differ from the model's %zd", p, na, nb);
	return 0;
}

/* One random step on one of the thread's names. */
static int step(struct worker *w)
{
	int i = (int)(next(w) % NAMES), d = w->dir[i], to = (int)(next(w) % DIRS);
	size_t len = next(w) % MAX_LEN;
	unsigned op = (unsigned)(next(w) % 7);
	int r;

	for (size_t k = 0; k < len; k++)
		w->buf[k] = (uint8_t)next(w);
	if (d < 0) {                    /* absent: create it, written whole */
		r = both_put(w, to, i, "", len, 0, O_TRUNC);
		w->dir[i] = r < 0 ? -1 : to;
		return r < 0 ? r : check(w, to, i);
	}
	switch (op) {
	case 0:                         /* write-new + rename-over, maybe into another directory */
		r = both_put(w, to, i, ".tmp", len, 0, O_TRUNC);
		if (r >= 0 && to != d)
			r = both_unlink(w, d, i);
		if (r >= 0)
			r = both_rename(w, to, i, ".tmp", to);
		d = to;
		break;
	case 1:                         /* moved to another directory */
		r = both_rename(w, d, i, "", to);
		d = to;
		break;
	case 2:                         /* written in place, at some offset */
		r = both_put(w, d, i, "", len / 4, (off_t)(next(w) % MAX_LEN / 2), 0);
		break;
	case 3:                         /* truncated */
		r = both_truncate(w, d, i, (off_t)(next(w) % MAX_LEN));
		break;
	case 5:                         /* linked, the link counted, unlinked */
		r = both_link_unlink(w, d, i);
		break;
	case 4:                         /* deleted */
		r = both_unlink(w, d, i);
		w->dir[i] = -1;
		return r;
	default:                        /* rewritten whole */
		r = both_put(w, d, i, "", len, 0, O_TRUNC);
		break;
	}
	w->dir[i] = d;
	return r < 0 ? r : check(w, d, i);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	double end = now() + seconds;

	while (!atomic_load(&failed) && now() < end) {
		if (step(w) < 0)
			break;
		atomic_fetch_add(&steps, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 4 ? (unsigned)atoi(argv[4]) : 8;
	struct worker *w;
	pthread_t *tid;
	char p[4096];

	if (argc < 4 || argc > 5 || (seconds = atof(argv[3])) <= 0 || !nthreads || nthreads > 64) {
		fprintf(stderr, "usage: ponyfs_mt_model MNT MODEL SECONDS [THREADS]\n");
		return 2;
	}
	mnt = argv[1];
	model = argv[2];
	for (int d = 0; d < DIRS; d++) {
		for (int k = 0; k < 2; k++) {
			snprintf(p, sizeof(p), "%s/d%d", k ? model : mnt, d);
			if (mkdir(p, 0755) < 0 && errno != EEXIST) {
				fprintf(stderr, "ponyfs_mt_model: mkdir %s: %s\n", p, strerror(errno));
				return 1;
			}
		}
	}
	w = calloc(nthreads, sizeof(*w));
	tid = calloc(nthreads, sizeof(*tid));
	if (!w || !tid)
		return 1;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t].id = t;
		w[t].rng = 0x9e3779b97f4a7c15ull * (t + 1);
		memset(w[t].dir, -1, sizeof(w[t].dir));
		w[t].buf = malloc(MAX_LEN);
		w[t].got = malloc(MAX_LEN);
		if (!w[t].buf || !w[t].got || pthread_create(&tid[t], NULL, run, &w[t]))
			return fail("no thread %u", t) < 0 ? 1 : 1;
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(tid[t], NULL);
		free(w[t].buf);
		free(w[t].got);
	}
	printf("ponyfs_mt_model: %u threads, %lu steps in %.0f s, %s\n", nthreads,
	       (unsigned long)atomic_load(&steps), seconds, failed ? "FAILED" : "all matched the model");
	free(w);
	free(tid);
	return failed ? 1 : 0;
}
