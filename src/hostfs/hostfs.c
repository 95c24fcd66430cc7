/*
 * hostfs.c - a host directory as a vfs instance: each hook is the matching
 * *at() system call on the inode's O_PATH descriptor (or its /proc/self/fd
 * path where the kernel has no *at() form), so hostfs adds no policy of its
 * own. New names are created with the caller's fsuid/fsgid when running as
 * root, switched per thread with the raw syscalls (glibc's setfsuid would be
 * fine too, but setgroups-style process-wide helpers are not).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "internal.h"
#include "pony/util.h"

#define RO_CHECK(h) do { if ((h)->flags & HOSTFS_READONLY) return -EROFS; } while (0)
#define INODE(fs, ino) hostfs_inode_get(hostfs_of(fs), (ino))
/* An O_PATH descriptor of ino; tmp (a _cleanup_(closep) int) closes it if new. */
#define INODE_FD(fs, ino, tmp) hostfs_inode_fd(hostfs_of(fs), INODE(fs, ino), &(tmp))

struct creds { int uid, gid; bool switched; };

/* Become the caller for a create: only root can, and only root needs to. */
static void creds_enter(const struct vfs_ctx *ctx, struct creds *save)
{
	static int euid = -1;

	save->switched = false;
	if (euid < 0)
		euid = (int)geteuid();
	if (euid != 0 || (ctx->uid == 0 && ctx->gid == 0))
		return;
	save->gid = (int)syscall(SYS_setfsgid, ctx->gid);
	save->uid = (int)syscall(SYS_setfsuid, ctx->uid);
	save->switched = true;
}

static void creds_leave(struct creds *save)
{
	if (!save->switched)
		return;
	syscall(SYS_setfsuid, save->uid);
	syscall(SYS_setfsgid, save->gid);
}

static int hostfs_lookup(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, struct vfs_entry *ret)
{
	return hostfs_do_lookup_known(hostfs_of(fs), INODE(fs, parent), name, ret);
}

static int hostfs_statx(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			uint64_t fh, unsigned flags, unsigned mask, struct statx *ret)
{
	_cleanup_(closep) int tmp = -1;
	int fd = fh != VFS_NO_FH ? (int)fh : INODE_FD(fs, ino, tmp);

	if (fd < 0)
		return fd;
	flags &= AT_STATX_SYNC_TYPE;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | (int)flags, mask, ret) < 0)
		return -errno;
	return 0;
}

