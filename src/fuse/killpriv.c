/*
 * killpriv.c - FUSE_HANDLE_KILLPRIV_V2 for instances that ask for it
 * (opts.killpriv): the daemon, not the kernel, drops suid/sgid bits on
 * write, truncate and chown. Without it the kernel sends a GETATTR before
 * every chown to recompute them, a round trip per file in an untar.
 * libfuse 3.14 neither offers the flag nor passes on the kill bits of
 * WRITE, SETATTR and OPEN, so its custom I/O hooks do both: the INIT reply
 * gets the flag, and each worker notes whether the request it just read
 * asks for a kill (a worker reads a request, then handles it).
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

static _Thread_local bool kill_asked;
static atomic_uint_fast64_t init_unique = UINT64_MAX;

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	const char *arg = (const char *)buf + sizeof(*in);
	size_t have = n > 0 ? (size_t)n - MIN((size_t)n, sizeof(*in)) : 0;

	kill_asked = false;
	if (n < (ssize_t)sizeof(*in))
		return n;
	if (in->opcode == FUSE_INIT)
		atomic_store(&init_unique, in->unique);
	else if (in->opcode == FUSE_WRITE && have >= sizeof(struct fuse_write_in))
		kill_asked = ((const struct fuse_write_in *)arg)->write_flags &
			     FUSE_WRITE_KILL_SUIDGID;
	else if (in->opcode == FUSE_SETATTR && have >= sizeof(struct fuse_setattr_in))
		kill_asked = ((const struct fuse_setattr_in *)arg)->valid & FATTR_KILL_SUIDGID;
	else if (in->opcode == FUSE_OPEN && have >= sizeof(struct fuse_open_in))
		kill_asked = ((const struct fuse_open_in *)arg)->open_flags &
			     FUSE_OPEN_KILL_SUIDGID;
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;

	if (count >= 2 && iov[0].iov_len >= sizeof(*out) && out->error == 0 &&
	    out->unique == atomic_load(&init_unique) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background)) {
		((struct fuse_init_out *)iov[1].iov_base)->flags |= FUSE_HANDLE_KILLPRIV_V2;
		atomic_store(&init_unique, UINT64_MAX);
	}
	return writev(fd, iov, count);
}

static const struct fuse_custom_io killpriv_io = { .read = dev_read, .writev = dev_writev };

int ponyfuse_killpriv_setup(struct fuse_session *se)
{
	return fuse_session_custom_io(se, &killpriv_io, fuse_session_fd(se)) == 0 ? 0 : -EIO;
}

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

int ponyfuse_kill_suidgid(fuse_req_t req, uint64_t ino, uint64_t fh, struct statx *ret)
{
	struct ponyfuse *pf = fuse_req_userdata(req);
	struct vfs_setattr a = { .valid = VFS_SET_MODE };
	struct vfs_ctx ctx = { 0 };
	struct statx x;
	int r;

	if (!kill_asked)
		return 0;
	kill_asked = false;
	r = VFS_CALL(pf->fs, statx, &ctx, ino, fh, 0, STATX_BASIC_STATS, &x);
	if (r < 0)
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
