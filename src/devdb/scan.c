/*
 * scan.c - discovery: every block device in /sys/class/block, or the image
 * files and directories given. A path whose identity is unchanged since it
 * was probed is not read at all; the rest are probed in parallel as acall
 * CALL ops on acall's worker threads (probing is many small preads, each a
 * blocking call), then stored in one transaction. Known paths under the
 * scanned roots that are gone are marked absent.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pony/acall.h"
#include "pony/util.h"

#define PROBE_WORKERS 8         /* cold-cache probes wait on the disk, not the CPU */
#define PROBE_WINDOW 256

struct strv {
	char **v;
	size_t n, cap;
};

static void strv_done(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){ 0 };
}

static int strv_add(struct strv *s, const char *str)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = strdup(str);
	return s->v[s->n] ? (int)++s->n * 0 : -ENOMEM;
}

/* Regular files and block devices under dir, depth-first, at most depth levels. */
static int walk_dir(const char *dir, int depth, struct strv *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (r == 0 && (e = readdir(d))) {
		char p[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			continue;
		/* the entry's type, where the filesystem gives it, spares an lstat */
		if (e->d_type == DT_REG || e->d_type == DT_BLK)
			st.st_mode = e->d_type == DT_REG ? S_IFREG : S_IFBLK;
		else if (e->d_type == DT_DIR)
			st.st_mode = S_IFDIR;
		else if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth > 0)
			r = walk_dir(p, depth - 1, out);
		else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
			r = strv_add(out, p);
	}
	closedir(d);
	return r;
}

/* /dev/NAME for every entry of /sys/class/block (partitions included). */
static int block_devices(struct strv *out)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (r == 0 && (e = readdir(d))) {
		char p[512];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/dev/%s", e->d_name);
		if (stat(p, &st) == 0 && S_ISBLK(st.st_mode))
			r = strv_add(out, p);
	}
	closedir(d);
	return r;
}

/* One CALL op probes a batch of paths: a wake-up per path would cost more
 * than a warm probe (tens of microseconds) on a busy two-core machine. */
#define PROBE_BATCH 16

struct probe_job {
	char *const *paths;
	struct devdb_ident *ids;
	struct devdb_probe_result **res;
	int *err;
	size_t first, n;
};

static int64_t probe_job_run(void *arg)
{
	struct probe_job *j = arg;

	for (size_t i = 0; i < j->n; i++) {
		size_t k = j->first + i;

		j->err[k] = devdb_probe_ident(j->paths[k], &j->ids[k], &j->res[k]);
	}
	return 0;
}

int devdb_probe_many(char *const *paths, size_t n, struct devdb_ident *ids,
		     struct devdb_probe_result **res, int *err,
		     int (*done_cb)(void *ctx, size_t first, size_t count), void *ctx)
{
	struct acall_ring_params params = { .workers = PROBE_WORKERS };
	_cleanup_(acall_ring_freep) struct acall_ring *ring = NULL;
	size_t njobs = DIV_ROUND_UP(n, PROBE_BATCH);
	_cleanup_(freep) struct probe_job *jobs = calloc(njobs ? njobs : 1, sizeof(*jobs));
	size_t next = 0, inflight = 0;
	int r, failed = 0;

	if (!jobs)
		return -ENOMEM;
	if (!n)
		return 0;
	r = acall_ring_new(&params, &ring);
	if (r < 0)
		return r;
	/* after a failure, the ops in flight are still waited for: their
	 * workers write into jobs[] and res[] */
	while (inflight || (next < njobs && !failed)) {
		struct acall_op *ops[PROBE_WINDOW];

		for (; !failed && next < njobs && inflight < PROBE_WINDOW; next++, inflight++) {
			struct acall_op *op = acall_get_op(ring);
			size_t first = next * PROBE_BATCH;

			if (!op) {
				failed = -ENOMEM;
				break;
			}
			jobs[next] = (struct probe_job){ .paths = paths, .ids = ids, .res = res,
				.err = err, .first = first, .n = MIN((size_t)PROBE_BATCH, n - first) };
			acall_prep_call(op, probe_job_run, &jobs[next]);
			acall_op_set_data(op, &jobs[next]);
		}
		r = acall_submit(ring);
		if (r < 0)
			return r;       /* nothing was queued: nothing is in flight */
		if (!inflight)
			break;
		r = acall_wait_batch(ring, ops, PROBE_WINDOW, 1);
		if (r < 0)
			return r;
		inflight -= (size_t)r;
		for (int i = 0; i < r; i++) {
			struct probe_job *j = acall_op_data(ops[i]);

			acall_op_done(ring, ops[i]);
			if (!failed && done_cb)
				failed = MIN(done_cb(ctx, j->first, j->n), 0);
		}
	}
	return failed;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Marks known paths under root (or every block path) absent if not in seen
 * (sorted). */
static int mark_vanished(struct devdb *db, const char *root, const struct strv *seen,
			 unsigned *vanished)
{
	sqlite3_stmt *s;
	struct strv gone = { 0 };
	int r = 0;
	const char *sql = root ? "SELECT path FROM paths WHERE present=1 AND parent IS NULL AND "
				 "(path=?1 OR substr(path, 1, length(?1) + 1) = ?1 || '/')"
			       : "SELECT path FROM paths WHERE present=1 AND block=1";

	if (sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL))
		return -EIO;
	if (root)
		sqlite3_bind_text(s, 1, root, -1, SQLITE_STATIC);
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(s, 0);

		if (!bsearch(&p, seen->v, seen->n, sizeof(*seen->v), cmp_str))
			r = strv_add(&gone, p);
	}
	sqlite3_finalize(s);
	for (size_t i = 0; r == 0 && i < gone.n; i++) {
		r = devdb_mark_absent(db, gone.v[i]);
		if (r == 0)
			(*vanished)++;
	}
	strv_done(&gone);
	return r == -ENOENT ? 0 : r;
}

