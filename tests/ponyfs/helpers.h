/*
 * helpers.h - what the ponyfs tests share: a filesystem on a memory bdev,
 * and whole-file put/get by path through the vfs ops table, as an
 * application's open/write/close would do it.
 */
#ifndef PONYFS_TEST_HELPERS_H
#define PONYFS_TEST_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/ponyfs.h"
#include "pony/vfs.h"
#include "pony/volume.h"

/* ponyfs on a pony volume, as pony mkfs makes it: metadata mirrored on
 * every member (8 MiB), data RAID6 left-symmetric in 64 KiB chunks. */
struct test_volume_fs {
	struct volume_set *set;
	struct bdev *meta, *data;       /* the regions: free after the instance */
	struct vfs *fs;
};

/* Over ndev devs (handed over on success); 0 or -errno. */
static inline int test_volume_fs_new(struct bdev **devs, unsigned ndev, struct test_volume_fs *ret)
{
	struct volume_region_spec specs[2] = {
		{ .cls = VOLUME_CLASS_METADATA, .type = VOLUME_MIRROR, .chunk = 64 << 10, .size = 8 << 20 },
		{ .cls = VOLUME_CLASS_DATA, .type = VOLUME_RAID6, .chunk = 64 << 10 },
	};
	struct volume_set_params p = { .name = "test", .regions = specs, .nregions = 2,
				       .assume_clean = true };
	struct ponyfs_options o = { 0 };
	int r = volume_layout_from_name(6, "left-symmetric", &specs[1].layout);

	if (r >= 0)
		r = volume_set_create(devs, ndev, &p, &ret->set);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(ret->set), VOLUME_CLASS_METADATA, &ret->meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(ret->set), VOLUME_CLASS_DATA, &ret->data);
	if (r >= 0)
		r = ponyfs_mkfs(ret->meta, ret->data, NULL);
	o.volume = r >= 0 ? volume_set_volume(ret->set) : NULL;
	return r < 0 ? r : ponyfs_mount(ret->meta, ret->data, &o, &ret->fs);
}

static inline struct vfs_ctx test_ctx(void)
{
	struct vfs_ctx c;

	vfs_ctx_self(&c);
	return c;
}

/* "dir/name" -> parent inode (one reference unless the root) and the last name. */
static inline int test_parent(struct vfs *fs, const char *path, uint64_t *parent, const char **name)
{
	struct vfs_ctx c = test_ctx();
	const char *slash = strrchr(path, '/');
	struct vfs_entry e;
	char dir[256];
	int r;

	if (!slash) {
		*parent = VFS_ROOT_INO;
		*name = path;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	r = vfs_walk(fs, &c, dir, &e);
	if (r < 0)
		return r;
	*parent = e.ino;
	*name = slash + 1;
	return 0;
}

/* Opens (creating with flags & O_CREAT) path; returns the inode in *ino. */
static inline int test_open(struct vfs *fs, const char *path, int flags, uint64_t *ino, uint64_t *fh)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e = { 0 };
	uint64_t parent;
	const char *name;
	int r = test_parent(fs, path, &parent, &name);

	if (r < 0)
		return r;
	if (flags & O_CREAT)
		r = VFS_CALL(fs, create, &c, parent, name, 0644, flags, &e, fh);
	else {
		r = VFS_CALL(fs, lookup, &c, parent, name, &e);
		if (r >= 0)
			r = VFS_CALL(fs, open, &c, e.ino, flags, fh);
	}
	*ino = r >= 0 ? e.ino : 0;
	return r;
}

/* Writes len bytes of data as the whole new content of path (O_TRUNC). */
static inline int test_put(struct vfs *fs, const char *path, const void *data, size_t len)
{
	uint64_t ino, fh;
	int r = test_open(fs, path, O_CREAT | O_WRONLY | O_TRUNC, &ino, &fh);
	ssize_t w = 0;

	if (r < 0)
		return r;
	if (len)
		w = VFS_CALL(fs, write, ino, fh, data, len, 0);
	r = VFS_CALL(fs, release, ino, fh);
	return w < 0 ? (int)w : (size_t)w != len ? -EIO : r;
}

/* Reads path into buf (up to cap bytes): the length, or -errno. */
static inline ssize_t test_get(struct vfs *fs, const char *path, void *buf, size_t cap)
{
	uint64_t ino, fh;
	int r = test_open(fs, path, O_RDONLY, &ino, &fh);
	ssize_t n;

	if (r < 0)
		return r;
	n = VFS_CALL(fs, read, ino, fh, buf, cap, 0);
	VFS_CALL(fs, release, ino, fh);
	return n;
}

/* A pattern that differs per seed and per byte, so mixes show. */
static inline void test_fill(uint8_t *buf, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

#endif
