/*
 * fsck.c - checks an unmounted ponyfs: the superblock, SQLite's own
 * integrity check, then what SQLite cannot know: every inode reachable
 * from the root, link counts, entries pointing at inodes that exist,
 * extents inside the data region, not overlapping each other or free
 * space, every block accounted for, and (optionally) every block's
 * checksum. Most of it is SQL over the schema; the block map is a bitmap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct fsck {
	sqlite3 *db;
	struct bdev *data;
	struct ponyfs_sb sb;
	unsigned flags;
	ponyfs_report_t report;
	void *arg;
	int problems;
	uint8_t *map;                   /* a bit per data block: referenced or free */
};

static void problem(struct fsck *f, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	f->problems++;
	if (!f->report)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	f->report(f->arg, text);
}

/* Each row of sql is a problem, described by the row's int64 columns and fmt. */
static int check_rows(struct fsck *f, const char *sql, const char *fmt)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(f->db, sql, -1, &s, NULL);

	if (rc != SQLITE_OK)
		return ponyfs_sqlite_errno(rc);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		problem(f, fmt, (long long)sqlite3_column_int64(s, 0),
			(long long)sqlite3_column_int64(s, 1), (long long)sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : ponyfs_sqlite_errno(rc);
}

static int repair(struct fsck *f, const char *sql)
{
	if (!(f->flags & PONYFS_FSCK_REPAIR))
		return 0;
	return ponyfs_sqlite_errno(sqlite3_exec(f->db, sql, NULL, NULL, NULL));
}

static int check_integrity(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(f->db, "PRAGMA integrity_check", -1, &s, NULL);

	if (rc != SQLITE_OK)
		return ponyfs_sqlite_errno(rc);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);

		if (t && strcmp(t, "ok"))
			problem(f, "database: %s", t);
	}
	sqlite3_finalize(s);
	return 0;
}

#define IS_DIR "((mode & 61440) = 16384)"

static int check_namespace(struct fsck *f)
{
	int r = check_rows(f, "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM inodes WHERE ino = 1 AND "
			   IS_DIR ")", "root directory missing%.0lld%.0lld%.0lld");
	if (r >= 0)
		r = check_rows(f, "SELECT parent, ino FROM dentries WHERE ino NOT IN (SELECT ino FROM inodes)",
			       "entry in directory %lld names missing inode %lld%.0lld");
	if (r >= 0)
		r = repair(f, "DELETE FROM dentries WHERE ino NOT IN (SELECT ino FROM inodes)");
	if (r >= 0)
		r = check_rows(f, "SELECT d.parent, d.ino FROM dentries d LEFT JOIN inodes p ON "
			       "p.ino = d.parent WHERE p.ino IS NULL OR (p.mode & 61440) != 16384",
			       "entry in %lld (not a directory) names %lld%.0lld");
	if (r >= 0)
		r = check_rows(f, "SELECT parent, ino FROM dentries WHERE length(name) < 1 OR "
			       "length(name) > 255 OR instr(name, X'2F') OR instr(name, X'00')",
			       "bad name in directory %lld for inode %lld%.0lld");
	if (r >= 0)
		r = check_rows(f, "WITH RECURSIVE r(ino) AS (SELECT 1 UNION SELECT d.ino FROM "
			       "dentries d JOIN r ON d.parent = r.ino) SELECT ino FROM inodes "
			       "WHERE nlink > 0 AND ino NOT IN r",
			       "inode %lld is not reachable from the root%.0lld%.0lld");
	if (r >= 0)
		r = check_rows(f, "SELECT ino, nlink, (SELECT count(*) FROM dentries d WHERE d.ino = i.ino) "
			       "AS n FROM inodes i WHERE NOT " IS_DIR " AND nlink > 0 AND nlink != n",
			       "inode %lld has nlink %lld but %lld names");
	if (r >= 0)
		r = repair(f, "UPDATE inodes SET nlink = (SELECT count(*) FROM dentries d WHERE "
			   "d.ino = inodes.ino) WHERE NOT " IS_DIR " AND nlink > 0");
	if (r >= 0)
		r = check_rows(f, "SELECT ino, nlink, 2 + (SELECT count(*) FROM dentries d JOIN inodes c "
			       "ON c.ino = d.ino WHERE d.parent = i.ino AND (c.mode & 61440) = 16384) AS n "
			       "FROM inodes i WHERE " IS_DIR " AND nlink > 0 AND nlink != n",
			       "directory %lld has nlink %lld, should be %lld");
	if (r >= 0)
		r = check_rows(f, "SELECT ino, count(*) FROM dentries d WHERE EXISTS (SELECT 1 FROM "
			       "inodes c WHERE c.ino = d.ino AND (c.mode & 61440) = 16384) "
			       "GROUP BY ino HAVING count(*) > 1",
			       "directory %lld has %lld names%.0lld");
	if (r >= 0)
		r = check_rows(f, "SELECT parent, count(*) FROM dentries GROUP BY parent HAVING "
			       "max(cookie) >= (SELECT next_cookie FROM inodes WHERE ino = parent)",
			       "directory %lld has cookies past its counter%.0lld%.0lld");
	return r;
}

