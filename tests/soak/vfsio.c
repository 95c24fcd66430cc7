/*
 * vfsio.c - whole-file calls over a vfs ops table, as an application's
 * open/write/fsync/close would make them, with every reference a lookup
 * or create takes given back: the soak runs for minutes and must not grow
 * the daemon's inode cache by what it forgets.
 */
#include <errno.h>
#include <fcntl.h>

#include "pony/util.h"
#include "soak.h"

static struct vfs_ctx ctx_self(void)
{
	struct vfs_ctx c;

	vfs_ctx_self(&c);
	return c;
}

int soak_walk_dir(struct vfs *fs, const char *name, uint64_t *ret_ino)
{
	struct vfs_ctx c = ctx_self();
	struct vfs_entry e;
	int r = VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e);

	if (r == -ENOENT)
		r = VFS_CALL(fs, mkdir, &c, VFS_ROOT_INO, name, 0755, &e);
	if (r < 0)
		return r;
	*ret_ino = e.ino;               /* the one reference is kept while mounted */
	return 0;
}

int soak_put(struct vfs *fs, uint64_t dir, const char *name, const uint8_t *buf, size_t len,
	     bool truncate_in_place, bool do_fsync, uint8_t *kind_on_short)
{
	struct vfs_ctx c = ctx_self();
	struct vfs_entry e;
	uint64_t fh;
	ssize_t w = 0;
	int r, rr;

	r = VFS_CALL(fs, lookup, &c, dir, name, &e);
	if (r >= 0 && truncate_in_place) {
		r = VFS_CALL(fs, open, &c, e.ino, O_WRONLY | O_TRUNC, &fh);
		if (r < 0) {
			VFS_FORGET(fs, e.ino, 1);
			return r;
		}
	} else {
		if (r >= 0)
			VFS_FORGET(fs, e.ino, 1);
		else if (r != -ENOENT)
			return r;
		r = VFS_CALL(fs, create, &c, dir, name, 0644, O_CREAT | O_WRONLY | O_TRUNC, &e, &fh);
		if (r < 0)
			return r;
	}
	for (size_t done = 0; done < len && w >= 0; done += (size_t)w) {
		size_t n = MIN(len - done, (size_t)(128u << 10));

		w = VFS_CALL(fs, write, e.ino, fh, buf + done, n, (off_t)done);
		if (w == 0)
			w = -EIO;
		if (w > 0 && (size_t)w < n && kind_on_short)
			__atomic_store_n(kind_on_short, SOAK_KIND_TORN, __ATOMIC_SEQ_CST);
	}
	r = w < 0 ? (int)w : 0;
	if (r >= 0 && fs->ops->flush)
		r = VFS_CALL(fs, flush, e.ino, fh);
	if (r >= 0 && do_fsync)
		r = VFS_CALL(fs, fsync, e.ino, fh, false);
	rr = VFS_CALL(fs, release, e.ino, fh);
	VFS_FORGET(fs, e.ino, 1);
	return r < 0 ? r : rr;
}

int soak_get(struct vfs *fs, uint64_t dir, const char *name, uint8_t *buf, size_t size,
	     size_t *ret_len)
{
	struct vfs_ctx c = ctx_self();
	struct vfs_entry e;
	size_t len = 0;
	uint64_t fh;
	ssize_t n = 1;
	int r = VFS_CALL(fs, lookup, &c, dir, name, &e);

	if (r < 0)
		return r;
	r = VFS_CALL(fs, open, &c, e.ino, O_RDONLY, &fh);
	if (r < 0) {
		VFS_FORGET(fs, e.ino, 1);
		return r;
	}
	while (len < size && n > 0) {
		n = VFS_CALL(fs, read, e.ino, fh, buf + len, MIN(size - len, (size_t)(128u << 10)),
			     (off_t)len);
		if (n > 0)
			len += (size_t)n;
	}
	VFS_CALL(fs, release, e.ino, fh);
	VFS_FORGET(fs, e.ino, 1);
	if (n < 0)
		return (int)n;
	*ret_len = len;
	return 0;
}

int soak_rename(struct vfs *fs, uint64_t dir, const char *from, const char *to)
{
	struct vfs_ctx c = ctx_self();

	return VFS_CALL(fs, rename, &c, dir, from, dir, to, 0);
}

int soak_unlink(struct vfs *fs, uint64_t dir, const char *name)
{
	struct vfs_ctx c = ctx_self();

	return VFS_CALL(fs, unlink, &c, dir, name);
}

int soak_fsync_dir(struct vfs *fs, uint64_t dir)
{
	struct vfs_ctx c = ctx_self();
	uint64_t fh;
	int r = VFS_CALL(fs, opendir, &c, dir, &fh);

	if (r < 0)
		return r;
	r = VFS_CALL(fs, fsyncdir, dir, fh, false);
	VFS_CALL(fs, releasedir, dir, fh);
	return r;
}
