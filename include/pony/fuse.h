/*
 * include/pony/fuse.h - the FUSE front end: exports any vfs instance
 * (include/pony/vfs.h) through libfuse3's low-level API, multithreaded, with
 * readdirplus, and offers as ioctls on the mount what FUSE does not carry.
 */
#ifndef PONY_FUSE_H
#define PONY_FUSE_H

#include <linux/ioctl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pony/vfs.h"

struct ponyfuse_options {
	const char *fsname;             /* shown by df and mount: the source */
	const char *subtype;            /* "pony-union" -> type fuse.pony-union */
	bool foreground;                /* false: daemonize once mounted */
	bool writeback;                 /* kernel writeback cache: only where safe */
	bool posix_acl;                 /* kernel enforces system.posix_acl_* (the fs keeps modes) */
	bool debug;                     /* libfuse's request log on stderr */
	double timeout;                 /* entry and attribute cache, seconds */
	unsigned max_threads;           /* 0: libfuse's default */
};

struct ponyfuse;

/*
 * Mounts fs at mountpoint. On 0, *ret is the caller's (ponyfuse_free()), fs
 * stays the caller's and must outlive it. -ENOTCONN when /dev/fuse or the
 * mount is refused.
 */
int ponyfuse_mount(struct vfs *fs, const char *mountpoint,
		   const struct ponyfuse_options *opts, struct ponyfuse **ret);

/*
 * Daemonizes unless opts->foreground, then serves requests until the mount
 * goes away or SIGINT/SIGTERM/SIGHUP arrives. Returns 0 or -errno.
 */
int ponyfuse_run(struct ponyfuse *pf);

/* Unmounts (if still mounted) and frees; NULL does nothing. */
void ponyfuse_free(struct ponyfuse *pf);

/*
 * ioctls on any file or directory of a pony mount. FUSE sends a plain GETATTR
 * for statx(2) and nothing at all for syncfs(2); these carry them.
 */
struct ponyfuse_statx_arg {
	uint32_t mask;                  /* in: STATX_* wanted */
	uint32_t flags;                 /* in: AT_STATX_* (DONT_SYNC, FORCE_SYNC) */
	struct statx stx;               /* out */
};
#define PONYFUSE_IOC_STATX _IOWR('P', 1, struct ponyfuse_statx_arg)
#define PONYFUSE_IOC_SYNCFS _IO('P', 2)

#endif