static int setattr_times(int fd, const struct vfs_setattr *a)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

	if (a->valid & VFS_SET_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (a->valid & VFS_SET_ATIME)
		ts[0] = a->atime;
	if (a->valid & VFS_SET_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (a->valid & VFS_SET_MTIME)
		ts[1] = a->mtime;
	if (ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT)
		return 0;
	/* Works on O_PATH descriptors, symlinks included. */
	return utimensat(fd, "", ts, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

/* chmod of an O_PATH descriptor: fchmodat2(AT_EMPTY_PATH) where the kernel
 * has it (6.6), saving the /proc path walk; else the /proc path. */
static int chmod_fd(int fd, const char *path, mode_t mode)
{
	static bool no_fchmodat2;

	if (!no_fchmodat2) {
		if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != ENOSYS && errno != EINVAL)
			return -1;
		no_fchmodat2 = true;
	}
	return chmod(path, mode);
}

static int hostfs_setattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  uint64_t fh, const struct vfs_setattr *a, struct statx *ret)
{
	_cleanup_(closep) int tmp = -1;
	int ifd = INODE_FD(fs, ino, tmp);
	char path[32];
	int r;

	RO_CHECK(hostfs_of(fs));
	if (ifd < 0)
		return ifd;
	hostfs_fd_path(ifd, path);
	if (a->valid & VFS_SET_MODE) {
		r = fh != VFS_NO_FH ? fchmod((int)fh, a->mode) : chmod_fd(ifd, path, a->mode);
		if (r < 0)
			return -errno;
	}
	if (a->valid & (VFS_SET_UID | VFS_SET_GID)) {
		uid_t uid = a->valid & VFS_SET_UID ? a->uid : (uid_t)-1;
		gid_t gid = a->valid & VFS_SET_GID ? a->gid : (gid_t)-1;

		if (fchownat(ifd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if (a->valid & VFS_SET_SIZE) {
		r = fh != VFS_NO_FH ? ftruncate((int)fh, (off_t)a->size)
				    : truncate(path, (off_t)a->size);
		if (r < 0)
			return -errno;
	}
	r = setattr_times(fh != VFS_NO_FH ? (int)fh : ifd, a);
	if (r < 0)
		return r;
	return hostfs_statx(fs, ctx, ino, fh, 0, STATX_BASIC_STATS | STATX_BTIME, ret);
}

static int hostfs_readlink(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			   char *buf, size_t size)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	ssize_t n = fd < 0 ? fd : readlinkat(fd, "", buf, size);

	return n < 0 ? (fd < 0 ? fd : -errno) : (int)n;
}

/* mknod/mkdir/symlink share this: create as the caller, then look it up. */
enum make_kind { MAKE_NOD, MAKE_DIR, MAKE_SYMLINK };

static int make_node(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		     const char *name, enum make_kind kind, mode_t mode, dev_t rdev,
		     const char *target, struct vfs_entry *ret)
{
	struct hostfs *h = hostfs_of(fs);
	struct hostfs_inode *dir = hostfs_inode_get(h, parent);
	struct creds save;
	int r = vfs_check_name(name);

	if (r < 0)
		return r;
	RO_CHECK(h);
	if (dir->fd < 0) /* only non-directories are kept as handles */
		return -ENOTDIR;
	mode &= ~ctx->umask | S_IFMT;
	creds_enter(ctx, &save);
	if (kind == MAKE_DIR)
		r = mkdirat(dir->fd, name, mode);
	else if (kind == MAKE_SYMLINK)
		r = symlinkat(target, dir->fd, name);
	else
		r = mknodat(dir->fd, name, mode, rdev);
	r = r < 0 ? -errno : 0;
	creds_leave(&save);
	return r < 0 ? r : hostfs_do_lookup(h, dir, name, ret);
}

static int hostfs_mknod(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name, mode_t mode, dev_t rdev, struct vfs_entry *ret)
{
	return make_node(fs, ctx, parent, name, MAKE_NOD, mode, rdev, NULL, ret);
}

static int hostfs_mkdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name, mode_t mode, struct vfs_entry *ret)
{
	return make_node(fs, ctx, parent, name, MAKE_DIR, mode, 0, NULL, ret);
}

static int hostfs_symlink(struct vfs *fs, const struct vfs_ctx *ctx, const char *target,
			  uint64_t parent, const char *name, struct vfs_entry *ret)
{
	return make_node(fs, ctx, parent, name, MAKE_SYMLINK, 0, 0, target, ret);
}

/*
 * linkat(2) of a held descriptor. AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH;
 * the /proc/self/fd path does not, but costs a walk through procfs (a
 * whiteout per removed lower file goes this way). The first refusal of
 * AT_EMPTY_PATH turns it off for the instance.
 */
static int link_by_fd(struct hostfs *h, int fd, int dirfd, const char *name)
{
	char path[32];

	if (!atomic_load_explicit(&h->no_link_empty_path, memory_order_relaxed)) {
		if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != EPERM && errno != ENOENT && errno != EINVAL)
			return -1;
		atomic_store_explicit(&h->no_link_empty_path, true, memory_order_relaxed);
	}
	return linkat(AT_FDCWD, hostfs_fd_path(fd, path), dirfd, name, AT_SYMLINK_FOLLOW);
}

static int hostfs_link(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		       uint64_t newparent, const char *newname, struct vfs_entry *ret)
{
	struct hostfs *h = hostfs_of(fs);
	struct hostfs_inode *dir = hostfs_inode_get(h, newparent);
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	int r = vfs_check_name(newname);

	if (r < 0)
		return r;
	RO_CHECK(h);
	if (fd < 0)
		return fd;
	if (dir->fd < 0)
		return -ENOTDIR;
	if (link_by_fd(h, fd, dir->fd, newname) < 0)
		return -errno;
	if (!ret)
		return 0;
	/* The new name is ino itself: its descriptor says the new link count,
	 * no lookup of the name (an open, a statx and a close) needed. */
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
		  &ret->attr) < 0)
		return -errno;
	hostfs_inode_ref(h, ino);
	ret->ino = ino;
	ret->generation = 0;
	return 0;
}

