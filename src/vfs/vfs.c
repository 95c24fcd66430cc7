/*
 * vfs.c - the few helpers every vfs instance and caller shares: freeing an
 * instance, name checks (so every instance answers ENAMETOOLONG the same
 * way), a batch of forgets, mode-to-DT conversion and a path walk for
 * tests and tools.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "pony/util.h"
#include "pony/vfs.h"

void vfs_free(struct vfs *fs)
{
	if (fs && fs->ops->destroy)
		fs->ops->destroy(fs);
}

void vfs_ctx_self(struct vfs_ctx *ret)
{
	*ret = (struct vfs_ctx){ .uid = geteuid(), .gid = getegid(),
				 .pid = getpid(), .umask = 022 };
}

int vfs_check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

void vfs_forget_many(struct vfs *fs, const struct vfs_forget *items, size_t n)
{
	if (fs->ops->forget_multi) {
		fs->ops->forget_multi(fs, items, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		VFS_FORGET(fs, items[i].ino, items[i].nlookup);
}

unsigned vfs_mode_to_dt(mode_t mode)
{
	return (mode & S_IFMT) >> 12;
}

int vfs_walk(struct vfs *fs, const struct vfs_ctx *ctx, const char *path,
	     struct vfs_entry *ret)
{
	char name[NAME_MAX + 2];
	struct vfs_entry cur = { .ino = VFS_ROOT_INO };
	bool held = false;
	int r;

	r = VFS_CALL(fs, statx, ctx, VFS_ROOT_INO, VFS_NO_FH, 0, STATX_BASIC_STATS,
		     &cur.attr);
	if (r < 0)
		return r;
	while (*path) {
		size_t len = strcspn(path, "/");
		struct vfs_entry next;

		if (len == 0) {
			path++;
			continue;
		}
		if (len > NAME_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		r = VFS_CALL(fs, lookup, ctx, cur.ino, name, &next);
		if (held)
			VFS_FORGET(fs, cur.ino, 1);
		if (r < 0)
			return r;
		cur = next;
		held = true;
	}
	if (r < 0) {
		if (held)
			VFS_FORGET(fs, cur.ino, 1);
		return r;
	}
	*ret = cur;
	return 0;
}
