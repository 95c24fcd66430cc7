/*
 * ops.c - libfuse low-level requests translated to vfs hooks. The FUSE node
 * id is the vfs inode id (FUSE_ROOT_ID == VFS_ROOT_INO), so no table sits in
 * between; each request is one hook call and one reply.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

static struct ponyfuse *pf_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct vfs *fs_of(fuse_req_t req)
{
	return pf_of(req)->fs;
}

void ponyfuse_ctx(fuse_req_t req, struct vfs_ctx *ctx)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	*ctx = (struct vfs_ctx){ .uid = c->uid, .gid = c->gid, .pid = c->pid,
				 .umask = c->umask };
}

void ponyfuse_statx_to_stat(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim = (struct timespec){ x->stx_atime.tv_sec, x->stx_atime.tv_nsec };
	st->st_mtim = (struct timespec){ x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec };
	st->st_ctim = (struct timespec){ x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec };
}

static void entry_param(struct ponyfuse *pf, const struct vfs_entry *e,
			struct fuse_entry_param *p)
{
	memset(p, 0, sizeof(*p));
	p->ino = e->ino;
	p->generation = e->generation;
	ponyfuse_statx_to_stat(&e->attr, &p->attr);
	p->attr_timeout = pf->opts.timeout;
	p->entry_timeout = pf->opts.timeout;
}

static void reply_entry(fuse_req_t req, int r, const struct vfs_entry *e)
{
	struct fuse_entry_param p;

	if (r < 0) {
		/* A negative entry with a timeout caches "no such name". */
		if (r == -ENOENT && pf_of(req)->opts.timeout > 0) {
			memset(&p, 0, sizeof(p));
			p.entry_timeout = pf_of(req)->opts.timeout;
			fuse_reply_entry(req, &p);
			return;
		}
		fuse_reply_err(req, -r);
		return;
	}
	entry_param(pf_of(req), e, &p);
	if (fuse_reply_entry(req, &p) == -ENOENT) /* interrupted: nobody holds it */
		VFS_FORGET(fs_of(req), e->ino, 1);
}

static void req_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct vfs_ctx ctx;
	struct vfs_entry e;

	ponyfuse_ctx(req, &ctx);
	reply_entry(req, VFS_CALL(fs_of(req), lookup, &ctx, parent, name, &e), &e);
}

static void req_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	atomic_fetch_add_explicit(&pf_of(req)->forgotten, 1, memory_order_relaxed);
	VFS_FORGET(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

/* libfuse's batch is the vfs's, field for field: handed on as it is. */
static_assert(sizeof(struct fuse_forget_data) == sizeof(struct vfs_forget) &&
	      offsetof(struct fuse_forget_data, ino) == offsetof(struct vfs_forget, ino) &&
	      offsetof(struct fuse_forget_data, nlookup) ==
	      offsetof(struct vfs_forget, nlookup), "fuse_forget_data is not vfs_forget");

/* A BATCH_FORGET (forget.c gathers them): one call for the instance. */
static void req_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	atomic_fetch_add_explicit(&pf_of(req)->forgotten, count, memory_order_relaxed);
	vfs_forget_many(fs_of(req), (const struct vfs_forget *)forgets, count);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, int r, const struct statx *x)
{
	struct stat st;

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ponyfuse_statx_to_stat(x, &st);
	fuse_reply_attr(req, &st, pf_of(req)->opts.timeout);
}

static void req_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vfs_ctx ctx;
	struct statx x;

	ponyfuse_ctx(req, &ctx);
	reply_attr(req, VFS_CALL(fs_of(req), statx, &ctx, ino, fi ? fi->fh : VFS_NO_FH, 0,
				 STATX_BASIC_STATS, &x), &x);
}

static void req_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct vfs_setattr a = {
		.valid = (unsigned)to_set, .mode = attr->st_mode, .uid = attr->st_uid,
		.gid = attr->st_gid, .size = (uint64_t)attr->st_size,
		.atime = attr->st_atim, .mtime = attr->st_mtim,
	};
	struct vfs_ctx ctx;
	struct statx x;
	int r;

	ponyfuse_ctx(req, &ctx);
	r = VFS_CALL(fs_of(req), setattr, &ctx, ino, fi ? fi->fh : VFS_NO_FH, &a, &x);
	/* Truncate or chown with KILLPRIV_V2: the kernel left suid to us. */
	if (r == 0)
		r = ponyfuse_kill_suidgid(req, ino, fi ? fi->fh : VFS_NO_FH, &x);
	reply_attr(req, r, &x);
}

