/*
 * fsck_blocks.c - fsck's block pass: every extent (its inode, its flags
 * and shape, overlap with the file's other extents, the end of the file,
 * the data region's bounds, no data block used twice), every written
 * block's checksum (rewritten from the volume's redundancy when a copy
 * matches), then the free-space table against the blocks the extents use.
 * Free space is fixed by building the table again from the extents: it
 * frees only what no extent uses, so no decision is needed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

static bool bit(const uint8_t *map, uint64_t b)
{
	return map[b / 8] & (1u << (b % 8));
}

static void bit_set(uint8_t *map, uint64_t b)
{
	map[b / 8] |= (uint8_t)(1u << (b % 8));
}

/* "/path (block N)": who else uses data block b; the caller frees it. */
static char *owner(struct fsck *f, uint64_t b, int64_t ino, uint64_t foff)
{
	sqlite3_stmt *s = NULL;
	char *text = NULL;

	if (sqlite3_prepare_v2(f->db, "SELECT ino, foff + (?1 - pblock) FROM extents WHERE "
			       "pblock <= ?1 AND pblock + nblocks > ?1 AND NOT (ino = ?2 AND foff = ?3) "
			       "LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(s, 1, (int64_t)b);
	sqlite3_bind_int64(s, 2, ino);
	sqlite3_bind_int64(s, 3, (int64_t)foff);
	if (sqlite3_step(s) == SQLITE_ROW) {
		_cleanup_(freep) char *path = fsck_path(f, (uint64_t)sqlite3_column_int64(s, 0));

		if (path && asprintf(&text, "%s (block %lld)", path,
				     (long long)sqlite3_column_int64(s, 1)) < 0)
			text = NULL;
	}
	sqlite3_finalize(s);
	return text;
}

/* One extent row. */
struct ext {
	int64_t ino, flags;
	uint64_t foff, n, p, size;
	const uint8_t *csums;
	size_t csums_len;
	bool regular;                   /* its inode exists and is a regular file */
	bool exists;
};

/* Marks the extent's blocks used; the first one outside or used before is a problem. */
static void mark_used(struct fsck *f, const struct ext *e)
{
	if (e->p + e->n > f->sb.data_blocks || e->p + e->n < e->p) {
		fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): "
			     "%llu blocks at data block %llu lie outside the data region (%llu blocks)",
			     (unsigned long long)e->foff, (unsigned long long)(e->foff * BS),
			     (unsigned long long)e->n, (unsigned long long)e->p,
			     (unsigned long long)f->sb.data_blocks);
		return;
	}
	for (uint64_t i = 0, told = 0; i < e->n; i++) {
		uint64_t b = e->p + i;

		if (bit(f->used, b) && !told++) {
			_cleanup_(freep) char *other = owner(f, b, e->ino, e->foff);

			fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset "
				     "%llu): data block %llu is also used by %s",
				     (unsigned long long)(e->foff + i),
				     (unsigned long long)((e->foff + i) * BS), (unsigned long long)b,
				     other ? other : "another extent");
		}
		bit_set(f->used, b);
	}
}

/* Blocks inside the data region but past the end of a truncated image. */
static void past_end(struct fsck *f, const struct ext *e)
{
	uint64_t first = MAX(e->p, f->data_have);

	if (e->p + e->n <= f->data_have || e->p + e->n > f->sb.data_blocks)
		return;
	fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): data "
		     "blocks %llu-%llu lie past the end of the truncated data region (%llu blocks "
		     "present)", (unsigned long long)(e->foff + first - e->p),
		     (unsigned long long)((e->foff + first - e->p) * BS), (unsigned long long)first,
		     (unsigned long long)(e->p + e->n - 1), (unsigned long long)f->data_have);
}

static const char *repair_says(int m, char *buf, size_t size)
{
	if (m >= 0)
		snprintf(buf, size, ": repaired member %d from the volume's redundancy", m);
	else if (m == -EOPNOTSUPP)
		snprintf(buf, size, "; no redundancy to repair it from");
	else if (m == -EBADMSG)
		snprintf(buf, size, "; no copy matches the stored checksum");
	else
		snprintf(buf, size, "; the repair failed: %s", strerror(-m));
	return buf;
}

