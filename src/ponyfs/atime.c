/*
 * atime.c - access times as the mount asks: relatime (the default, the
 * kernel's rule: atime moves on an access when it is not after mtime or
 * ctime, or is a day old), strictatime (every access), noatime (never),
 * and nodiratime (a directory's listing never moves it).
 * FUSE leaves atime to the filesystem (the kernel marks FUSE inodes
 * S_NOATIME), so without this no read or readdir ever moved it. The new
 * atime lands in the cached inode and is written behind at writeback with
 * the file's other cached state, as the kernel writes a dirty inode; once
 * an inode's times are cached, an access that moves nothing runs no SQL.
 */
#include <errno.h>

#include "internal.h"

#define DAY_NS (24 * 3600 * 1000000000ll)

/* The cached times, read once per cached inode. */
static int times_load(struct ponyfs *fs, struct ponyfs_inode *in)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_INODE_GET);
	int64_t mtime, ctime;
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)in->ino);
	r = ponyfs_step_row(fs, s);
	if (r <= 0) {
		sqlite3_reset(s);
		return r < 0 ? r : -ENOENT;
	}
	if (!in->atime_dirty)
		in->atime = sqlite3_column_int64(s, 5);
	mtime = in->size_dirty ? in->mtime : sqlite3_column_int64(s, 6);
	ctime = in->size_dirty ? in->ctime : sqlite3_column_int64(s, 7);
	sqlite3_reset(s);
	in->cmtime = MAX(mtime, ctime);
	in->times_known = true;
	return 0;
}

void ponyfs_times_changed(struct ponyfs *fs, uint64_t ino, int64_t now)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	if (in && in->times_known)
		in->cmtime = MAX(in->cmtime, now);
}

void ponyfs_atime_set(struct ponyfs *fs, uint64_t ino)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	if (in) {
		in->atime_dirty = false;        /* the database has it now */
		in->times_known = false;
	}
}

int ponyfs_atime_access_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	int64_t now;

	if (fs->atime_mode == PONYFS_ATIME_NEVER || fs->read_only || fs->broken)
		return 0;
	if (!in->times_known && times_load(fs, in) < 0)
		return 0;       /* the access itself went well: atime is not worth failing it */
	now = ponyfs_now();
	if (fs->atime_mode == PONYFS_ATIME_RELATIVE && in->atime > in->cmtime &&
	    now - in->atime < DAY_NS)
		return 0;
	/* A full metadata space keeps the old atime rather than fail a read. */
	if (ponyfs_inode_reserve_locked(fs, in, 0, UINT64_MAX, 0) < 0)
		return 0;
	in->atime = now;
	in->atime_dirty = true;
	ponyfs_dirty_add(fs, in);
	return 0;
}

int ponyfs_atime_dir_access_locked(struct ponyfs *fs, struct ponyfs_inode *dir)
{
	return fs->nodiratime ? 0 : ponyfs_atime_access_locked(fs, dir);
}