static void req_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	struct vfs_ctx ctx;
	int n;

	ponyfuse_ctx(req, &ctx);
	n = VFS_CALL(fs_of(req), readlink, &ctx, ino, buf, sizeof(buf) - 1);
	if (n < 0) {
		fuse_reply_err(req, -n);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void req_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct vfs_ctx ctx;
	struct vfs_entry e;

	ponyfuse_ctx(req, &ctx);
	reply_entry(req, VFS_CALL(fs_of(req), mknod, &ctx, parent, name, mode, rdev, &e), &e);
}

static void req_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct vfs_ctx ctx;
	struct vfs_entry e;

	ponyfuse_ctx(req, &ctx);
	reply_entry(req, VFS_CALL(fs_of(req), mkdir, &ctx, parent, name, mode, &e), &e);
}

static void req_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct vfs_ctx ctx;
	struct vfs_entry e;

	ponyfuse_ctx(req, &ctx);
	reply_entry(req, VFS_CALL(fs_of(req), symlink, &ctx, link, parent, name, &e), &e);
}

static void req_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct vfs_ctx ctx;
	struct vfs_entry e;

	ponyfuse_ctx(req, &ctx);
	reply_entry(req, VFS_CALL(fs_of(req), link, &ctx, ino, newparent, newname, &e), &e);
}

static void req_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	fuse_reply_err(req, -VFS_CALL(fs_of(req), unlink, &ctx, parent, name));
}

static void req_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	fuse_reply_err(req, -VFS_CALL(fs_of(req), rmdir, &ctx, parent, name));
}

static void req_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	fuse_reply_err(req, -VFS_CALL(fs_of(req), rename, &ctx, parent, name, newparent,
				      newname, flags));
}

/* With the writeback cache the kernel reads to fill pages, and does O_APPEND. */
static int open_flags(fuse_req_t req, int flags)
{
	if (pf_of(req)->opts.writeback) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	return flags;
}

/*
 * Whether an open with these flags is served as direct I/O (opts.direct_wronly):
 * a write-only one, which nothing can map or read through, so the page
 * cache has nothing to gain from its writes. Its first write then costs
 * no GETXATTR of security.capability (docs/fuse-requests.md); req_write
 * drops that xattr as the kernel would have.
 */
static bool write_only_direct(const struct ponyfuse *pf, int flags)
{
	return pf->opts.direct_wronly && !pf->opts.writeback && (flags & O_ACCMODE) == O_WRONLY;
}

/*
 * Answers an open (or a create, with p): passed through to the host file
 * when it has one and the kernel takes it (passthrough.c), else served
 * here, through the kernel's page cache. A reply nobody waits for any
 * more (interrupted) releases what it opened.
 */
static void reply_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		       const struct fuse_entry_param *p)
{
	struct ponyfuse *pf = pf_of(req);
	int id = ponyfuse_pt_open(pf, ino, fi->fh);

	/* A passthrough open must not ask to keep a page cache it has none of. */
	fi->keep_cache = !id && !p && pf->opts.timeout > 0 && !pf->opts.reread_on_open;
	/*
	 * The kernel leaves dropping suid/sgid on write to us (KILLPRIV_V2),
	 * but passthrough writes never reach us: a writer that would drop
	 * them has its reads and writes sent here (direct I/O), still on the
	 * backing file for mmap, as the kernel wants every open of the inode.
	 */
	if (id && pf->opts.killpriv && (fi->flags & O_ACCMODE) != O_RDONLY &&
	    !ponyfuse_caller_keeps_suidgid(req))
		fi->direct_io = 1;
	if (!id && write_only_direct(pf, fi->flags))
		fi->direct_io = 1;
	ponyfuse_devio_reply_backing(id);
	if ((p ? fuse_reply_create(req, p, fi) : fuse_reply_open(req, fi)) != -ENOENT)
		return;
	ponyfuse_pt_release(pf, fi->fh);
	VFS_CALL(pf->fs, release, ino, fi->fh);
	if (p)
		VFS_FORGET(pf->fs, ino, 1);
}