/* Marks [p, p+n) in the block map; a block marked twice is a problem. */
static void map_mark(struct fsck *f, uint64_t p, uint64_t n, const char *what, int64_t who)
{
	if (p + n > f->sb.data_blocks || p + n < p) {
		problem(f, "%s %lld: blocks %llu+%llu outside the data region", what, (long long)who,
			(unsigned long long)p, (unsigned long long)n);
		return;
	}
	for (uint64_t b = p; b < p + n; b++) {
		if (f->map[b / 8] & (1u << (b % 8))) {
			problem(f, "%s %lld: block %llu is used twice", what, (long long)who,
				(unsigned long long)b);
			return;
		}
		f->map[b / 8] |= (uint8_t)(1u << (b % 8));
	}
}

static int check_csums(struct fsck *f, int64_t ino, uint64_t foff, uint64_t p, uint64_t n,
		       const uint8_t *csums)
{
	_cleanup_(freep) uint8_t *buf = malloc(BS);

	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		int r = bdev_pread(f->data, buf, BS, (p + i) * BS);

		if (r < 0)
			return r;
		uint32_t want = util_get_le32(csums + 4 * i);
		int m;

		if (util_crc32c(0, buf, BS) == want)
			continue;
		m = f->flags & PONYFS_FSCK_REPAIR ? ponyfs_region_repair(f->data, buf, (p + i) * BS, want)
						 : -EOPNOTSUPP;
		if (m >= 0)
			problem(f, "inode %lld: block %llu failed its checksum: repaired member %d "
				"from the volume's redundancy", (long long)ino,
				(unsigned long long)(foff + i), m);
		else
			problem(f, "inode %lld: block %llu fails its checksum", (long long)ino,
				(unsigned long long)(foff + i));
	}
	return 0;
}

/*
 * Unwritten extents (flags 1) have allocated blocks like any other, but no
 * checksums (their blocks hold nothing committed) and may lie past the end
 * of the file (fallocate with KEEP_SIZE). A version 1 database has no
 * flags column: all its extents are written.
 */