static int remove_name(struct vfs *fs, uint64_t parent, const char *name, int flags)
{
	int r = vfs_check_name(name);

	if (r < 0)
		return r;
	RO_CHECK(hostfs_of(fs));
	if (INODE(fs, parent)->fd < 0)
		return -ENOTDIR;
	return unlinkat(INODE(fs, parent)->fd, name, flags) < 0 ? -errno : 0;
}

static int hostfs_unlink(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name)
{
	return remove_name(fs, parent, name, 0);
}

static int hostfs_rmdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name)
{
	return remove_name(fs, parent, name, AT_REMOVEDIR);
}

static int hostfs_rename(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, uint64_t newparent, const char *newname,
			 unsigned flags)
{
	int r = vfs_check_name(name);

	if (r == 0)
		r = vfs_check_name(newname);
	if (r < 0)
		return r;
	RO_CHECK(hostfs_of(fs));
	if (INODE(fs, parent)->fd < 0 || INODE(fs, newparent)->fd < 0)
		return -ENOTDIR;
	if (renameat2(INODE(fs, parent)->fd, name, INODE(fs, newparent)->fd, newname,
		      flags) < 0)
		return -errno;
	return 0;
}

static int hostfs_open(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		       int flags, uint64_t *ret_fh)
{
	_cleanup_(closep) int tmp = -1;
	int ifd = INODE_FD(fs, ino, tmp);
	char path[32];
	int fd;

	if ((hostfs_of(fs)->flags & HOSTFS_READONLY) &&
	    ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
		return -EROFS;
	if (ifd < 0)
		return ifd;
	fd = open(hostfs_fd_path(ifd, path),
		  (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fh = (uint64_t)fd;
	return 0;
}

static int hostfs_create(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, mode_t mode, int flags,
			 struct vfs_entry *ret, uint64_t *ret_fh)
{
	struct hostfs *h = hostfs_of(fs);
	struct hostfs_inode *dir = hostfs_inode_get(h, parent);
	struct creds save;
	int fd, r = vfs_check_name(name);

	if (r < 0)
		return r;
	RO_CHECK(h);
	if (dir->fd < 0)
		return -ENOTDIR;
	creds_enter(ctx, &save);
	fd = openat(dir->fd, name, ((flags | O_CREAT) & ~O_NOFOLLOW) | O_CLOEXEC,
		    mode & ~ctx->umask);
	r = fd < 0 ? -errno : 0;
	creds_leave(&save);
	if (r < 0)
		return r;
	r = hostfs_do_lookup(h, dir, name, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fh = (uint64_t)fd;
	return 0;
}

static ssize_t hostfs_read(struct vfs *fs, uint64_t ino, uint64_t fh, void *buf,
			   size_t size, off_t offset)
{
	ssize_t n = pread((int)fh, buf, size, offset);

	return n < 0 ? -errno : n;
}

static int hostfs_data_fd(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return (int)fh;
}

static ssize_t hostfs_write(struct vfs *fs, uint64_t ino, uint64_t fh, const void *buf,
			    size_t size, off_t offset)
{
	ssize_t n = pwrite((int)fh, buf, size, offset);

	return n < 0 ? -errno : n;
}

static int hostfs_flush(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	/* close(dup()) so the host sees a close (NFS-style flush, POSIX locks). */
	int fd = dup((int)fh);

	if (fd < 0)
		return -errno;
	return close(fd) < 0 ? -errno : 0;
}

static int hostfs_fsync(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync)
{
	int r = datasync ? fdatasync((int)fh) : fsync((int)fh);

	return r < 0 ? -errno : 0;
}

static int hostfs_release(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	close((int)fh);
	return 0;
}

static int hostfs_fallocate(struct vfs *fs, uint64_t ino, uint64_t fh, int mode,
			    off_t offset, off_t length)
{
	RO_CHECK(hostfs_of(fs));
	return fallocate((int)fh, mode, offset, length) < 0 ? -errno : 0;
}

/* An open directory: host cookies are the host filesystem's d_off values. */
struct hostfs_dir {
	DIR *dp;
	uint64_t pos;           /* the cookie dp is at */
	pthread_mutex_t lock;
};

static int hostfs_opendir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  uint64_t *ret_fh)
{
	struct hostfs_dir *d = calloc(1, sizeof(*d));
	int fd;

	if (!d)
		return -ENOMEM;
	if (INODE(fs, ino)->fd < 0) {
		free(d);
		return -ENOTDIR;
	}
	fd = openat(INODE(fs, ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		free(d);
		return r;
	}
	pthread_mutex_init(&d->lock, NULL);
	*ret_fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static int readdir_locked(struct hostfs_dir *d, uint64_t cookie, vfs_filldir_t fill,
			  void *data)
{
	if (cookie != d->pos) {
		if (cookie == 0)
			rewinddir(d->dp);
		else
			seekdir(d->dp, (long)cookie);
		d->pos = cookie;
	}
	for (;;) {
		struct dirent *de;
		int r;

		errno = 0;
		de = readdir(d->dp);
		if (!de)
			return -errno;
		r = fill(data, de->d_name, de->d_ino, de->d_type, (uint64_t)de->d_off);
		if (r != 0) {
			/* Not taken: the next call starts at it again. */
			seekdir(d->dp, (long)d->pos);
			return r < 0 ? r : 0;
		}
		d->pos = (uint64_t)de->d_off;
	}
}

static int hostfs_readdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  uint64_t fh, uint64_t cookie, vfs_filldir_t fill, void *data)
{
	struct hostfs_dir *d = (struct hostfs_dir *)(uintptr_t)fh;
	int r;

	pthread_mutex_lock(&d->lock);
	r = readdir_locked(d, cookie, fill, data);
	pthread_mutex_unlock(&d->lock);
	return r;
}

static int hostfs_releasedir(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	struct hostfs_dir *d = (struct hostfs_dir *)(uintptr_t)fh;

	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static int hostfs_fsyncdir(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync)
{
	struct hostfs_dir *d = (struct hostfs_dir *)(uintptr_t)fh;

	return fsync(dirfd(d->dp)) < 0 ? -errno : 0;
}

/* The /proc path of an O_PATH descriptor resolves to the inode itself,
 * symlinks included, so the following xattr calls reach the right inode. */
static int hostfs_getxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			   const char *name, void *buf, size_t size)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	char path[32];
	ssize_t n = fd < 0 ? fd : getxattr(hostfs_fd_path(fd, path), name, buf, size);

	return n < 0 ? (fd < 0 ? fd : -errno) : (int)n;
}

static int hostfs_setxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			   const char *name, const void *value, size_t size, int flags)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	char path[32];

	RO_CHECK(hostfs_of(fs));
	if (fd < 0)
		return fd;
	if (setxattr(hostfs_fd_path(fd, path), name, value, size, flags) < 0)
		return -errno;
	return 0;
}

static int hostfs_listxattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			    char *buf, size_t size)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	char path[32];
	ssize_t n = fd < 0 ? fd : listxattr(hostfs_fd_path(fd, path), buf, size);

	return n < 0 ? (fd < 0 ? fd : -errno) : (int)n;
}

