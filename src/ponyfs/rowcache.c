/*
 * rowcache.c - the inodes table's rows, cached in memory so that a
 * getattr, a setattr's look at the current attributes, a write's set-ID
 * check and a name's parent check run no SQL (an untar asks for one
 * file's row five or six times between its create and its release).
 *
 * A row is cached as the database holds it (the open transaction's view);
 * what a cached inode holds on top (a size or times not written back yet)
 * is laid over it when it is read, as before. Direct-mapped slots, so the
 * memory is fixed (PONYFS_ROW_SLOTS).
 *
 * Invalidation does not depend on every caller remembering it: SQLite's
 * update hook drops the slot of every inodes row an INSERT, UPDATE or
 * DELETE touches, whichever statement did it, and its rollback hook
 * empties the cache (a rolled-back transaction takes its rows' changes
 * with it). The callers that know the row a change leaves (create,
 * setattr) store it again after the statement. The block count comes
 * from extents, a WITHOUT ROWID table the update hook never reports: it is
 * valid while fs->rows_epoch is what it was when read, and every change
 * of an extents row (ST_EXT_INS and ST_EXT_DEL, the only statements that
 * change that table on a mounted filesystem) moves the epoch. A
 * directory's count, once read, stays valid: a directory has no extents
 * (no write, fallocate or truncation reaches one, ops.c), so no epoch can
 * move it, and an rm -rf, whose every unlink frees a file's extents, would
 * otherwise make each GETATTR of the directory walk its extents again.
 *
 * A directory's row also survives a name added to or removed from it:
 * the statement that moves its times and link count drops it (the update
 * hook), and ponyfs_row_touched() stores it back with the same change
 * applied. The kernel asks for the directory's attributes after every
 * such change (its permission check before the next unlink or create):
 * without this, one SELECT per file of an untar or rm -rf.
 *
 * A row made by a create also knows that its inode has no xattrs (inode
 * numbers are never used twice, AUTOINCREMENT): the kernel asks a new
 * file for security.capability at its writes and setattrs, and a create
 * asks the parent for its default ACL, one SELECT each that finds nothing.
 * The xattrs table is WITHOUT ROWID, which the update hook never reports;
 * its rows are added by one statement only, ponyfs_xattr_row_put(), which
 * forgets the flag (deletes cannot make it wrong).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

static struct ponyfs_row *slot(struct ponyfs *fs, uint64_t ino)
{
	return &fs->rows[(ino * 0x9e3779b97f4a7c15ull >> 40) % PONYFS_ROW_SLOTS];
}

static void update_hook(void *arg, int op, const char *dbname, const char *table,
			sqlite3_int64 rowid)
{
	struct ponyfs *fs = arg;
	struct ponyfs_row *r;

	(void)op;
	(void)dbname;
	if (strcmp(table, "inodes"))
		return;
	r = slot(fs, (uint64_t)rowid);
	if (r->ino == (uint64_t)rowid)
		r->ino = 0;
}

static void rollback_hook(void *arg)
{
	ponyfs_rows_clear(arg);
}

int ponyfs_rows_init(struct ponyfs *fs)
{
	fs->rows = calloc(PONYFS_ROW_SLOTS, sizeof(*fs->rows));
	if (!fs->rows)
		return -ENOMEM;
	fs->rows_epoch = 1;
	sqlite3_update_hook(fs->db, update_hook, fs);
	sqlite3_rollback_hook(fs->db, rollback_hook, fs);
	return 0;
}

void ponyfs_rows_done(struct ponyfs *fs)
{
	if (fs->db) {
		sqlite3_update_hook(fs->db, NULL, NULL);
		sqlite3_rollback_hook(fs->db, NULL, NULL);
	}
	free(fs->rows);
	fs->rows = NULL;
}

void ponyfs_rows_clear(struct ponyfs *fs)
{
	if (fs->rows)
		memset(fs->rows, 0, PONYFS_ROW_SLOTS * sizeof(*fs->rows));
	fs->rows_epoch++;
}

void ponyfs_rows_extents_changed(struct ponyfs *fs)
{
	fs->rows_epoch++;
}

const struct ponyfs_row *ponyfs_row_cached(struct ponyfs *fs, uint64_t ino, bool blocks)
{
	struct ponyfs_row *r;

	if (!fs->rows)
		return NULL;
	r = slot(fs, ino);
	if (r->ino != ino)
		return NULL;
	if (blocks && r->blocks_epoch != fs->rows_epoch && !(S_ISDIR(r->mode) && r->blocks_epoch))
		return NULL;
	return r;
}

struct ponyfs_row ponyfs_row_before(struct ponyfs *fs, uint64_t ino)
{
	const struct ponyfs_row *c = ponyfs_row_cached(fs, ino, false);

	return c ? *c : (struct ponyfs_row){ 0 };
}

void ponyfs_row_touched(struct ponyfs *fs, const struct ponyfs_row *before, bool times,
			int64_t now, int nlink_delta)
{
	struct ponyfs_row row = *before;

	if (!row.ino)
		return;
	if (times)
		row.mtime = row.ctime = now;
	row.nlink = (uint32_t)((int64_t)row.nlink + nlink_delta);
	ponyfs_row_store(fs, &row);
}

void ponyfs_row_store(struct ponyfs *fs, const struct ponyfs_row *row)
{
	if (fs->rows && row->ino)
		*slot(fs, row->ino) = *row;
}

void ponyfs_row_read(sqlite3_stmt *s, int at, uint64_t ino, struct ponyfs_row *ret)
{
	*ret = (struct ponyfs_row){
		.ino = ino,
		.mode = (uint32_t)sqlite3_column_int64(s, at),
		.uid = (uint32_t)sqlite3_column_int64(s, at + 1),
		.gid = (uint32_t)sqlite3_column_int64(s, at + 2),
		.nlink = (uint32_t)sqlite3_column_int64(s, at + 3),
		.size = (uint64_t)sqlite3_column_int64(s, at + 4),
		.atime = sqlite3_column_int64(s, at + 5),
		.mtime = sqlite3_column_int64(s, at + 6),
		.ctime = sqlite3_column_int64(s, at + 7),
		.btime = sqlite3_column_int64(s, at + 8),
		.rdev = (uint64_t)sqlite3_column_int64(s, at + 9),
	};
}

bool ponyfs_row_no_xattrs(struct ponyfs *fs, uint64_t ino)
{
	const struct ponyfs_row *r = ponyfs_row_cached(fs, ino, false);

	return r && r->no_xattrs;
}

void ponyfs_row_xattrs_added(struct ponyfs *fs, uint64_t ino)
{
	struct ponyfs_row *r;

	if (!fs->rows)
		return;
	r = slot(fs, ino);
	if (r->ino == ino)
		r->no_xattrs = false;
}

void ponyfs_row_blocks(struct ponyfs *fs, struct ponyfs_row *row, uint64_t blocks)
{
	row->blocks = blocks;
	row->blocks_epoch = fs->rows_epoch;
}

int ponyfs_row_locked(struct ponyfs *fs, uint64_t ino, bool blocks, struct ponyfs_row *ret)
{
	const struct ponyfs_row *c = ponyfs_row_cached(fs, ino, blocks);
	sqlite3_stmt *s;
	int r;

	if (c) {
		fs->stats.row_hits++;
		fs->stats.blocks_cached += blocks;
		*ret = *c;
		return 0;
	}
	fs->stats.row_misses++;
	fs->stats.extent_walks += blocks;
	/* The block count sums the file's extents: read only when asked for. */
	s = ponyfs_stmt(fs, blocks ? ST_INODE_GET_BLOCKS : ST_INODE_GET);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		ponyfs_row_read(s, 0, ino, ret);
		if (blocks)
			ponyfs_row_blocks(fs, ret, (uint64_t)sqlite3_column_int64(s, 10));
		ponyfs_row_store(fs, ret);
	}
	sqlite3_reset(s);
	return r > 0 ? 0 : r == 0 ? -ENOENT : r;
}
