/*
 * bound.c - files bound to the open transaction: ordering rule 2 kept at
 * the commit instead of at the rename. A rename (or link) of a file with
 * cached data used to write that data back on the spot, one synchronous
 * data write per replace-via-rename, a fifth of the daemon's time in a
 * write-new + rename-over loop (BENCHMARKS.md, session 33). Now the rename
 * binds the file to the transaction that holds the new name, and every
 * commit writes the bound files back before its data flush and COMMIT:
 * the name still never commits without the content. A file replaced
 * again before the commit is deleted with its cached data, never written.
 *
 * A bound file that changes again (write, truncation, fallocate, punch)
 * is written back first, as the rename would have done: a commit in the
 * middle of a write call (room made for it) or of a truncating rewrite
 * would otherwise carry half of it with the name (rule 2's other half).
 */
#include "internal.h"

void ponyfs_inode_bind_locked(struct ponyfs *fs, uint64_t ino)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	/* Nothing cached: the database already holds all of it. */
	if (!in || !in->dprev || in->bound)
		return;
	in->bound = true;
	fs->nbound++;
}

int ponyfs_inode_unbind_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	return in->bound ? ponyfs_writeback_locked(fs, in) : 0;
}

int ponyfs_commit_locked(struct ponyfs *fs)
{
	struct ponyfs_inode *in, *next;

	if (fs->broken)
		return fs->broken;
	/* Only dirty inodes are bound. A writeback takes its own inode off
	 * the list and commits nothing, so next stays valid. */
	for (in = fs->dirty; in && fs->nbound; in = next) {
		int r;

		next = in->dnext;
		if (!in->bound)
			continue;
		r = ponyfs_writeback_locked(fs, in);    /* unbinds it; a failure breaks fs */
		if (r < 0)
			return r;
		fs->stats.bound_writebacks++;
		/* Closed and written: nothing holds it any more (no caller keeps
		 * a closed bound inode across a commit: they unbind it first). */
		ponyfs_inode_put_locked(fs, in);
	}
	return ponyfs_txn_commit_locked(fs);
}
