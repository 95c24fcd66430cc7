/*
 * attr.c - the inode attribute rules a kernel filesystem gets from the VFS
 * (inode_init_owner(), setattr_should_drop_suidgid(), posix_acl_update_mode())
 * and a FUSE daemon must apply itself: a name made in a set-group-ID
 * directory takes the directory's group and, for a directory, the bit; a
 * write, truncation, fallocate or chown by an unprivileged caller drops the
 * set-ID bits; every change moves ctime, also of a file whose cached times
 * (data.c) are ahead of the database.
 *
 * The kernel's FUSE fallback (no FUSE_HANDLE_KILLPRIV) already sends a mode
 * change for set-user-ID and for set-group-ID with group execute, but it
 * leaves a set-group-ID file without group execute alone even when the
 * writer is not in the file's group (generic/683-685); the daemon is the
 * only one who can apply the whole rule, so it does, every time.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/*
 * Whether the caller is in group gid (its fs gid or a supplementary group)
 * and whether it holds CAP_FSETID: the two halves of the kernel's
 * in_group_or_capable(). Both are the caller's process's, from /proc (as
 * libfuse's fuse_req_getgroups() reads the groups); only asked when a
 * set-ID bit is at stake, so the common paths never read /proc. A caller
 * gone from /proc is capable only when its uid is 0.
 */
static void caller_creds(const struct vfs_ctx *ctx, gid_t gid, bool *ret_in_group,
			 bool *ret_capable)
{
	char path[64], line[4096];
	bool in_group = ctx->gid == gid, capable = ctx->uid == 0;
	FILE *f = NULL;

	if (ctx->pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
		f = fopen(path, "re");
	}
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			capable = (strtoull(line + 7, NULL, 16) >> CAP_FSETID) & 1;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;

			for (unsigned long g = strtoul(p, &end, 10); end != p;
			     p = end, g = strtoul(p, &end, 10))
				in_group = in_group || g == gid;
		}
	}
	if (f)
		fclose(f);
	*ret_in_group = in_group;
	*ret_capable = capable;
}

static bool caller_in_group_or_capable(const struct vfs_ctx *ctx, gid_t gid)
{
	bool in_group, capable;

	caller_creds(ctx, gid, &in_group, &capable);
	return in_group || capable;
}

static int mode_gid(struct ponyfs *fs, uint64_t ino, mode_t *ret_mode, gid_t *ret_gid)
{
	struct ponyfs_row row;
	int r = ponyfs_row_locked(fs, ino, false, &row);

	if (r >= 0) {
		*ret_mode = (mode_t)row.mode;
		*ret_gid = (gid_t)row.gid;
	}
	return r;
}

void ponyfs_ctime_note(struct ponyfs *fs, uint64_t ino, int64_t now)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	/* Writeback stores the cached times: they must not undo this one. */
	if (in && in->size_dirty)
		in->ctime = now;
	ponyfs_times_changed(fs, ino, now);
}

int ponyfs_ctime_locked(struct ponyfs *fs, uint64_t ino, int64_t now)
{
	ponyfs_ctime_note(fs, ino, now);
	return ponyfs_sql(fs, "UPDATE inodes SET ctime = ?2 WHERE ino = ?1", 2, (int64_t)ino, now);
}

void ponyfs_new_owner(const struct vfs_ctx *ctx, mode_t pmode, gid_t pgid, mode_t *mode,
		      gid_t *ret_gid)
{
	mode_t m = *mode;

	*ret_gid = ctx->gid;
	if (!(pmode & S_ISGID))
		return;
	*ret_gid = pgid;
	if (S_ISDIR(m))
		m |= S_ISGID;
	else if ((m & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		 !caller_in_group_or_capable(ctx, pgid))
		m &= ~(mode_t)S_ISGID;  /* the kernel's mode_strip_sgid() */
	*mode = m;
}

mode_t ponyfs_setid_kill_bits(const struct vfs_ctx *ctx, mode_t mode, gid_t gid, bool chown)
{
	bool in_group, cap;
	mode_t kill = 0;

	if (S_ISDIR(mode) || !(mode & (S_ISUID | S_ISGID)))
		return 0;
	caller_creds(ctx, gid, &in_group, &cap);
	if (chown || !cap)
		kill |= mode & S_ISUID;
	if (mode & S_ISGID) {
		if (mode & S_IXGRP)
			kill |= chown || !cap ? S_ISGID : 0;
		else if (!cap && !in_group)
			kill |= S_ISGID;        /* the rule FUSE's fallback leaves out */
	}
	return kill;
}

int ponyfs_setid_kill_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			     bool chown, bool reserve)
{
	mode_t mode, kill;
	gid_t gid;
	int r = mode_gid(fs, ino, &mode, &gid);

	if (r < 0)
		return r;
	kill = ponyfs_setid_kill_bits(ctx, mode, gid, chown);
	if (!kill)
		return 0;
	if (reserve)    /* the mode and the ctime */
		r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = 2 }, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_sql(fs, "UPDATE inodes SET mode = mode & ~?2 WHERE ino = ?1", 2,
			       (int64_t)ino, (int64_t)kill);
	return r < 0 ? r : ponyfs_ctime_locked(fs, ino, ponyfs_now());
}

int ponyfs_acl_sgid_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino)
{
	mode_t mode;
	gid_t gid;
	int r = mode_gid(fs, ino, &mode, &gid);

	if (r < 0 || !(mode & S_ISGID) || caller_in_group_or_capable(ctx, gid))
		return r;
	return ponyfs_sql(fs, "UPDATE inodes SET mode = mode & ~?2 WHERE ino = ?1", 2, (int64_t)ino,
			  (int64_t)S_ISGID);
}
