/*
 * space.c - metadata space, reserved before a change is acknowledged. The
 * database file and the WAL live in extents of fixed size (chunks.c); when
 * SQLite runs out of room in the middle of a transaction it rolls the whole
 * transaction back, so every acknowledged change in it would vanish. So
 * each change says first what it may cost (struct ponyfs_cost: cells
 * changed, overflow pages), turned here into a bound on the pages it can
 * dirty (WAL frames) and add (database pages), with the b-trees' depth.
 * When the bound does not fit what is left: measure what is really used
 * (PRAGMA page_count and freelist_count; the WAL's end after flushing
 * SQLite's dirty pages into it), commit and checkpoint (which recycles
 * the WAL), grow the short file by a chunk of free data blocks, and if
 * it still does not fit, refuse the change with ENOSPC before it changes
 * anything. Reservations of the open transaction go at its commit; those
 * of dirty files (deferred: what their writeback will write) stay until
 * the writeback, so a write(2) that was acknowledged can always be
 * committed. An emergency reserve stays out of every reservation, so a
 * commit does not fail even when an estimate was low; half of it is for
 * changes that free space (unlink, rmdir), which keep working on a full
 * filesystem. The costs are per change, not per SQL statement: they hold
 * whenever the SQL runs.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "internal.h"

#define FREE_CELL 16u           /* a free-table cell, bytes, with its slot */
#define OVERFLOW_PAGE (BS - 4)  /* payload of an overflow page */
/* A value up to this is always in its cell (an index b-tree's smallest local payload). */
#define LOCAL_MAX 1000u
/* A name's share of the database: an inode row, its entry, the entry's two
 * index cells, at the b-trees' usual fill (docs/ponyfs-format.md). */
#define NAME_BYTES 256u

enum { SHORT_DB = 1, SHORT_WAL = 2 };

void ponyfs_cost_value(struct ponyfs_cost *c, uint64_t len)
{
	c->rows++;
	if (len > LOCAL_MAX)
		c->big += DIV_ROUND_UP(len, OVERFLOW_PAGE);
}

/* 1 + ceil(log8(pages)), + 1: a b-tree of any of the database's tables,
 * interior pages a third full of the longest keys (255-byte names), is no
 * deeper. */
static unsigned depth_bound(uint64_t pages)
{
	unsigned d = 2;

	for (uint64_t n = 8; n < pages && d < 20; n *= 8)
		d++;
	return d;
}

/*
 * Pages c may cost. A cell changed somewhere splits at most every level
 * of its b-tree: three siblings and a new page each, and a new root (WAL:
 * 4 per level + 2); each split adds at most one page a level (database:
 * depth + 1). Cells side by side fill pages at least a third full and
 * split one path. The free table's cells can land anywhere, but never
 * touch more pages than the table has. Page 1 and a free-list trunk
 * page change with any transaction.
 */
static void cost_pages(const struct ponyfs *fs, const struct ponyfs_cost *c, uint64_t *ret_wal,
		       uint64_t *ret_db)
{
	const struct ponyfs_space *sp = &fs->space;
	uint64_t rw = 4 * sp->depth + 2, rd = sp->depth + 1;
	uint64_t run = c->run_bytes ? DIV_ROUND_UP(3 * c->run_bytes, BS) : 0;
	uint64_t tree = DIV_ROUND_UP(3 * (sp->free_runs + c->free_cells) * FREE_CELL, BS) + sp->depth;
	uint64_t fw = MIN(c->free_cells * rw, tree), fd = MIN(c->free_cells * rd, tree);

	*ret_wal = c->rows * rw + (run ? run + rw : 0) + fw + c->big + 2;
	*ret_db = c->rows * rd + (run ? run + rd : 0) + fd + c->big;
}

/* What a growth's own transaction needs (a free-table cell, a meta_chunks row). */
static void grow_pages(const struct ponyfs *fs, uint64_t *ret_wal, uint64_t *ret_db)
{
	struct ponyfs_cost c = { .rows = 2 };

	cost_pages(fs, &c, ret_wal, ret_db);
}

/* Which file is short when w frames and d pages more are reserved. */
static unsigned space_short(const struct ponyfs *fs, uint64_t w, uint64_t d, bool frees)
{
	const struct ponyfs_space *sp = &fs->space;
	uint64_t ed = frees ? sp->emerg_db / 2 : sp->emerg_db;
	uint64_t ew = frees ? sp->emerg_wal / 2 : sp->emerg_wal;
	uint64_t gw, gd, db, txn, pages, wal;

	grow_pages(fs, &gw, &gd);
	db = sp->db_used + sp->db_pending + sp->db_deferred + d + ed + gd;
	/* A transaction writes a page once (SQLite rewrites a frame it wrote
	 * itself in place), so no more frames than the database has pages,
	 * and one more for the commit. */
	txn = sp->wal_frames - sp->wal_committed + sp->wal_pending + sp->wal_deferred + w;
	pages = sp->db_count + sp->db_pending + sp->db_deferred + d + 1;
	wal = sp->wal_committed + MIN(txn, pages) + ew + gw;
	return (db > sp->db_room ? SHORT_DB : 0) | (wal > sp->wal_room ? SHORT_WAL : 0);
}