/*
 * Which paths need a probe: identity unknown, changed, or forced. Only a
 * path stored as present needs a stat here; the others get theirs from the
 * probe's own open (on a worker thread).
 */
static int scan_select(struct devdb *db, const struct strv *all, unsigned flags, struct strv *todo,
		       struct devdb_scan_stats *st)
{
	for (size_t i = 0; i < all->n; i++) {
		struct devdb_ident old, cur;
		bool present = false;
		int r = flags & DEVDB_SCAN_FORCE ? 0 : devdb_stored_ident(db, all->v[i], &old, &present);

		if (r < 0)
			return r;
		if (r == 1 && present) {
			r = devdb_ident_get(all->v[i], &cur);
			if (r == 0 && devdb_ident_equal(&old, &cur)) {
				st->unchanged++;
				continue;
			}
		}
		r = strv_add(todo, all->v[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Stores probe results as their batch finishes, inside the scan's transaction. */
struct scan_store {
	struct devdb *db;
	const struct strv *todo;
	const struct devdb_ident *ids;
	struct devdb_probe_result **res;
	const int *err;
	struct devdb_scan_stats *st;
	size_t stored;
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

static int scan_store(void *arg, size_t first, size_t count)
{
	struct scan_store *s = arg;
	int r = 0;

	for (size_t i = first; r == 0 && i < first + count; i++) {
		struct devdb_probe_result *res = s->res[i];

		if (s->err[i] < 0 || !res) {
			s->st->failed++;
			continue;
		}
		r = devdb_store(s->db, s->todo->v[i], &s->ids[i], res);
		s->st->probed++;
		s->st->bytes_read += res->bytes_read;
		if (res->status == DEVDB_PROBE_FOUND)
			s->st->found++;
		devdb_probe_result_free(res);
		s->res[i] = NULL;
	}
	s->stored += count;
	if (s->progress)
		s->progress(s->ctx, s->stored, s->todo->n);
	return r;
}

int devdb_scan(struct devdb *db, const char *const *paths, size_t npaths, unsigned flags,
	       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx,
	       struct devdb_scan_stats *ret_stats)
{
	struct devdb_scan_stats st = { 0 };
	struct strv all = { 0 }, todo = { 0 }, roots = { 0 };
	struct devdb_ident *ids = NULL;
	struct devdb_probe_result **res = NULL;
	int *err = NULL;
	int r = 0;

	if (!npaths) {
		r = block_devices(&all);
	} else {
		for (size_t i = 0; r == 0 && i < npaths; i++) {
			/* stored paths are absolute, so any working directory finds them */
			_cleanup_(freep) char *abs = realpath(paths[i], NULL);
			struct stat sb;

			if (!abs || stat(abs, &sb) < 0) {
				r = -errno;
				break;
			}
			if (S_ISDIR(sb.st_mode)) {
				r = walk_dir(abs, 8, &all);
				if (r == 0)
					r = strv_add(&roots, abs);
			} else {
				r = strv_add(&all, abs);
			}
		}
	}
	if (r == 0 && all.n)
		qsort(all.v, all.n, sizeof(*all.v), cmp_str);      /* for mark_vanished's bsearch */
	if (r == 0) {
		ids = calloc(all.n + 1, sizeof(*ids));
		res = calloc(all.n + 1, sizeof(*res));
		err = calloc(all.n + 1, sizeof(*err));
		r = ids && res && err ? 0 : -ENOMEM;
	}
	/* one transaction for the whole scan (a read transaction per query
	 * costs two fcntl locks), written as probes finish: the database work
	 * of one batch overlaps the probing of the next */
	if (r == 0)
		r = devdb_exec(db, "BEGIN IMMEDIATE");
	if (r == 0) {
		struct scan_store store = { .db = db, .todo = &todo, .ids = ids, .res = res,
			.err = err, .st = &st, .progress = progress, .ctx = ctx };

		r = scan_select(db, &all, flags, &todo, &st);
		if (r == 0)
			r = devdb_probe_many(todo.v, todo.n, ids, res, err, scan_store, &store);
		for (size_t i = 0; r == 0 && i < roots.n; i++)
			r = mark_vanished(db, roots.v[i], &all, &st.vanished);
		if (r == 0 && !npaths)
			r = mark_vanished(db, NULL, &all, &st.vanished);
		devdb_exec(db, r == 0 ? "COMMIT" : "ROLLBACK");
	}
	for (size_t i = 0; res && i < todo.n; i++)
		devdb_probe_result_free(res[i]);
	free(res);
	free(err);
	free(ids);
	strv_done(&all);
	strv_done(&todo);
	strv_done(&roots);
	if (r == 0 && ret_stats)
		*ret_stats = st;
	return r;
}