static int check_extents(struct fsck *f)
{
	static const char *const sql[2] = {
		"SELECT e.ino, e.foff, e.nblocks, e.pblock, e.csums, i.size, i.mode, 0 FROM extents e "
		"LEFT JOIN inodes i ON i.ino = e.ino ORDER BY e.ino, e.foff",
		"SELECT e.ino, e.foff, e.nblocks, e.pblock, e.csums, i.size, i.mode, e.flags FROM extents e "
		"LEFT JOIN inodes i ON i.ino = e.ino ORDER BY e.ino, e.foff",
	};
	sqlite3_stmt *s = NULL;
	int64_t last_ino = -1, version = 0;
	uint64_t last_end = 0;
	int r = sqlite3_prepare_v2(f->db, "PRAGMA user_version", -1, &s, NULL);

	if (r == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	r = ponyfs_sqlite_errno(sqlite3_prepare_v2(f->db, sql[version >= 2], -1, &s, NULL));

	while (r >= 0 && sqlite3_step(s) == SQLITE_ROW) {
		int64_t ino = sqlite3_column_int64(s, 0);
		uint64_t foff = (uint64_t)sqlite3_column_int64(s, 1);
		uint64_t n = (uint64_t)sqlite3_column_int64(s, 2);
		uint64_t p = (uint64_t)sqlite3_column_int64(s, 3);
		uint64_t size = (uint64_t)sqlite3_column_int64(s, 5);
		int64_t flags = sqlite3_column_int64(s, 7);
		bool unwritten = flags & PONYFS_EXT_UNWRITTEN;

		if (sqlite3_column_type(s, 5) == SQLITE_NULL || !S_ISREG((mode_t)sqlite3_column_int64(s, 6)))
			problem(f, "extent of %lld, which is not a regular file", (long long)ino);
		if (flags & ~(int64_t)PONYFS_EXT_UNWRITTEN)
			problem(f, "inode %lld: extent at block %llu has unknown flags %lld", (long long)ino,
				(unsigned long long)foff, (long long)flags);
		if (n < 1 || (uint64_t)sqlite3_column_bytes(s, 4) != (unwritten ? 0 : 4 * n)) {
			problem(f, "inode %lld: malformed extent at block %llu", (long long)ino,
				(unsigned long long)foff);
			continue;
		}
		if (ino == last_ino && foff < last_end)
			problem(f, "inode %lld: extents overlap at block %llu", (long long)ino,
				(unsigned long long)foff);
		if (!unwritten && foff + n > DIV_ROUND_UP(size, BS))
			problem(f, "inode %lld: extent at block %llu past the end of the file",
				(long long)ino, (unsigned long long)foff);
		last_ino = ino;
		last_end = foff + n;
		map_mark(f, p, n, "inode", ino);
		if ((f->flags & PONYFS_FSCK_DATA) && !unwritten)
			r = check_csums(f, ino, foff, p, n, sqlite3_column_blob(s, 4));
	}
	sqlite3_finalize(s);
	return r;
}

static int check_space(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	uint64_t leaked = 0;
	int r = ponyfs_sqlite_errno(sqlite3_prepare_v2(f->db,
		"SELECT pblock, nblocks FROM free ORDER BY pblock", -1, &s, NULL));

	while (r >= 0 && sqlite3_step(s) == SQLITE_ROW)
		map_mark(f, (uint64_t)sqlite3_column_int64(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
			 "free run at", sqlite3_column_int64(s, 0));
	sqlite3_finalize(s);
	/* Version 3: blocks the database or its WAL grew into (metadata chunks). */
	if (r >= 0 && sqlite3_prepare_v2(f->db, "SELECT pblock, nblocks, seq FROM meta_chunks",
					 -1, &s, NULL) == SQLITE_OK) {
		while (sqlite3_step(s) == SQLITE_ROW)
			map_mark(f, (uint64_t)sqlite3_column_int64(s, 0),
				 (uint64_t)sqlite3_column_int64(s, 1), "metadata chunk",
				 sqlite3_column_int64(s, 2));
		sqlite3_finalize(s);
	}
	for (uint64_t b = 0; r >= 0 && b < f->sb.data_blocks; b++) {
		if (f->map[b / 8] & (1u << (b % 8)))
			continue;
		leaked++;
		if (f->flags & PONYFS_FSCK_REPAIR) {
			char sql[96];

			snprintf(sql, sizeof(sql), "INSERT INTO free VALUES (%llu, 1)", (unsigned long long)b);
			r = repair(f, sql);
		}
	}
	if (leaked)
		problem(f, "%llu data blocks are neither used nor free", (unsigned long long)leaked);
	return r;
}

int ponyfs_fsck(struct bdev *meta, struct bdev *data, unsigned flags, ponyfs_report_t report,
		void *arg)
{
	struct fsck f = { .data = data, .flags = flags, .report = report, .arg = arg };
	int r = ponyfs_sb_read(meta, &f.sb);

	if (r < 0)
		return r;
	if (f.sb.data_blocks > bdev_size(data) / BS)
		return -EINVAL;
	f.map = calloc(1, DIV_ROUND_UP(f.sb.data_blocks, 8));
	if (!f.map)
		return -ENOMEM;
	r = ponyfs_sqlite_open_sb(meta, data, &f.sb, &f.db);
	if (r >= 0)
		r = repair(&f, "BEGIN");
	if (r >= 0)
		r = check_integrity(&f);
	if (r >= 0)
		r = check_namespace(&f);
	if (r >= 0)
		r = check_extents(&f);
	if (r >= 0)
		r = check_space(&f);
	if (r >= 0)
		r = repair(&f, "COMMIT");
	ponyfs_sqlite_close(f.db);
	free(f.map);
	return r < 0 ? r : f.problems;
}

int ponyfs_fsck_image(struct bdev *dev, unsigned flags, ponyfs_report_t report, void *arg)
{
	_cleanup_(bdev_freep) struct bdev *meta = NULL;
	_cleanup_(bdev_freep) struct bdev *data = NULL;
	int r = ponyfs_image_regions(dev, &meta, &data);

	return r < 0 ? r : ponyfs_fsck(meta, data, flags, report, arg);
}
