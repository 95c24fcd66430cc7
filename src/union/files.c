/*
 * files.c - the union's per-inode hooks: lookup and forget, attributes (a
 * change copies up first), extended attributes (the overlay's own are hidden
 * and refused), the filesystem-wide calls and the ops table. Open files are
 * open.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "internal.h"
#include "pony/util.h"

#define LOCKED(u, expr) ({ pthread_mutex_lock(&(u)->lock); int _r = (expr); \
			   pthread_mutex_unlock(&(u)->lock); _r; })
#define NODE(u, ino) union_node_get((u), (ino))

static int lookup_locked(struct union_fs *u, uint64_t parent, const char *name,
			 struct vfs_entry *ret)
{
	return union_entry_locked(u, NODE(u, parent), name, ret);
}

static int union_lookup(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name, struct vfs_entry *ret)
{
	struct union_fs *u = union_of(fs);

	return LOCKED(u, lookup_locked(u, parent, name, ret));
}

static void union_forget(struct vfs *fs, uint64_t ino, uint64_t nlookup)
{
	struct union_fs *u = union_of(fs);

	pthread_mutex_lock(&u->lock);
	union_node_unref_locked(u, NODE(u, ino), nlookup);
	pthread_mutex_unlock(&u->lock);
}

/* A BATCH_FORGET (thousands after an rm -rf): the lock once for all, not
 * once per inode against the thread serving the next request. */
static void union_forget_multi(struct vfs *fs, const struct vfs_forget *items, size_t n)
{
	struct union_fs *u = union_of(fs);

	pthread_mutex_lock(&u->lock);
	for (size_t i = 0; i < n; i++)
		union_node_unref_locked(u, NODE(u, items[i].ino), items[i].nlookup);
	pthread_mutex_unlock(&u->lock);
}

static int union_statx(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		       unsigned flags, unsigned mask, struct statx *ret)
{
	struct union_fs *u = union_of(fs);
	struct union_node *n = NODE(u, ino);

	if (fh == VFS_NO_FH)
		return LOCKED(u, union_node_statx_locked(u, n, flags, mask, ret));
	/* Through the open file: right also once it is unlinked. */
	return union_file_statx(u, ctx, fh, flags, mask, ret);
}

/* What a setattr may change besides the ctime. */
#define SETATTR_CHANGES (VFS_SET_MODE | VFS_SET_UID | VFS_SET_GID | VFS_SET_SIZE | \
			 VFS_SET_ATIME | VFS_SET_MTIME | VFS_SET_ATIME_NOW | VFS_SET_MTIME_NOW)

static int setattr_locked(struct union_fs *u, uint64_t ino, uint64_t fh,
			  const struct vfs_setattr *a, struct statx *ret)
{
	struct union_node *n = NODE(u, ino);
	/* chown(f, -1, -1) reaches here changing nothing (or the ctime
	 * alone, with the writeback cache), yet it is a change: ext4 and
	 * ponyfs update the ctime and a file drops suid. The same chown of
	 * the upper does both there. */
	struct vfs_setattr chown_none = { .valid = VFS_SET_UID | VFS_SET_GID,
					  .uid = (uid_t)-1, .gid = (gid_t)-1 };
	int r = union_copy_up_data_unlocked(u, n);

	if (r < 0)
		return r;
	r = VFS_CALL(u->upper, setattr, &u->root_ctx, n->upper, union_file_upper_fh_locked(u, fh),
		     a->valid & SETATTR_CHANGES ? a : &chown_none, ret);
	if (r < 0)
		return r;
	/* The upper's answer is the node's, but for a copied-up hard link's
	 * link count, which the index and the lowers decide. */
	if (n->lower_links > 1)
		return union_node_statx_locked(u, n, 0, STATX_BASIC_STATS, ret);
	union_fix_attr(u, n, ret);
	return 0;
}