static int hostfs_removexattr(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			      const char *name)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);
	char path[32];

	RO_CHECK(hostfs_of(fs));
	if (fd < 0)
		return fd;
	if (removexattr(hostfs_fd_path(fd, path), name) < 0)
		return -errno;
	return 0;
}

static int hostfs_statfs(struct vfs *fs, uint64_t ino, struct statvfs *ret)
{
	_cleanup_(closep) int tmp = -1;
	int fd = INODE_FD(fs, ino, tmp);

	if (fd < 0)
		return fd;
	return fstatvfs(fd, ret) < 0 ? -errno : 0;
}

static int hostfs_syncfs(struct vfs *fs)
{
	/* syncfs(2) refuses O_PATH descriptors: open the root for real. */
	_cleanup_(closep) int fd = openat(hostfs_of(fs)->root.fd, ".",
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return syncfs(fd) < 0 ? -errno : 0;
}

/* The host gives no ordering without waiting; fdatasync is the honest barrier. */
static int hostfs_barrier(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return fdatasync((int)fh) < 0 ? -errno : 0;
}

static void hostfs_destroy(struct vfs *fs)
{
	struct hostfs *h = hostfs_of(fs);

	hostfs_inodes_free(h);
	close(h->root.fd);
	if (h->mount_fd >= 0)
		close(h->mount_fd);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static const struct vfs_ops hostfs_ops = {
	.version = VFS_OPS_VERSION,
	.name = "hostfs",
	.destroy = hostfs_destroy,
	.lookup = hostfs_lookup,
	.forget = hostfs_forget,
	.statx = hostfs_statx,
	.setattr = hostfs_setattr,
	.readlink = hostfs_readlink,
	.mknod = hostfs_mknod,
	.mkdir = hostfs_mkdir,
	.symlink = hostfs_symlink,
	.link = hostfs_link,
	.unlink = hostfs_unlink,
	.rmdir = hostfs_rmdir,
	.rename = hostfs_rename,
	.open = hostfs_open,
	.create = hostfs_create,
	.read = hostfs_read,
	.write = hostfs_write,
	.flush = hostfs_flush,
	.fsync = hostfs_fsync,
	.release = hostfs_release,
	.fallocate = hostfs_fallocate,
	.opendir = hostfs_opendir,
	.readdir = hostfs_readdir,
	.releasedir = hostfs_releasedir,
	.fsyncdir = hostfs_fsyncdir,
	.getxattr = hostfs_getxattr,
	.setxattr = hostfs_setxattr,
	.listxattr = hostfs_listxattr,
	.removexattr = hostfs_removexattr,
	.statfs = hostfs_statfs,
	.syncfs = hostfs_syncfs,
	.barrier = hostfs_barrier,
	.data_fd = hostfs_data_fd,
	.encode_fh = hostfs_encode_fh,
	.decode_fh = hostfs_decode_fh,
};

int hostfs_new(const char *path, unsigned flags, struct vfs **ret)
{
	struct hostfs *h = calloc(1, sizeof(*h));
	struct stat st;

	if (!h)
		return -ENOMEM;
	h->root.fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (h->root.fd < 0 || fstat(h->root.fd, &st) < 0) {
		int r = -errno;

		if (h->root.fd >= 0)
			close(h->root.fd);
		free(h);
		return r;
	}
	h->vfs.ops = &hostfs_ops;
	h->root.dev = st.st_dev;
	h->root.ino = st.st_ino;
	h->root.nlookup = 1;
	h->flags = flags;
	hostfs_handles_probe(h);
	hostfs_uuid_probe(h);
	/* Held for a hash lookup at a time, by the threads of a union (FUSE's,
	 * its forgets', its prefetch). */
	util_mutex_init_adaptive(&h->lock);
	*ret = &h->vfs;
	return 0;
}

int hostfs_attach(struct vfs *fs, const char *path, struct vfs_entry *ret)
{
	struct hostfs *h = hostfs_of(fs);
	_cleanup_(closep) int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_dev != h->root.dev)
		return -EXDEV;
	/* ".." of the directory, then its own name: one table entry per inode. */
	_cleanup_(freep) char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	char *slash = strrchr(copy, '/');
	const char *name = slash ? slash + 1 : copy;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	struct hostfs_inode parent = { .fd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC) };
	if (parent.fd < 0)
		return -errno;
	int r = hostfs_do_lookup(h, &parent, name, ret);
	close(parent.fd);
	return r;
}

int hostfs_fh_fd(uint64_t fh)
{
	return (int)fh;
}