static int check_csums(struct fsck *f, const struct ext *e)
{
	_cleanup_(freep) uint8_t *buf = malloc(BS);

	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < e->n; i++) {
		uint64_t b = e->p + i, fb = e->foff + i;
		uint32_t want, got;
		char says[96] = "";
		bool fix;
		int r, m = 0;

		if (b >= f->data_have)
			break;          /* reported with the extent */
		r = bdev_pread(f->data, buf, BS, b * BS);
		if (r < 0) {
			fsck_problem(f, "checksum", (uint64_t)e->ino, false, "block %llu (file offset "
				     "%llu): cannot be read: %s", (unsigned long long)fb,
				     (unsigned long long)(fb * BS), strerror(-r));
			continue;
		}
		want = util_get_le32(e->csums + ponyfs_csum_stride((unsigned)e->flags) * i);
		got = util_crc32c(0, buf, BS);
		if (got == want)
			continue;
		fix = fsck_may_fix(f, FSCK_FIX_SAFE);
		if (fix) {
			m = bdev_repair(f->data, buf, BS, b * BS, want);
			repair_says(m, says, sizeof(says));
		}
		fsck_problem(f, "checksum", (uint64_t)e->ino, fix && m >= 0, "block %llu (file offset "
			     "%llu): checksum mismatch (stored 0x%08x, computed 0x%08x)%s",
			     (unsigned long long)fb, (unsigned long long)(fb * BS), want, got, says);
	}
	return 0;
}

/* Problems of one extent's row; false: too malformed to look further. */
static bool check_shape(struct fsck *f, const struct ext *e, uint64_t last_end, int64_t last_ino)
{
	bool unwritten = e->flags & PONYFS_EXT_UNWRITTEN;

	if (e->flags & ~(int64_t)(PONYFS_EXT_UNWRITTEN | PONYFS_EXT_SEALED))
		fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): "
			     "extent has unknown flags %lld", (unsigned long long)e->foff,
			     (unsigned long long)(e->foff * BS), (long long)e->flags);
	if (e->n < 1 || e->csums_len != (unwritten ? 0 : ponyfs_csum_stride((unsigned)e->flags) * e->n)) {
		fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): "
			     "malformed extent (%llu blocks, %zu bytes of checksums)",
			     (unsigned long long)e->foff, (unsigned long long)(e->foff * BS),
			     (unsigned long long)e->n, e->csums_len);
		return false;
	}
	if (e->ino == last_ino && e->foff < last_end)
		fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): "
			     "extent overlaps the one before it", (unsigned long long)e->foff,
			     (unsigned long long)(e->foff * BS));
	if (!unwritten && e->foff + e->n > DIV_ROUND_UP(e->size, BS))
		fsck_problem(f, "extents", (uint64_t)e->ino, false, "block %llu (file offset %llu): "
			     "extent goes past the end of the file (%llu bytes)",
			     (unsigned long long)e->foff, (unsigned long long)(e->foff * BS),
			     (unsigned long long)e->size);
	return true;
}

/* The extents of what is no regular file, to delete once the walk is done. */
struct strays {
	struct { int64_t ino; uint64_t foff; } *v;
	size_t n, cap;
};

/* An extent of an inode that is missing or not a regular file: -y deletes it. */
static int stray(struct fsck *f, const struct ext *e, struct strays *st)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_ASK);

	if (fix && st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 16;
		void *v = realloc(st->v, cap * sizeof(*st->v));

		if (!v)
			return -ENOMEM;
		st->v = v;
		st->cap = cap;
	}
	if (fix) {
		st->v[st->n].ino = e->ino;
		st->v[st->n++].foff = e->foff;
		f->released += e->n;
	}
	fsck_problem(f, "extents", (uint64_t)e->ino, fix, "extent at block %llu (file offset %llu, "
		     "%llu blocks) of %s%s", (unsigned long long)e->foff,
		     (unsigned long long)(e->foff * BS), (unsigned long long)e->n,
		     e->exists ? "what is not a regular file" : "an inode that does not exist",
		     fix ? ": extent removed, its blocks freed" : "");
	return 0;
}

