/*
 * include/pony/hostfs.h - a directory of the host as a vfs instance
 * (passthrough), the reference implementation of include/pony/vfs.h and the
 * upper and lower layers of a union.
 *
 * New files get mode & ~ctx->umask (the process umask applies too: the CLI
 * sets it to 0), and, when running as root, the caller's uid/gid.
 */
#ifndef PONY_HOSTFS_H
#define PONY_HOSTFS_H

#include "pony/vfs.h"

enum {
	HOSTFS_READONLY = 1 << 0,       /* every change is -EROFS */
};

/* On 0, *ret is a new instance rooted at the directory path; vfs_free() it. */
int hostfs_new(const char *path, unsigned flags, struct vfs **ret);

/*
 * Makes another host directory an inode of fs (a reference on ret->ino), so
 * renames and links between it and fs's tree go through the same instance
 * (a union's work directory beside its upper). -EXDEV if it is on another
 * filesystem than fs's root.
 */
int hostfs_attach(struct vfs *fs, const char *path, struct vfs_entry *ret);

/* The host descriptor of an open file (fh from open/create), for tests. */
int hostfs_fh_fd(uint64_t fh);

#endif