/* Committed use that reaches into the emergency reserve means an estimate
 * was low (or a change that frees space took its half): logged once. */
static void space_check_emergency(struct ponyfs *fs)
{
	struct ponyfs_space *sp = &fs->space;
	bool in = sp->db_used + sp->emerg_db > sp->db_room ||
		  sp->wal_committed + sp->emerg_wal > sp->wal_room;

	if (in && !sp->emerg_logged && !fs->in_txn)
		ponyfs_log(fs, LOG_WARNING, "metadata emergency reserve in use: database %llu of "
			   "%llu pages, WAL %llu of %llu frames",
			   (unsigned long long)sp->db_used, (unsigned long long)sp->db_room,
			   (unsigned long long)sp->wal_committed, (unsigned long long)sp->wal_room);
	sp->emerg_logged = in;
}

/*
 * What the files use now. In a transaction, SQLite's dirty pages go to the
 * WAL first (sqlite3_db_cacheflush(): they are written as frames that a
 * later change of the page rewrites in place), so the WAL's end says it.
 */
static int space_measure(struct ponyfs *fs, bool wal)
{
	struct ponyfs_space *sp = &fs->space;
	int64_t count = 0, free_pages = 0;
	int r = 0;

	if (wal && fs->in_txn) {
		r = ponyfs_sql_err(fs, sqlite3_db_cacheflush(fs->db));
		/* SQLite's pager cannot go on with this transaction now. */
		if (r < 0)
			ponyfs_fail_locked(fs, r, "writing the open transaction to the WAL failed");
	}
	if (r >= 0)
		r = ponyfs_sql_int(fs, &count, "PRAGMA page_count", 0);
	if (r >= 0)
		r = ponyfs_sql_int(fs, &free_pages, "PRAGMA freelist_count", 0);
	if (r < 0)
		return r;
	sp->db_count = (uint64_t)count;
	sp->db_used = (uint64_t)(count - free_pages);
	sp->db_pending = 0;
	sp->depth = depth_bound(sp->db_count);
	sp->db_room = ponyfs_sqlite_room(fs->db, PONYFS_SQLITE_DB) / BS;
	sp->wal_room = ponyfs_sqlite_wal_frames(fs->db, true);
	sp->emerg_db = MAX(32u, sp->db_room / 256);
	sp->emerg_wal = MAX(32u, sp->wal_room / 256);
	if (wal || !fs->in_txn) {
		sp->wal_frames = ponyfs_sqlite_wal_frames(fs->db, false);
		sp->wal_pending = 0;
		if (!fs->in_txn)
			sp->wal_committed = sp->wal_frames;
	}
	sp->commits_seen = fs->stats.commits;
	sp->stale = false;
	fs->stats.space_measures++;
	space_check_emergency(fs);
	return 0;
}

void ponyfs_space_init_locked(struct ponyfs *fs)
{
	fs->space.stale = true;
	space_measure(fs, false);
}

/* Makes room for w frames and d pages, or says why not (see the top). */
static int space_fit(struct ponyfs *fs, uint64_t w, uint64_t d, bool frees, int stage)
{
	struct ponyfs_space *sp = &fs->space;
	unsigned shrt = 0;
	int r = 0;

	if (fs->broken)
		return fs->broken;
	if (fs->read_only)
		return -EROFS;
	if (sp->stale || sp->commits_seen != fs->stats.commits)
		r = space_measure(fs, false);
	if (r < 0 || !space_short(fs, w, d, frees))
		return r;
	r = space_measure(fs, true);
	if (r < 0 || !(shrt = space_short(fs, w, d, frees)) || stage < SPACE_COMMIT)
		goto out;
	if (fs->in_txn) {
		fs->stats.space_commits++;
		r = ponyfs_commit_locked(fs);
		if (r >= 0)
			r = space_measure(fs, true);
		if (r < 0 || !(shrt = space_short(fs, w, d, frees)))
			goto out;
	}
	if (shrt & SHORT_WAL) {
		r = ponyfs_checkpoint_locked(fs);
		if (r >= 0)
			r = space_measure(fs, true);
		if (r < 0 || !(shrt = space_short(fs, w, d, frees)))
			goto out;
	}
	while (stage >= SPACE_GROW && shrt) {
		r = ponyfs_chunk_grow_locked(fs, shrt & SHORT_DB ? PONYFS_SQLITE_DB : PONYFS_SQLITE_WAL);
		if (r >= 0)
			r = space_measure(fs, true);
		if (r < 0)
			break;
		shrt = space_short(fs, w, d, frees);
	}
out:
	if (r >= 0 && shrt)
		r = -ENOSPC;
	if (r == -ENOSPC && stage >= SPACE_GROW && !sp->full_logged) {
		sp->full_logged = true;
		ponyfs_log(fs, LOG_WARNING, "metadata space full: a change was refused (ENOSPC): "
			   "database %llu of %llu pages, WAL %llu of %llu frames, %u chunks",
			   (unsigned long long)(sp->db_used + sp->db_deferred),
			   (unsigned long long)sp->db_room, (unsigned long long)sp->wal_frames,
			   (unsigned long long)sp->wal_room, fs->chunks.n);
	}
	if (r >= 0)
		sp->full_logged = false;
	return r;
}

