/*
 * fsck.c - checks an unmounted ponyfs: the superblock and the regions'
 * sizes (a truncated image says which region is short and by how much),
 * after the copies of a volume's metadata mirror (fsck_mirror.c); then
 * SQLite's own integrity check, and what SQLite cannot know: the
 * namespace (fsck_names.c), extents, checksums and free space
 * (fsck_blocks.c). This file runs the passes, names files by their paths
 * in what it reports, and decides what a run may fix: nothing (-n: the
 * database is opened on an in-memory overlay, so not a byte is written),
 * what is safe (-p), or everything fixable (-y).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

bool fsck_writable(const struct fsck *f)
{
	return f->p->flags & (PONYFS_FSCK_REPAIR | PONYFS_FSCK_PREEN);
}

bool fsck_may_fix(const struct fsck *f, enum fsck_fix how)
{
	switch (how) {
	case FSCK_FIX_SAFE: return fsck_writable(f);
	case FSCK_FIX_ASK: return f->p->flags & PONYFS_FSCK_REPAIR;
	default: return false;
	}
}

static void problem_report(struct fsck *f, const char *check, uint64_t ino, const char *path,
			   bool fixed, const char *fmt, va_list ap)
{
	char text[1024];
	struct ponyfs_fsck_problem pr = { .check = check, .ino = ino, .path = path, .text = text,
					  .fixed = fixed };

	f->res->found++;
	f->res->fixed += fixed;
	if (!f->p->report)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	f->p->report(f->p->report_arg, &pr);
}

void fsck_problem_at(struct fsck *f, const char *check, uint64_t ino, const char *path,
		     bool fixed, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	problem_report(f, check, ino, path, fixed, fmt, ap);
	va_end(ap);
}

void fsck_problem(struct fsck *f, const char *check, uint64_t ino, bool fixed, const char *fmt, ...)
{
	_cleanup_(freep) char *path = ino && f->p->report ? fsck_path(f, ino) : NULL;
	va_list ap;

	va_start(ap, fmt);
	problem_report(f, check, ino, path, fixed, fmt, ap);
	va_end(ap);
}

/* -- SQL helpers ----------------------------------------------------------- */

int fsck_step_done(sqlite3_stmt *s)
{
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		;
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : ponyfs_sqlite_errno(rc);
}

int fsck_exec(struct fsck *f, const char *sql, int n, ...)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(f->db, sql, -1, &s, NULL);
	va_list ap;

	if (rc != SQLITE_OK)
		return ponyfs_sqlite_errno(rc);
	va_start(ap, n);
	for (int i = 1; i <= n; i++)
		sqlite3_bind_int64(s, i, va_arg(ap, int64_t));
	va_end(ap);
	rc = fsck_step_done(s);
	sqlite3_finalize(s);
	return rc;
}

void fsck_rows_free(struct fsck_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].blob);
	free(rows);
}

