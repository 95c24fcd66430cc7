/*
 * internal.h - the FUSE front end's shared state: the session, the exported
 * instance and the options, split over ops.c (files and names), more.c
 * (directories, xattrs, ioctls) and mount.c (session lifetime).
 */
#ifndef PONY_FUSE_INTERNAL_H
#define PONY_FUSE_INTERNAL_H

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>
#include <sys/sysmacros.h>

#include "pony/fuse.h"

struct ponyfuse {
	struct vfs *fs;                 /* the caller's */
	struct ponyfuse_options opts;
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;
};

/* Who sent req: its uid, gid, pid and umask, as the vfs hooks want them. */
void ponyfuse_ctx(fuse_req_t req, struct vfs_ctx *ctx);
void ponyfuse_statx_to_stat(const struct statx *x, struct stat *st);
void ponyfuse_init(void *userdata, struct fuse_conn_info *conn);
void ponyfuse_init_ops(struct fuse_lowlevel_ops *ops);
void ponyfuse_init_ops_more(struct fuse_lowlevel_ops *ops);
/* killpriv.c: FUSE_HANDLE_KILLPRIV_V2 through libfuse's custom I/O. */
int ponyfuse_killpriv_setup(struct fuse_session *se);
/* Drops suid (and sgid with group execute) when the request this worker
 * handles asked for it; *ret (if not NULL) gets the new attributes then. */
int ponyfuse_kill_suidgid(fuse_req_t req, uint64_t ino, uint64_t fh, struct statx *ret);

#endif