int ponyfs_space_reserve_locked(struct ponyfs *fs, const struct ponyfs_cost *c, int stage)
{
	uint64_t w, d;
	int r;

	cost_pages(fs, c, &w, &d);
	r = space_fit(fs, w, d, c->frees, stage);
	if (r < 0)
		return r;
	/* Measuring may have changed the depth: the bound is taken again. */
	cost_pages(fs, c, &w, &d);
	fs->space.wal_pending += w;
	fs->space.db_pending += d;
	return 0;
}

int ponyfs_space_defer_locked(struct ponyfs *fs, struct ponyfs_inode *in,
			      const struct ponyfs_cost *c, int stage)
{
	struct ponyfs_space *sp = &fs->space;
	uint64_t w, d;
	int r;

	cost_pages(fs, c, &w, &d);
	if (w > in->res_wal || d > in->res_db) {
		r = space_fit(fs, w > in->res_wal ? w - in->res_wal : 0,
			      d > in->res_db ? d - in->res_db : 0, c->frees, stage);
		if (r < 0)
			return r;
	}
	sp->wal_deferred += w - in->res_wal;
	sp->db_deferred += d - in->res_db;
	in->res_wal = w;
	in->res_db = d;
	return 0;
}

void ponyfs_space_release_locked(struct ponyfs *fs, struct ponyfs_inode *in, bool written)
{
	struct ponyfs_space *sp = &fs->space;

	sp->wal_deferred -= in->res_wal;
	sp->db_deferred -= in->res_db;
	if (written) {          /* now the open transaction's, until its commit */
		sp->wal_pending += in->res_wal;
		sp->db_pending += in->res_db;
	}
	in->res_wal = in->res_db = 0;
}

/*
 * statfs: the data region and the database's fixed range are the pool
 * (f_blocks; the WAL's fixed range, like the overwrite reserve, is
 * overhead). The database's pages in use are used, its room left is free
 * (f_bfree), as are free data blocks; f_bavail is what file data can take
 * (the free data blocks), as ext4's leaves out what only root may use.
 * Inodes: those there are, and as many more as the room left (the
 * database's, and free data blocks metadata can grow into) holds names of
 * NAME_BYTES each.
 */
int ponyfs_statfs_locked(struct ponyfs *fs, struct statvfs *ret)
{
	struct ponyfs_space *sp = &fs->space;
	uint64_t avail = fs->free_blocks + fs->pending_free_blocks;
	uint64_t data_free = avail - MIN(avail, fs->reserved + fs->ow_reserve);
	bool grows = (fs->sb.flags & PONYFS_FEAT_META_CHUNKS) && fs->chunks.n < PONYFS_CHUNKS_MAX;
	uint64_t db_free, room;
	int64_t n;
	int r = space_measure(fs, false);   /* the database's pages: two pragmas, no I/O */

	/* Counted once (a walk of the inodes), then kept by create and delete. */
	if (r >= 0 && fs->ninodes == UINT64_MAX) {
		r = ponyfs_sql_int(fs, &n, "SELECT count(*) FROM inodes", 0);
		fs->ninodes = r >= 0 ? (uint64_t)n : UINT64_MAX;
	}
	if (r < 0)
		return r;
	db_free = sp->db_room - MIN(sp->db_room, sp->db_used);
	room = (db_free + (grows ? data_free : 0)) * (BS / NAME_BYTES);
	memset(ret, 0, sizeof(*ret));
	ret->f_bsize = BS;
	ret->f_frsize = BS;
	ret->f_blocks = fs->sb.data_blocks - fs->ow_reserve + fs->sb.db_bytes / BS;
	ret->f_bfree = data_free + db_free;
	ret->f_bavail = data_free;      /* what file data can take; df's "Avail" */
	ret->f_files = fs->ninodes + room;
	ret->f_ffree = room;
	ret->f_favail = ret->f_ffree;
	ret->f_namemax = NAME_MAX;
	ret->f_fsid = util_get_le64(fs->sb.uuid);
	ret->f_flag = fs->read_only ? ST_RDONLY : 0;
	return 0;
}
