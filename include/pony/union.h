/*
 * include/pony/union.h - union mounts as a vfs instance: read-only lowers,
 * one writable upper, kernel overlayfs's on-disk format in the upper.
 *
 * Files are copied up on first change; a merged directory is copied up
 * (recreated in the upper) the first time it is read or changed, a one-lower
 * directory at its first change; readdir reads one merged listing whose cookies are hashes of names: stable across
 * telldir/seekdir and remounts. st_ino is the origin's inode number with the
 * layer in the top bits (as overlayfs's xino), the same before and after
 * copy-up and across remounts. A lower that changes under the union makes
 * every later call fail with -ESTALE until the union is built again.
 */
#ifndef PONY_UNION_H
#define PONY_UNION_H

#include "pony/vfs.h"

#define UNION_MAX_LOWERS 32

enum {
	UNION_USERXATTR = 1 << 0,       /* user.overlay.* (unprivileged), not trusted. */
	UNION_NO_PREFETCH = 1 << 1,     /* no reading of lower directories ahead
					 * of a tree walk (a thread, by default) */
};

struct union_config {
	const char *const *lowers;      /* top first, as overlayfs's lowerdir=A:B:C */
	unsigned nlowers;
	const char *upper;              /* a host directory (hostfs) */
	const char *work;               /* same filesystem as upper, outside it */
	unsigned flags;                 /* UNION_* */
};

/*
 * Builds the union. On 0, *ret is the caller's (vfs_free()). Errors: -ENOENT
 * a layer is missing, -ENOTDIR not a directory, -ELOOP the upper or work is
 * inside a lower or a lower inside the upper, -EXDEV work and upper on
 * different filesystems, -EINVAL no lower or too many.
 */
int union_new(const struct union_config *cfg, struct vfs **ret);

#endif
