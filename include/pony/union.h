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
	UNION_NO_FSYNC = 1 << 2,        /* fsync and fsyncdir return at once
					 * (fuse-overlayfs's volatile, fsync=0) */
	UNION_STATIC_NLINK = 1 << 3,    /* every directory says st_nlink 1 */
	UNION_SQUASH_UID = 1 << 4,      /* every owner shown as squash_uid */
	UNION_SQUASH_GID = 1 << 5,      /* every group shown as squash_gid */
	UNION_WH_FILES = 1 << 6,        /* lowers may also say whiteout and opaque
					 * as files, ".wh.NAME" and ".wh..wh..opq"
					 * (aufs's, as fuse-overlayfs reads them and
					 * podman extracts layers for it); those
					 * names are never shown */
};

/*
 * One range of an id map, as fuse-overlayfs's uidmapping=: ids
 * [host, host + count) on disk are shown as [to, to + count), and ids a
 * caller brings (new files' owners, chown) are mapped back. An id no range
 * holds is shown as UNION_ID_OVERFLOW and written as it.
 */
struct union_idmap {
	uint32_t host;
	uint32_t to;
	uint32_t count;
};
#define UNION_MAX_IDMAPS 64
#define UNION_ID_OVERFLOW 65534u        /* the kernel's overflowuid/gid */

struct union_config {
	const char *const *lowers;      /* top first, as overlayfs's lowerdir=A:B:C */
	unsigned nlowers;
	const char *upper;              /* a host directory (hostfs); NULL: a
					 * read-only union of the lowers alone
					 * (every change -EROFS, no work dir) */
	const char *work;               /* same filesystem as upper, outside it */
	unsigned flags;                 /* UNION_* */
	const struct union_idmap *uidmap, *gidmap; /* NULL or n ranges each */
	unsigned nuidmap, ngidmap;
	uint32_t squash_uid, squash_gid; /* with UNION_SQUASH_UID/GID */
};

/*
 * Builds the union. On 0, *ret is the caller's (vfs_free()). Errors: -ENOENT
 * a layer is missing, -ENOTDIR not a directory, -ELOOP the upper or work is
 * inside a lower or a lower inside the upper, -EXDEV work and upper on
 * different filesystems, -EINVAL no lower or too many, or an id map of
 * more than UNION_MAX_IDMAPS ranges. Without an upper the top lower plays
 * the upper's part (its whiteouts, opaque and redirect xattrs hide and
 * point into the lowers below), opened read-only.
 */
int union_new(const struct union_config *cfg, struct vfs **ret);

#endif
