/*
 * internal.h - the FUSE front end's shared state: the session, the exported
 * instance and the options, split over ops.c (files and names), more.c
 * (directories, xattrs, ioctls), mount.c (session lifetime), devio.c (our
 * own /dev/fuse I/O), killpriv.c and passthrough.c.
 */
#ifndef PONY_FUSE_INTERNAL_H
#define PONY_FUSE_INTERNAL_H

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <sys/sysmacros.h>

#include "pony/fuse.h"

#define PONYFUSE_OPCODES 64             /* FUSE opcodes counted (all but CUSE's) */

struct ponyfuse_pt;

struct ponyfuse {
	struct vfs *fs;                 /* the caller's */
	struct ponyfuse_options opts;
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;
	/* devio.c: requests read, by opcode; the INIT request's id until
	 * answered; whether the kernel offered passthrough in it. */
	atomic_uint_fast64_t requests[PONYFUSE_OPCODES];
	atomic_uint_fast64_t init_unique;
	bool pt_offered;
	/* passthrough.c: NULL when not asked for; pt_on once negotiated. */
	struct ponyfuse_pt *pt;
	atomic_bool pt_on;
};

/* Who sent req: its uid, gid, pid and umask, as the vfs hooks want them. */
void ponyfuse_ctx(fuse_req_t req, struct vfs_ctx *ctx);
void ponyfuse_statx_to_stat(const struct statx *x, struct stat *st);
void ponyfuse_init(void *userdata, struct fuse_conn_info *conn);
void ponyfuse_init_ops(struct fuse_lowlevel_ops *ops);
void ponyfuse_init_ops_more(struct fuse_lowlevel_ops *ops);
/* devio.c: libfuse's custom I/O on /dev/fuse, for what libfuse 3.14 lacks. */
int ponyfuse_devio_setup(struct ponyfuse *pf);
/* Whether the request this worker handles asked for a suid/sgid kill. */
bool ponyfuse_devio_take_kill(void);
/* The open or create reply this worker sends next passes through to id. */
void ponyfuse_devio_reply_backing(int id);
/* "fuse_<opcode> count" lines for the requests read so far; the length. */
int ponyfuse_devio_counters(struct ponyfuse *pf, char *buf, size_t size);
/* passthrough.c: FOPEN_PASSTHROUGH for opens of host files. */
int ponyfuse_pt_new(struct ponyfuse_pt **ret);
void ponyfuse_pt_free(struct ponyfuse_pt *pt);
/* The backing id to answer the open fh of ino with; 0: serve it as before. */
int ponyfuse_pt_open(struct ponyfuse *pf, uint64_t ino, uint64_t fh);
/* Drops fh's hold on its backing file, if it had one; before vfs release. */
void ponyfuse_pt_release(struct ponyfuse *pf, uint64_t fh);
int ponyfuse_pt_counters(struct ponyfuse *pf, char *buf, size_t size);
/* Drops suid (and sgid with group execute) when the request this worker
 * handles asked for it; *ret (if not NULL) gets the new attributes then. */
int ponyfuse_kill_suidgid(fuse_req_t req, uint64_t ino, uint64_t fh, struct statx *ret);
/* Whether req's caller has CAP_FSETID: its writes never drop suid/sgid. */
bool ponyfuse_caller_keeps_suidgid(fuse_req_t req);

#endif