static int union_setattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			 uint64_t fh, const struct vfs_setattr *a, struct statx *ret)
{
	struct union_fs *u = union_of(fs);
	struct vfs_setattr mapped;

	a = union_idmap_setattr(u, a, &mapped);
	return LOCKED(u, setattr_locked(u, ino, fh, a, ret));
}

/* The layer holding a node's own attributes and data: upper, else top lower. */
static void node_layer_locked(struct union_fs *u, struct union_node *n, struct vfs **ret_fs,
			      uint64_t *ret_ino)
{
	*ret_fs = n->upper ? u->upper : u->lowers[n->lower[0].layer];
	*ret_ino = n->upper ? n->upper : n->lower[0].ino;
}

static int union_readlink(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, char *buf,
			  size_t size)
{
	struct union_fs *u = union_of(fs);
	struct vfs *lfs;
	uint64_t lino;

	int r;

	/* Under the lock: a concurrent copy-up drops the lower reference. */
	pthread_mutex_lock(&u->lock);
	node_layer_locked(u, NODE(u, ino), &lfs, &lino);
	r = VFS_CALL(lfs, readlink, ctx, lino, buf, size);
	pthread_mutex_unlock(&u->lock);
	return r;
}

/* Whether n's xattrs change only by a setxattr through the union: its data
 * is a lower's (lowers do not change while mounted), or the union is
 * read-only (its top lower stands in the upper's place). */
static bool xattrs_fixed(const struct union_fs *u, const struct union_node *n)
{
	return !n->upper || u->readonly;
}

/*
 * The node's xattr names as the union shows them (its own left out) into buf
 * (size 0: the length only), with u->lock held. A node whose xattrs are
 * fixed and whose list is empty is marked no_xattrs (a setxattr unmarks it),
 * so later GETXATTRs and LISTXATTRs are answered from the node. podman's
 * layer diff (containers/storage's naive diff, used whenever a mount_program
 * is set) asks both of every file of the image at every build step, and a
 * read-only union of image layers holds fixed files alone. The host's list
 * is the daemon's own (hostfs lists with its credentials), not the caller's.
 */
static int list_visible_locked(struct union_fs *u, const struct vfs_ctx *ctx,
			       struct union_node *n, char *buf, size_t size)
{
	_cleanup_(freep) char *all = NULL;
	struct vfs *lfs;
	uint64_t lino;
	int len, out = 0;

	if (n->no_xattrs && xattrs_fixed(u, n))
		return 0;
	node_layer_locked(u, n, &lfs, &lino);
	len = VFS_CALL(lfs, listxattr, ctx, lino, NULL, 0);
	all = len > 0 ? malloc((size_t)len) : NULL;
	if (all)
		len = VFS_CALL(lfs, listxattr, ctx, lino, all, (size_t)len);
	else if (len > 0)
		len = -ENOMEM;
	if (len < 0)
		return len;
	for (char *p = all; len > 0 && p < all + len; p += strlen(p) + 1) {
		size_t one = strlen(p) + 1;

		if (union_is_own_xattr(u, p))
			continue;
		if (size && (size_t)out + one > size)
			return -ERANGE;
		if (size)
			memcpy(buf + out, p, one);
		out += (int)one;
	}
	if (out == 0 && xattrs_fixed(u, n))
		n->no_xattrs = n->no_caps = true;
	return out;
}