static void ext_load(sqlite3_stmt *s, struct ext *e)
{
	e->ino = sqlite3_column_int64(s, 0);
	e->foff = (uint64_t)sqlite3_column_int64(s, 1);
	e->n = (uint64_t)sqlite3_column_int64(s, 2);
	e->p = (uint64_t)sqlite3_column_int64(s, 3);
	e->csums = sqlite3_column_blob(s, 4);
	e->csums_len = (size_t)sqlite3_column_bytes(s, 4);
	e->size = (uint64_t)sqlite3_column_int64(s, 5);
	e->exists = sqlite3_column_type(s, 5) != SQLITE_NULL;
	e->regular = e->exists && S_ISREG((mode_t)sqlite3_column_int64(s, 6));
	e->flags = sqlite3_column_int64(s, 7);
}

/* The bytes of written file data the data check reads, for its progress
 * (an estimate: extents of inodes that turn out to be strays count too). */
static uint64_t data_bytes(struct fsck *f, int64_t version)
{
	sqlite3_stmt *s = NULL;
	uint64_t n = 0;
	const char *sql = version >= 2 ?
		"SELECT coalesce(sum(nblocks), 0) FROM extents WHERE (flags & ?1) = 0" :
		"SELECT coalesce(sum(nblocks), 0) FROM extents";

	if (sqlite3_prepare_v2(f->db, sql, -1, &s, NULL) == SQLITE_OK) {
		if (version >= 2)
			sqlite3_bind_int64(s, 1, PONYFS_EXT_UNWRITTEN);
		if (sqlite3_step(s) == SQLITE_ROW)
			n = (uint64_t)sqlite3_column_int64(s, 0) * BS;
	}
	sqlite3_finalize(s);
	return n;
}

/*
 * Unwritten extents (flags 1) have allocated blocks like any other, but no
 * checksums (their blocks hold nothing committed) and may lie past the end
 * of the file (fallocate with KEEP_SIZE). A version 1 database has no
 * flags column: all its extents are written.
 */