static void req_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vfs_ctx ctx;
	uint64_t fh;
	int r;

	ponyfuse_ctx(req, &ctx);
	/* An O_TRUNC open without CAP_FSETID drops suid/sgid first, as
	 * req_write: done after the open, by the instance's own truncation,
	 * the kernel would keep the old mode cached (a write-only open's
	 * direct writes refresh no mode), and nobody would tell it. */
	r = ponyfuse_kill_suidgid(req, ino, VFS_NO_FH, NULL);
	if (r == 0)
		r = VFS_CALL(fs_of(req), open, &ctx, ino, open_flags(req, fi->flags), &fh);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = fh;
	fi->noflush = pf_of(req)->opts.noflush && !pf_of(req)->opts.writeback;
	reply_open(req, ino, fi, NULL);
}

static void req_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param p;
	struct vfs_ctx ctx;
	struct vfs_entry e;
	uint64_t fh;
	int r;

	ponyfuse_ctx(req, &ctx);
	r = VFS_CALL(fs_of(req), create, &ctx, parent, name, mode, open_flags(req, fi->flags),
		     &e, &fh);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = fh;
	fi->noflush = pf_of(req)->opts.noflush && !pf_of(req)->opts.writeback;
	entry_param(pf_of(req), &e, &p);
	reply_open(req, e.ino, fi, &p);
}

/*
 * A read served on a ring whose data is a host file: pread(2) straight into
 * the ring's payload buffer, which the kernel copies into the page cache.
 * Splicing there costs a splice into a pipe and reads out of it (the same
 * one copy, three system calls and the pipe's page references instead of
 * one), on the ring thread that also runs the reader's CPU. Returns false
 * when not on a ring, or the answer does not fit: the caller goes on.
 */
static bool read_into_ring(fuse_req_t req, int fd, size_t size, off_t off)
{
	size_t room, got = 0;
	char *dst = ponyfuse_uring_payload(&room);

	if (!dst || size > room)
		return false;
	/* A short read is the end of the file, as a splice's would be (and
	 * past it an O_DIRECT pread at an unaligned offset would fail). */
	while (got < size) {
		size_t want = size - got;
		ssize_t n = pread(fd, dst + got, want, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fuse_reply_err(req, errno);
			return true;
		}
		got += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	atomic_fetch_add_explicit(&pf_of(req)->uring_direct_reads, 1, memory_order_relaxed);
	fuse_reply_buf(req, dst, got);
	return true;
}

/*
 * Reads from an instance whose data is a host file go by splice: the page
 * cache's pages into a pipe and on to /dev/fuse, no copy through a buffer
 * here (libfuse falls back to read(2) where splicing is off), large ones on
 * a helper thread (readpool.c); on a ring, read_into_ring().
 */
static void req_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	int fd = VFS_CALL(fs_of(req), data_fd, ino, fi->fh);

	if (fd >= 0 && read_into_ring(req, fd, size, off))
		return;
	if (fd >= 0) {
		if (!ponyfuse_readpool_submit(pf_of(req), req, fd, 0, 0, size, off))
			ponyfuse_reply_host_read(req, fd, size, off);
		return;
	}
	if (fs_of(req)->ops->read_parallel &&
	    ponyfuse_readpool_submit(pf_of(req), req, -1, ino, fi->fh, size, off))
		return;
	ponyfuse_reply_vfs_read(req, ino, fi->fh, size, off);
}

/* A READ answered with pieces of the instance's own buffers where it has
 * the data there (vfs read_iov): the kernel copies them into the page
 * cache straight from there (fuse_reply_iov() writes them as one answer),
 * and they are released once it has. */
static void reply_vfs_read_iov(fuse_req_t req, uint64_t ino, uint64_t fh, uint8_t *buf,
			       size_t size, off_t off)
{
	struct vfs *fs = fs_of(req);
	struct iovec iov[VFS_READ_IOV_MAX];
	unsigned niov = 0;
	void *hold = NULL;
	ssize_t n = fs->ops->read_iov(fs, ino, fh, buf, size, off, iov, &niov, &hold);

	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (!niov)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_iov(req, iov, (int)niov);
	if (hold)
		fs->ops->read_release(fs, hold);
}