static int union_getxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const char *name, void *buf, size_t size)
{
	struct union_fs *u = union_of(fs);
	struct vfs *lfs;
	uint64_t lino;

	int r;

	if (union_is_own_xattr(u, name))
		return -ENODATA;
	if (union_xattr_free(u))
		return -ENOSYS;         /* FUSE: no xattrs on this mount (xattr_free.c) */
	/* The kernel asks for security.capability before every write and
	 * chown; once known absent it is answered here. Only a setxattr
	 * through the union makes it present (writes and chowns remove it). */
	bool caps = !strcmp(name, "security.capability");
	struct union_node *n = NODE(u, ino);
	pthread_mutex_lock(&u->lock);
	/* A lower file's first capability query lists its xattrs instead: as
	 * cheap on the host, and an empty list answers the LISTXATTR that a
	 * tree walk sends next, and any other name, without the lower. */
	if (caps && !n->no_caps && !n->no_xattrs && xattrs_fixed(u, n))
		list_visible_locked(u, ctx, n, NULL, 0);
	if ((caps && n->no_caps) || (n->no_xattrs && xattrs_fixed(u, n))) {
		r = -ENODATA;
	} else {
		node_layer_locked(u, n, &lfs, &lino);
		r = VFS_CALL(lfs, getxattr, ctx, lino, name, buf, size);
		if (caps && r == -ENODATA)
			n->no_caps = true;
	}
	pthread_mutex_unlock(&u->lock);
	return r;
}

static int union_listxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, char *buf,
			   size_t size)
{
	struct union_fs *u = union_of(fs);

	if (union_xattr_free(u))
		return -ENOSYS;
	return LOCKED(u, list_visible_locked(u, ctx, NODE(u, ino), buf, size));
}

static int xattr_change_locked(struct union_fs *u, const struct vfs_ctx *ctx, uint64_t ino,
			       const char *name, const void *value, size_t size, int flags,
			       bool remove)
{
	struct union_node *n = NODE(u, ino);
	int r = union_copy_up_data_unlocked(u, n);

	if (r < 0)
		return r;
	if (remove)
		return VFS_CALL(u->upper, removexattr, ctx, n->upper, name);
	n->no_caps = n->no_xattrs = false;
	return VFS_CALL(u->upper, setxattr, ctx, n->upper, name, value, size, flags);
}

static int union_setxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const char *name, const void *value, size_t size, int flags)
{
	struct union_fs *u = union_of(fs);

	if (union_is_own_xattr(u, name))
		return -EPERM;
	return LOCKED(u, xattr_change_locked(u, ctx, ino, name, value, size, flags, false));
}

static int union_removexattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			     const char *name)
{
	struct union_fs *u = union_of(fs);

	if (union_is_own_xattr(u, name))
		return -EPERM;
	return LOCKED(u, xattr_change_locked(u, ctx, ino, name, NULL, 0, 0, true));
}

static int union_statfs(struct vfs *fs, uint64_t ino, struct statvfs *ret)
{
	return VFS_CALL(union_of(fs)->upper, statfs, VFS_ROOT_INO, ret);
}

static int union_syncfs(struct vfs *fs)
{
	if (union_of(fs)->flags & UNION_NO_FSYNC)
		return 0;
	return VFS_CALL(union_of(fs)->upper, syncfs);
}

static int union_fsyncdir(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync)
{
	return union_syncfs(fs);
}

const struct vfs_ops union_ops = {
	.version = VFS_OPS_VERSION,
	.name = "union",
	.destroy = union_destroy,
	.lookup = union_lookup,
	.forget = union_forget,
	.forget_multi = union_forget_multi,
	.statx = union_statx,
	.setattr = union_setattr,
	.readlink = union_readlink,
	.mknod = union_mknod,
	.mkdir = union_mkdir,
	.symlink = union_symlink,
	.link = union_link,
	.unlink = union_unlink,
	.rmdir = union_rmdir,
	.rename = union_rename,
	.open = union_open,
	.create = union_create,
	.read = union_read,
	.write = union_write,
	.flush = union_flush,
	.fsync = union_fsync,
	.release = union_release,
	.fallocate = union_fallocate,
	.opendir = union_opendir,
	.readdir = union_readdir,
	.releasedir = union_releasedir,
	.fsyncdir = union_fsyncdir,
	.getxattr = union_getxattr,
	.setxattr = union_setxattr,
	.listxattr = union_listxattr,
	.removexattr = union_removexattr,
	.statfs = union_statfs,
	.syncfs = union_syncfs,
	.barrier = union_barrier,
	.data_fd = union_data_fd,
	.data_fd_stable = union_data_fd_stable,
	.counters = union_counters,
};