int fsck_extents(struct fsck *f)
{
	static const char *const sql[2] = {
		"SELECT e.ino, e.foff, e.nblocks, e.pblock, e.csums, i.size, i.mode, 0 FROM extents e "
		"LEFT JOIN inodes i ON i.ino = e.ino ORDER BY e.ino, e.foff",
		"SELECT e.ino, e.foff, e.nblocks, e.pblock, e.csums, i.size, i.mode, e.flags FROM extents e "
		"LEFT JOIN inodes i ON i.ino = e.ino ORDER BY e.ino, e.foff",
	};
	struct strays st = { 0 };
	sqlite3_stmt *s = NULL;
	int64_t last_ino = -1, version = 0;
	uint64_t last_end = 0;
	int rc, r = sqlite3_prepare_v2(f->db, "PRAGMA user_version", -1, &s, NULL);

	if (r == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if ((f->p->flags & PONYFS_FSCK_DATA) && f->p->progress)
		f->data_total = data_bytes(f, version);
	r = ponyfs_sqlite_errno(sqlite3_prepare_v2(f->db, sql[version >= 2], -1, &s, NULL));
	while (r >= 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct ext e;

		ext_load(s, &e);
		if (!e.regular) {
			r = stray(f, &e, &st);
			if (fsck_may_fix(f, FSCK_FIX_ASK))
				continue;       /* its blocks are free once it is gone */
		}
		if (!check_shape(f, &e, last_end, last_ino))
			continue;
		last_ino = e.ino;
		last_end = e.foff + e.n;
		mark_used(f, &e);
		past_end(f, &e);
		if (r >= 0 && (f->p->flags & PONYFS_FSCK_DATA) && e.regular &&
		    !(e.flags & PONYFS_EXT_UNWRITTEN)) {
			r = check_csums(f, &e);
			f->data_done += e.n * BS;
			if (r >= 0 && f->p->progress &&
			    f->p->progress(f->data_done, f->data_total, f->p->progress_arg))
				r = -ECANCELED;
		}
	}
	if (r >= 0 && rc != SQLITE_DONE)
		r = ponyfs_sqlite_errno(rc);
	sqlite3_finalize(s);
	for (size_t i = 0; r >= 0 && i < st.n; i++)
		r = fsck_exec(f, "DELETE FROM extents WHERE ino = ?1 AND foff = ?2", 2, st.v[i].ino,
			      (int64_t)st.v[i].foff);
	free(st.v);
	return r;
}

/* -- free space ------------------------------------------------------------- */

/* The free table again: a run for every stretch of blocks no extent uses. */
static int rebuild_free(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	int r = fsck_exec(f, "DELETE FROM free", 0);

	if (r >= 0)
		r = ponyfs_sqlite_errno(sqlite3_prepare_v2(f->db, "INSERT INTO free (pblock, nblocks) "
							   "VALUES (?1, ?2)", -1, &s, NULL));
	for (uint64_t b = 0; r >= 0 && b < f->sb.data_blocks;) {
		uint64_t e = b;

		if (bit(f->used, b)) {
			b++;
			continue;
		}
		while (e < f->sb.data_blocks && !bit(f->used, e))
			e++;
		sqlite3_bind_int64(s, 1, (int64_t)b);
		sqlite3_bind_int64(s, 2, (int64_t)(e - b));
		r = fsck_step_done(s);
		b = e;
	}
	sqlite3_finalize(s);
	return r;
}

/* One free run against the blocks used and the runs before it; true: it is wrong. */
static bool free_run(struct fsck *f, uint64_t p, uint64_t n, bool fix)
{
	const char *says = fix ? ": free space rebuilt from the extents" : "";
	uint64_t used = 0, twice = 0, first_used = 0;

	if (n < 1 || p + n > f->sb.data_blocks || p + n < p) {
		fsck_problem(f, "space", 0, fix, "free space: run of %llu blocks at data block %llu "
			     "lies outside the data region (%llu blocks)%s", (unsigned long long)n,
			     (unsigned long long)p, (unsigned long long)f->sb.data_blocks, says);
		return true;
	}
	for (uint64_t b = p; b < p + n; b++) {
		if (bit(f->used, b) && !used++)
			first_used = b;
		twice += bit(f->free, b);
		bit_set(f->free, b);
	}
	if (used) {
		_cleanup_(freep) char *who = owner(f, first_used, -1, 0);

		fsck_problem(f, "space", 0, fix, "free space: data block %llu is free but used by %s "
			     "(%llu blocks of the run at %llu are used)%s",
			     (unsigned long long)first_used, who ? who : "a file",
			     (unsigned long long)used, (unsigned long long)p, says);
	}
	if (twice)
		fsck_problem(f, "space", 0, fix, "free space: the run at data block %llu overlaps "
			     "another by %llu blocks%s", (unsigned long long)p,
			     (unsigned long long)twice, says);
	return used || twice;
}

/* Version 3: blocks the database or its WAL grew into (metadata chunks) are used. */
static int mark_chunks(struct fsck *f)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(f->db, "SELECT pblock, nblocks, seq FROM meta_chunks", -1, &s,
			       NULL) != SQLITE_OK)
		return 0;       /* an older schema: no chunks */
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct ext e = { .ino = 0, .foff = 0, .p = (uint64_t)sqlite3_column_int64(s, 0),
				 .n = (uint64_t)sqlite3_column_int64(s, 1) };

		mark_used(f, &e);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : ponyfs_sqlite_errno(rc);
}

int fsck_space(struct fsck *f)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_SAFE), wrong = false;
	uint64_t leaked = 0;
	sqlite3_stmt *s = NULL;
	int rc, r = mark_chunks(f);

	if (r >= 0)
		r = ponyfs_sqlite_errno(sqlite3_prepare_v2(f->db,
			"SELECT pblock, nblocks FROM free ORDER BY pblock", -1, &s, NULL));

	while (r >= 0 && (rc = sqlite3_step(s)) == SQLITE_ROW)
		wrong |= free_run(f, (uint64_t)sqlite3_column_int64(s, 0),
				  (uint64_t)sqlite3_column_int64(s, 1), fix);
	if (r >= 0 && rc != SQLITE_DONE)
		r = ponyfs_sqlite_errno(rc);
	sqlite3_finalize(s);
	for (uint64_t b = 0; r >= 0 && b < f->sb.data_blocks; b++)
		leaked += !bit(f->used, b) && !bit(f->free, b);
	/* Blocks this run's own repairs let go of are no problem of the disk's. */
	if (r >= 0 && leaked > f->released)
		fsck_problem(f, "space", 0, fix, "%llu data blocks are neither used nor free%s",
			     (unsigned long long)(leaked - f->released),
			     fix ? ": added to free space" : "");
	if (r >= 0 && fix && (wrong || leaked))
		r = rebuild_free(f);
	return r;
}