int fsck_rows(struct fsck *f, const char *sql, struct fsck_row **ret, size_t *ret_n)
{
	struct fsck_row *rows = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(f->db, sql, -1, &s, NULL), r = ponyfs_sqlite_errno(rc);

	while (r >= 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fsck_row *row;
		int cols = sqlite3_column_count(s);

		if (n == cap) {
			struct fsck_row *m = realloc(rows, (cap = cap ? 2 * cap : 16) * sizeof(*m));

			if (!m) {
				r = -ENOMEM;
				break;
			}
			rows = m;
		}
		row = &rows[n++];
		memset(row, 0, sizeof(*row));
		for (int c = 0; c < 4 && c < cols; c++)
			row->v[c] = sqlite3_column_int64(s, c);
		if (cols > 4 && sqlite3_column_type(s, 4) != SQLITE_NULL) {
			row->blob_len = (size_t)sqlite3_column_bytes(s, 4);
			row->blob = malloc(row->blob_len + 1);
			if (!row->blob)
				r = -ENOMEM;
			else
				memcpy(row->blob, sqlite3_column_blob(s, 4), row->blob_len);
		}
	}
	if (r >= 0 && rc != SQLITE_DONE)
		r = ponyfs_sqlite_errno(rc);
	sqlite3_finalize(s);
	if (r < 0) {
		fsck_rows_free(rows, n);
		return r;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

int fsck_each(struct fsck *f, const char *sql,
	      int (*fn)(struct fsck *f, const struct fsck_row *row))
{
	struct fsck_row *rows = NULL;
	size_t n = 0;
	int r = fsck_rows(f, sql, &rows, &n);

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = fn(f, &rows[i]);
	if (rows)
		fsck_rows_free(rows, n);
	return r;
}

/* -- paths ----------------------------------------------------------------- */

/* What ino is when no path of it reaches the root. */
static const char *pathless(struct fsck *f, uint64_t ino)
{
	sqlite3_stmt *s = NULL;
	const char *what = "missing";

	if (sqlite3_prepare_v2(f->db, "SELECT nlink, EXISTS (SELECT 1 FROM dentries WHERE ino = ?1) "
			       "FROM inodes WHERE ino = ?1", -1, &s, NULL) != SQLITE_OK)
		return "unknown";
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	if (sqlite3_step(s) == SQLITE_ROW)
		what = sqlite3_column_int64(s, 1) ? "unreachable" :
		       sqlite3_column_int64(s, 0) ? "no name" : "orphan";
	sqlite3_finalize(s);
	return what;
}

char *fsck_path(struct fsck *f, uint64_t ino)
{
	sqlite3_stmt *s = NULL;
	char *buf = NULL;
	size_t size = 0;
	FILE *out;
	int n = 0;

	if (ino == 1)
		return strdup("/");
	out = open_memstream(&buf, &size);
	if (!out)
		return NULL;
	if (f->db && sqlite3_prepare_v2(f->db, ponyfs_paths_sql, -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, (int64_t)ino);
		sqlite3_bind_int64(s, 2, 5);
		while (sqlite3_step(s) == SQLITE_ROW && n < 5) {
			if (n++ == 4) {
				fputs(", ...", out);
				break;
			}
			if (n > 1)
				fputs(", ", out);
			ponyfs_name_put(out, sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0));
		}
		sqlite3_finalize(s);
	}
	if (!n)
		fprintf(out, "inode %llu (%s)", (unsigned long long)ino,
			f->db ? pathless(f, ino) : "unknown");
	fclose(out);
	return buf;
}

char *fsck_entry_path(struct fsck *f, uint64_t parent, const void *name, size_t len)
{
	_cleanup_(freep) char *dir = fsck_path(f, parent);
	char *buf = NULL, *comma;
	size_t size = 0;
	FILE *out;

	if (!dir)
		return NULL;
	comma = strstr(dir, ", ");
	if (comma)
		*comma = 0;             /* a directory has one path; say which */
	out = open_memstream(&buf, &size);
	if (!out)
		return NULL;
	fprintf(out, "%s/", strcmp(dir, "/") ? dir : "");
	ponyfs_name_put(out, name, len);
	fclose(out);
	return buf;
}

/* -- the superblock and the regions' sizes ---------------------------------- */

int fsck_sb_read(struct bdev *meta, struct ponyfs_sb *ret)
{
	_cleanup_(bdev_freep) struct bdev *view = NULL;
	/* ponyfs_sb_read() refuses a superblock that claims more than the
	 * region holds, before saying what it claims: read it through a view
	 * as large as any claim, and compare the sizes here. */
	int r = fsck_overlay_new(meta, UINT64_MAX / 2, &view);

	if (r >= 0 && bdev_size(meta) < PONYFS_SB_SIZE)
		r = -EINVAL;
	return r < 0 ? r : ponyfs_sb_read(view, ret);
}

/* A region of need bytes in have: false (and a problem) when it is short. */
static bool size_ok(struct fsck *f, const char *region, uint64_t need, uint64_t have,
		    const char *holder)
{
	if (have >= need)
		return true;
	fsck_problem(f, "size", 0, false, "truncated: %s region needs %llu bytes, %s has %llu "
		     "(short by %llu)", region, (unsigned long long)need, holder,
		     (unsigned long long)have, (unsigned long long)(need - have));
	return false;
}

static int sb_problem(struct fsck *f, int r)
{
	if (r == -EUCLEAN)
		fsck_problem(f, "superblock", 0, false, "corrupt superblock: its checksum or its "
			     "region sizes are wrong");
	else if (r == -EPROTONOSUPPORT)
		fsck_problem(f, "superblock", 0, false, "superblock of a newer ponyfs version or "
			     "with features this pony does not know");
	else if (r == -EINVAL)
		fsck_problem(f, "superblock", 0, false, "no ponyfs superblock");
	return r;
}

/* -- the run ---------------------------------------------------------------- */

static int check_integrity(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(f->db, "PRAGMA integrity_check", -1, &s, NULL);

	if (rc != SQLITE_OK)
		return ponyfs_sqlite_errno(rc);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);

		/* A row may hold several lines, under a "*** in database main ***" title. */
		while (t && *t && strcmp(t, "ok")) {
			int len = (int)strcspn(t, "\n");

			if (strncmp(t, "***", 3))
				fsck_problem(f, "database", 0, false, "database: %.*s", len, t);
			t += len + (t[len] == '\n');
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : ponyfs_sqlite_errno(rc);
}

static int check_version(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -1;
	int rc = sqlite3_prepare_v2(f->db, "PRAGMA user_version", -1, &s, NULL);

	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	f->version = v;
	if (v >= 1 && v <= PONYFS_SCHEMA_VERSION)
		return 0;
	fsck_problem(f, "database", 0, false, "database: schema version %lld, this pony knows 1 "
		     "to %d", (long long)v, PONYFS_SCHEMA_VERSION);
	return v > PONYFS_SCHEMA_VERSION ? -EPROTONOSUPPORT : -EUCLEAN;
}

/* The database (on an overlay when nothing may be written) and every pass over it. */
static int check_database(struct fsck *f)
{
	_cleanup_(bdev_freep) struct bdev *ro = NULL, *ro_data = NULL;
	struct bdev *meta = f->meta, *data = f->data;
	int r = 0;

	/* Replaying the WAL writes the database, which may have grown into
	 * the data region (metadata chunks): both get an overlay. */
	if (!fsck_writable(f)) {
		r = fsck_overlay_new(f->meta, bdev_size(f->meta), &ro);
		meta = ro;
		if (r >= 0 && data)
			r = fsck_overlay_new(f->data, bdev_size(f->data), &ro_data);
		data = ro_data;
	}
	if (r >= 0)
		r = ponyfs_sqlite_open_sb(meta, data, &f->sb, &f->db);
	if (r < 0) {
		fsck_problem(f, "database", 0, false, "database: cannot be opened: %s",
			     r == -EUCLEAN ? "corrupt" : strerror(-r));
		return r;
	}
	r = check_version(f);
	if (r >= 0 && fsck_writable(f))
		r = fsck_exec(f, "BEGIN", 0);
	if (r >= 0)
		r = check_integrity(f);
	if (r >= 0)
		r = fsck_names(f);
	if (r >= 0)
		r = fsck_extents(f);
	if (r >= 0 && f->version >= 4)
		r = fsck_crypt(f);
	if (r >= 0)
		r = fsck_space(f);
	if (r >= 0 && fsck_writable(f))
		r = fsck_exec(f, "COMMIT", 0);
	ponyfs_sqlite_close(f->db);
	f->db = NULL;
	return r;
}

/* After the superblock and the sizes: the database, with a bit per data block. */
static int check_regions(struct fsck *f)
{
	size_t bytes = DIV_ROUND_UP(f->sb.data_blocks, 8);
	int r;

	f->used = calloc(1, bytes ? bytes : 1);
	f->free = calloc(1, bytes ? bytes : 1);
	r = f->used && f->free ? check_database(f) : -ENOMEM;
	free(f->used);
	free(f->free);
	return r;
}

int ponyfs_fsck_run(struct bdev *meta, struct bdev *data, const struct ponyfs_fsck_params *p,
		    struct ponyfs_fsck_result *res)
{
	struct fsck f = { .meta = meta, .data = data, .p = p, .res = res };
	int r;

	memset(res, 0, sizeof(*res));
	/* The copies first: a bad superblock on the copy reads come from may
	 * be the copy a repair rewrites. */
	r = fsck_mirror(&f);
	if (r >= 0)
		r = sb_problem(&f, fsck_sb_read(meta, &f.sb));
	if (r < 0)
		return r;
	if (!size_ok(&f, "metadata", f.sb.meta_bytes, bdev_size(meta), "the volume's region"))
		return -EUCLEAN;
	size_ok(&f, "data", f.sb.data_blocks * BS, bdev_size(data), "the volume's region");
	f.data_have = MIN(f.sb.data_blocks, bdev_size(data) / BS);
	return check_regions(&f);
}

int ponyfs_fsck_run_image(struct bdev *dev, const struct ponyfs_fsck_params *p,
			  struct ponyfs_fsck_result *res)
{
	_cleanup_(bdev_freep) struct bdev *meta = NULL;
	_cleanup_(bdev_freep) struct bdev *data = NULL;
	struct fsck f = { .p = p, .res = res };
	uint64_t size = bdev_size(dev);
	int r;

	memset(res, 0, sizeof(*res));
	r = sb_problem(&f, fsck_sb_read(dev, &f.sb));
	if (r < 0)
		return r;
	/* The metadata region is the image's first meta_bytes, the data
	 * region the data_blocks after it (ponyfs_mkfs_image()). */
	if (!size_ok(&f, "metadata", f.sb.meta_bytes, size, "image"))
		return -EUCLEAN;
	size_ok(&f, "data", f.sb.meta_bytes + f.sb.data_blocks * BS, size, "image");
	if (size == f.sb.meta_bytes)
		return -EUCLEAN;        /* no data region at all to check the metadata against */
	r = ponyfs_image_regions(dev, &meta, &data);
	if (r < 0)
		return r;
	f.meta = meta;
	f.data = data;
	f.data_have = MIN(f.sb.data_blocks, bdev_size(data) / BS);
	return check_regions(&f);
}

/* -- the shorthands ------------------------------------------------------------ */

struct lines {
	ponyfs_report_t report;
	void *arg;
};

static void line(void *arg, const struct ponyfs_fsck_problem *pr)
{
	struct lines *l = arg;
	char text[1536];

	if (pr->path)
		snprintf(text, sizeof(text), "%s: %s", pr->path, pr->text);
	l->report(l->arg, pr->path ? text : pr->text);
}

static int shorthand(struct bdev *meta, struct bdev *data, struct bdev *image, unsigned flags,
		     ponyfs_report_t report, void *arg)
{
	struct lines l = { report, arg };
	struct ponyfs_fsck_params p = { .flags = flags, .report = report ? line : NULL,
					.report_arg = &l };
	struct ponyfs_fsck_result res;
	int r = image ? ponyfs_fsck_run_image(image, &p, &res) : ponyfs_fsck_run(meta, data, &p, &res);

	return r < 0 ? r : (int)res.found;
}

int ponyfs_fsck(struct bdev *meta, struct bdev *data, unsigned flags, ponyfs_report_t report,
		void *arg)
{
	return shorthand(meta, data, NULL, flags, report, arg);
}

int ponyfs_fsck_image(struct bdev *dev, unsigned flags, ponyfs_report_t report, void *arg)
{
	return shorthand(NULL, NULL, dev, flags, report, arg);
}
