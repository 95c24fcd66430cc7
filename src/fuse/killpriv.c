/*
 * killpriv.c - FUSE_HANDLE_KILLPRIV_V2 for instances that ask for it
 * (opts.killpriv): the daemon, not the kernel, drops suid/sgid bits on
 * write, truncate and chown. Without it the kernel sends a GETATTR before
 * every chown to recompute them, a round trip per file in an untar.
 * libfuse 3.14 neither offers the flag nor passes on the kill bits of
 * WRITE, SETATTR and OPEN: devio.c adds the flag to the INIT reply and
 * notes whether the request a worker just read asks for a kill.
 *
 * Also security.capability on a direct write (ponyfuse_drop_caps): the
 * kernel drops it itself on a write through the page cache, asking the
 * daemon for it first; a write-only open served as direct I/O skips both.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

static bool caller_in_group(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[256];
	int n;

	if (c->uid == 0 || c->gid == gid)
		return true;
	n = fuse_req_getgroups(req, (int)ARRAY_SIZE(groups), groups);
	for (int i = 0; i < n && i < (int)ARRAY_SIZE(groups); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

bool ponyfuse_caller_capable(fuse_req_t req, unsigned cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3,
					      .pid = fuse_req_ctx(req)->pid };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	/* pid 0: a caller outside our pid namespace; assume the worst. */
	if (h.pid <= 0 || syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap);
}

bool ponyfuse_caller_keeps_suidgid(fuse_req_t req)
{
	return ponyfuse_caller_capable(req, CAP_FSETID);
}

int ponyfuse_kill_suidgid(fuse_req_t req, uint64_t ino, uint64_t fh, struct statx *ret)
{
	struct ponyfuse *pf = fuse_req_userdata(req);
	struct vfs_setattr a = { .valid = VFS_SET_MODE };
	struct vfs_ctx ctx = { 0 };
	struct statx x;
	int r;

	/* Only a mount that negotiated KILLPRIV_V2 is asked (devio.c). */
	if (!ponyfuse_devio_take_kill() || !pf->opts.killpriv)
		return 0;
	/* A SETATTR's reply attributes, which *ret holds on the way in, are
	 * the file's after the change: no statx again for them. */
	if (ret && (ret->stx_mask & (STATX_MODE | STATX_GID)) == (STATX_MODE | STATX_GID))
		x = *ret;
	else if ((r = VFS_CALL(pf->fs, statx, &ctx, ino, fh, 0, STATX_BASIC_STATS, &x)) < 0)
		return r;
	/* As the kernel's setattr_should_drop_suidgid(): suid always; sgid
	 * with group execute, or without it (mandatory locking) when the
	 * caller is not in the file's group. */
	a.mode = x.stx_mode & 07777 & ~S_ISUID;
	if ((x.stx_mode & S_ISGID) &&
	    ((x.stx_mode & S_IXGRP) || !caller_in_group(req, x.stx_gid)))
		a.mode &= ~S_ISGID;
	if (a.mode == (x.stx_mode & 07777u))
		return 0;
	r = VFS_CALL(pf->fs, setattr, &ctx, ino, fh, &a, &x);
	if (r < 0)
		return r;
	/* A reply with attributes carries the new mode; after a WRITE or an
	 * OPEN the kernel still has the old one cached: drop it. */
	if (ret)
		*ret = x;
	else
		fuse_lowlevel_notify_inval_inode(pf->se, ino, -1, 0);
	return 0;
}

int ponyfuse_drop_caps(fuse_req_t req, uint64_t ino)
{
	struct ponyfuse *pf = fuse_req_userdata(req);
	struct vfs_ctx ctx = { 0 };
	int r;

	/* Whoever writes, as cap_inode_killpriv(): caps are for the bytes
	 * they were set on. Asked first, so a file without them (a new one:
	 * known without the store) changes nothing, not even its ctime. */
	r = VFS_CALL(pf->fs, getxattr, &ctx, ino, XATTR_NAME_CAPS, NULL, 0);
	if (r == -ENODATA || r == -EOPNOTSUPP)
		return 0;
	if (r >= 0)
		r = VFS_CALL(pf->fs, removexattr, &ctx, ino, XATTR_NAME_CAPS);
	return r == -ENODATA ? 0 : r;
}