void ponyfuse_reply_vfs_read(fuse_req_t req, uint64_t ino, uint64_t fh, size_t size, off_t off)
{
	/* Page-aligned, so an instance can read into it around the host's
	 * page cache (ponyfs: an encrypted file's blocks, O_DIRECT). Kept per
	 * thread: an aligned_alloc() of 1 MiB for each READ cut a ponyfs on a
	 * RAID6 volume, whose READs are answered from it, from 1.2-2.5 to 0.3
	 * GB/s (BENCHMARKS.md, session 36). fuse_reply_buf() has written the
	 * answer before this returns, so the next READ may reuse it. A READ
	 * that came over a ring is read straight into its entry's payload
	 * buffer (page-aligned too), where the answer goes: the pieces of it
	 * already in place are not copied again (uring.c), which saved a
	 * copy of each encrypted READ's megabyte (BENCHMARKS.md, session 44). */
	static struct util_thread_buf reply_buf;
	size_t want = ROUND_UP(MAX(size, (size_t)1), (size_t)4096), room;
	uint8_t *buf = ponyfuse_uring_payload(&room);
	ssize_t n;

	if (!buf || room < want)
		buf = util_thread_buf(&reply_buf, want);

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (fs_of(req)->ops->read_iov) {
		reply_vfs_read_iov(req, ino, fh, buf, size, off);
		return;
	}
	n = VFS_CALL(fs_of(req), read, ino, fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, (const char *)buf, (size_t)n);
}

static void req_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	/*
	 * Before the write, as the kernel's file_remove_privs() would: a
	 * write without CAP_FSETID under KILLPRIV_V2 drops suid/sgid here,
	 * telling the kernel its cached mode is stale (the instance's own
	 * write may drop them too, but then nobody would tell it: a direct
	 * write refreshes only the size and times). And a direct write,
	 * which skipped file_remove_privs(), drops security.capability,
	 * whoever writes.
	 */
	n = ponyfuse_kill_suidgid(req, ino, fi->fh, NULL);
	if (n >= 0 && write_only_direct(pf_of(req), fi->flags))
		n = ponyfuse_drop_caps(req, ino);
	if (n >= 0)
		n = VFS_CALL(fs_of(req), write, ino, fi->fh, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void req_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* ENOSYS: the kernel sends no FLUSH again, where FOPEN_NOFLUSH could
	 * not say so (a writeback-cache mount ignores it). */
	if (!fs_of(req)->ops->flush) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fuse_reply_err(req, -VFS_CALL(fs_of(req), flush, ino, fi->fh));
}

static void req_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	ponyfuse_pt_release(pf_of(req), fi->fh);
	VFS_CALL(fs_of(req), release, ino, fi->fh);
	fuse_reply_err(req, 0);
}

static void req_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, -VFS_CALL(fs_of(req), fsync, ino, fi->fh, datasync != 0));
}

static void req_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	fuse_reply_err(req, -VFS_CALL(fs_of(req), fallocate, ino, fi->fh, mode, offset, length));
}

static void req_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vfs_ctx ctx;
	uint64_t fh;
	int r;

	/* ENOSYS once: the kernel sends no OPENDIR and RELEASEDIR again, and
	 * caches listings as cache_readdir below asks. */
	if (pf_of(req)->opts.no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	ponyfuse_ctx(req, &ctx);
	r = VFS_CALL(fs_of(req), opendir, &ctx, ino, &fh);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = fh;
	/* With cached attributes, cached listings too: every change comes
	 * through this mount, and the kernel drops a directory's cache when
	 * it changes, so a second walk of a tree costs no READDIR. */
	if (pf_of(req)->opts.timeout > 0 && !pf_of(req)->opts.reread_on_open)
		fi->cache_readdir = fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		VFS_CALL(fs_of(req), releasedir, ino, fh);
}

static void req_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	VFS_CALL(fs_of(req), releasedir, ino, fi->fh);
	fuse_reply_err(req, 0);
}

static void req_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	fuse_reply_err(req, -VFS_CALL(fs_of(req), fsyncdir, ino, fi->fh, datasync != 0));
}

void ponyfuse_init_ops(struct fuse_lowlevel_ops *ops)
{
	*ops = (struct fuse_lowlevel_ops){
		.init = ponyfuse_init,
		.lookup = req_lookup,
		.forget = req_forget,
		.forget_multi = req_forget_multi,
		.getattr = req_getattr,
		.setattr = req_setattr,
		.readlink = req_readlink,
		.mknod = req_mknod,
		.mkdir = req_mkdir,
		.symlink = req_symlink,
		.link = req_link,
		.unlink = req_unlink,
		.rmdir = req_rmdir,
		.rename = req_rename,
		.open = req_open,
		.create = req_create,
		.read = req_read,
		.write = req_write,
		.flush = req_flush,
		.release = req_release,
		.fsync = req_fsync,
		.fallocate = req_fallocate,
		.opendir = req_opendir,
		.releasedir = req_releasedir,
		.fsyncdir = req_fsyncdir,
	};
	ponyfuse_init_ops_more(ops);
}
