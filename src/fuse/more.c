/*
 * more.c - the FUSE requests about directories, extended attributes and the
 * filesystem as a whole, plus the ioctls that carry what FUSE drops (statx
 * masks and flags, syncfs, fbarrier, the instance's and the front end's
 * counters) and the shutdown ioctl fstests' godown sends
 * (XFS_IOC_GOINGDOWN); the fscrypt ioctls are crypt.c's, and the caller's
 * memory those ioctls reach beyond what FUSE carries is read and written
 * here. readdirplus
 * looks every entry up, so one request fills the kernel's dentry and
 * attribute caches for a whole `ls -l`.
 */
#include <errno.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"
#include "pony/util.h"

struct dirbuf {
	fuse_req_t req;
	struct ponyfuse *pf;
	uint64_t dir;
	bool plus;
	char *buf;
	size_t size, used;
};

/* Takes n bytes of entry, or says the buffer is full (1). */
static int dirbuf_take(struct dirbuf *d, size_t n)
{
	if (n > d->size - d->used)
		return 1;
	d->used += n;
	return 0;
}

/* A READDIRPLUS entry from a looked-up e; "." and ".." (ino 0 in the
 * entry, so the kernel makes no dentry) carry no reference. */
static int dirbuf_fill_plus(void *data, const char *name, const struct vfs_entry *e,
			    uint64_t next)
{
	struct dirbuf *d = data;
	struct fuse_entry_param p = { .attr.st_ino = e->ino, .attr.st_mode = e->attr.stx_mode };
	bool dots = !strcmp(name, ".") || !strcmp(name, "..");
	int full;

	if (!dots) {
		ponyfuse_statx_to_stat(&e->attr, &p.attr);
		p.ino = e->ino;
		p.generation = e->generation;
		p.attr_timeout = p.entry_timeout = d->pf->opts.timeout;
	}
	full = dirbuf_take(d, fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used,
						     name, &p, (off_t)next));
	if (full && !dots)
		VFS_FORGET(d->pf->fs, e->ino, 1);
	return full;
}

/* A READDIR entry; for READDIRPLUS on a filesystem without readdirplus,
 * the entry looked up first. */
static int dirbuf_fill(void *data, const char *name, uint64_t ino, unsigned type,
		       uint64_t next)
{
	struct dirbuf *d = data;
	const struct fuse_ctx *c = fuse_req_ctx(d->req);
	struct vfs_ctx ctx = { .uid = c->uid, .gid = c->gid, .pid = c->pid };
	struct vfs_entry e = { .ino = ino, .attr.stx_mode = (uint16_t)(type << 12) };
	struct stat st = { .st_ino = ino, .st_mode = type << 12 };
	int r;

	if (!d->plus)
		return dirbuf_take(d, fuse_add_direntry(d->req, d->buf + d->used,
							d->size - d->used, name, &st, (off_t)next));
	if (strcmp(name, ".") && strcmp(name, "..")) {
		r = VFS_CALL(d->pf->fs, lookup, &ctx, d->dir, name, &e);
		if (r == -ENOENT)
			return 0;       /* gone since it was listed */
		if (r < 0)
			return r;
	}
	return dirbuf_fill_plus(d, name, &e, next);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct dirbuf d = { .req = req, .pf = fuse_req_userdata(req), .dir = ino,
			    .plus = plus, .size = size };
	struct vfs_ctx ctx = { 0 };
	int r;

	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (plus && d.pf->fs->ops->readdirplus)
		r = d.pf->fs->ops->readdirplus(d.pf->fs, &ctx, ino,
					       d.pf->opts.no_opendir ? VFS_NO_FH : fi->fh,
					       (uint64_t)off, dirbuf_fill_plus, &d);
	else
		r = VFS_CALL(d.pf->fs, readdir, &ctx, ino,
			     d.pf->opts.no_opendir ? VFS_NO_FH : fi->fh, (uint64_t)off,
			     dirbuf_fill, &d);
	/* An error after some entries: hand those over, the error comes next time. */
	if (r < 0 && d.used == 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void pf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void pf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

/*
 * POSIX ACLs: without FUSE_CAP_POSIX_ACL the kernel does not enforce them on
 * a FUSE mount, so offering them as plain xattrs would pretend it does.
 * EOPNOTSUPP says the truth, and ls and getfacl then stop asking on this
 * device: one request per mount, not one per file. A mount with the
 * posix_acl option (the kernel enforces them) passes them through.
 * security.selinux likewise where the mount says the host runs no SELinux:
 * `ls -l` asks for every file's label and, told EOPNOTSUPP, stops asking.
 */
static bool xattr_refused(fuse_req_t req, const char *name)
{
	const struct ponyfuse_options *o = &((struct ponyfuse *)fuse_req_userdata(req))->opts;

	return (!o->posix_acl && !strncmp(name, "system.posix_acl_", 17)) ||
	       (o->no_selinux_xattr && !strcmp(name, "security.selinux"));
}

/* getxattr and listxattr share the size-probe-or-copy protocol. */
static void reply_xattr(fuse_req_t req, int n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void pf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	_cleanup_(freep) char *buf = size ? malloc(size) : NULL;
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (xattr_refused(req, name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	reply_xattr(req, VFS_CALL(((struct ponyfuse *)fuse_req_userdata(req))->fs, getxattr,
				  &ctx, ino, name, buf, size), buf, size);
}

static void pf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	_cleanup_(freep) char *buf = malloc(XATTR_LIST_MAX);
	struct vfs_ctx ctx;
	int n, kept = 0;

	ponyfuse_ctx(req, &ctx);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = VFS_CALL(((struct ponyfuse *)fuse_req_userdata(req))->fs, listxattr, &ctx, ino, buf,
		     XATTR_LIST_MAX);
	for (int i = 0; i < n; i += (int)strlen(buf + i) + 1) {
		size_t l = strlen(buf + i) + 1;

		if (!xattr_refused(req, buf + i)) {
			memmove(buf + kept, buf + i, l);
			kept += (int)l;
		}
	}
	if (n >= 0 && size && (size_t)kept > size)
		n = -ERANGE;
	reply_xattr(req, n < 0 ? n : kept, buf, size);
}

static void pf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	if (xattr_refused(req, name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	fuse_reply_err(req, -VFS_CALL(((struct ponyfuse *)fuse_req_userdata(req))->fs,
				      setxattr, &ctx, ino, name, value, size, flags));
}

static void pf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct vfs_ctx ctx;

	ponyfuse_ctx(req, &ctx);
	if (xattr_refused(req, name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	fuse_reply_err(req, -VFS_CALL(((struct ponyfuse *)fuse_req_userdata(req))->fs,
				      removexattr, &ctx, ino, name));
}

static void pf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int r = VFS_CALL(((struct ponyfuse *)fuse_req_userdata(req))->fs, statfs, ino, &st);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_statfs(req, &st);
}

static void ioctl_statx(fuse_req_t req, struct vfs *fs, fuse_ino_t ino, const void *in_buf,
			size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse_statx_arg a;
	struct vfs_ctx ctx = { 0 };
	int r;

	if (in_bufsz < sizeof(a) || out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&a, in_buf, sizeof(a));
	/* The handle the ioctl came through is a file's or a directory's; statx
	 * by inode is what both mean. */
	r = VFS_CALL(fs, statx, &ctx, ino, VFS_NO_FH, a.flags, a.mask, &a.stx);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

static void ioctl_counters(fuse_req_t req, struct vfs *fs, size_t out_bufsz)
{
	struct ponyfuse_counters_arg a = { { 0 } };
	int r;

	if (out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = VFS_CALL(fs, counters, a.text, sizeof(a.text));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

/* The front end's counters: passthrough state, then requests by kind. */
static void ioctl_requests(fuse_req_t req, struct ponyfuse *pf, size_t out_bufsz)
{
	struct ponyfuse_counters_arg a = { { 0 } };
	size_t size = sizeof(a.text) - 1, len;
	int r;

	if (out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = ponyfuse_pt_counters(pf, a.text, size);
	len = r < 0 ? 0 : MIN((size_t)r, size);
	ponyfuse_devio_counters(pf, a.text + len, size - len);
	fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

void *ponyfuse_ioctl_arg(fuse_req_t req, const void *in_buf, size_t in_bufsz, size_t out_bufsz,
			 size_t size, bool out)
{
	void *a;

	if (in_bufsz < size || (out && out_bufsz < size)) {
		fuse_reply_err(req, EINVAL);
		return NULL;
	}
	a = malloc(size);
	if (!a) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	memcpy(a, in_buf, size);
	return a;
}

/* process_vm_readv or _writev of len bytes at the caller's addr. */
static int caller_memory(fuse_req_t req, void *addr, void *buf, size_t len, bool write)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = addr, .iov_len = len };
	pid_t pid = fuse_req_ctx(req)->pid;
	ssize_t n;

	if (pid <= 0)
		return -EPERM;
	n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
		  : process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	/* A partial transfer ends at an address the caller cannot reach. */
	return n >= 0 || errno == EFAULT ? -EFAULT : -EPERM;
}

int ponyfuse_caller_read(fuse_req_t req, void *addr, void *buf, size_t len)
{
	return caller_memory(req, addr, buf, len, false);
}

/* buf is not const only because struct iovec's base is not; it is only read. */
int ponyfuse_caller_write(fuse_req_t req, void *addr, void *buf, size_t len)
{
	return caller_memory(req, addr, buf, len, true);
}

/*
 * XFS_IOC_GOINGDOWN's flags word stays in the caller: FUSE carries no data
 * in for an _IOR ioctl. The caller is root (checked), so the daemon, root
 * too, may read it; if it cannot, the hardest flavour: no flush.
 */
static unsigned goingdown_flags(fuse_req_t req, void *arg)
{
	uint32_t flags = PONYFUSE_GOINGDOWN_NOLOGFLUSH;

	if (ponyfuse_caller_read(req, arg, &flags, sizeof(flags)) < 0)
		return 0;
	return flags == PONYFUSE_GOINGDOWN_NOLOGFLUSH ? 0 : VFS_SHUTDOWN_FLUSH;
}

static void pf_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct vfs *fs = ((struct ponyfuse *)fuse_req_userdata(req))->fs;
	int r;

	if (ponyfuse_crypt_ioctl(req, ino, cmd, arg, in_buf, in_bufsz, out_bufsz))
		return;
	if (ponyfuse_layout_ioctl(req, ino, cmd, flags, in_buf, in_bufsz, out_bufsz))
		return;
	if (ponyfuse_scrub_ioctl(req, cmd, in_buf, in_bufsz, out_bufsz))
		return;
	if (ponyfuse_dwrite_ioctl(req, ino, cmd, fi, flags, in_buf, in_bufsz, out_bufsz))
		return;
	switch (cmd) {
	case PONYFUSE_IOC_STATX:
		ioctl_statx(req, fs, ino, in_buf, in_bufsz, out_bufsz);
		return;
	case PONYFUSE_IOC_COUNTERS:
		ioctl_counters(req, fs, out_bufsz);
		return;
	case PONYFUSE_IOC_REQUESTS:
		ioctl_requests(req, fuse_req_userdata(req), out_bufsz);
		return;
	case PONYFUSE_IOC_SYNCFS:
		r = VFS_CALL(fs, syncfs);
		break;
	case PONYFUSE_IOC_BARRIER:
		r = flags & FUSE_IOCTL_DIR ? -EISDIR : VFS_CALL(fs, barrier, ino, fi->fh);
		break;
	case PONYFUSE_IOC_GOINGDOWN:
		/* A power cut is the administrator's, as XFS's CAP_SYS_ADMIN check. */
		r = fuse_req_ctx(req)->uid != 0 ? -EPERM
						 : VFS_CALL(fs, shutdown, goingdown_flags(req, arg));
		break;
	default:
		r = -ENOTTY;
		break;
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

void ponyfuse_init(void *userdata, struct fuse_conn_info *conn)
{
	struct ponyfuse *pf = userdata;
	unsigned want = FUSE_CAP_READDIRPLUS | FUSE_CAP_IOCTL_DIR | FUSE_CAP_DONT_MASK |
			FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_ASYNC_READ | FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_SPLICE_WRITE;

	if (pf->opts.writeback)
		want |= FUSE_CAP_WRITEBACK_CACHE;
	if (pf->opts.posix_acl)
		want |= FUSE_CAP_POSIX_ACL;
	if (pf->opts.export_support)
		want |= FUSE_CAP_EXPORT_SUPPORT;
	conn->want |= want & conn->capable;
	/* readdirplus always: pony's lookups are cheap, LOOKUP round trips are not. */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* Synchronous direct I/O: with FUSE_CAP_ASYNC_DIO an AIO or io_uring
	 * direct write completes after the kernel dropped the file's cached
	 * pages, so a buffered reader running meanwhile leaves pages with the
	 * old data behind (generic/451). Without it the kernel drops them
	 * after the write reached us. */
	conn->want &= ~FUSE_CAP_ASYNC_DIO;
	conn->max_readahead = ponyfuse_readahead(pf);
	/* libfuse wants the mount option's value again here (mount.c). */
	conn->max_read = pf->max_read;
}

void ponyfuse_init_ops_more(struct fuse_lowlevel_ops *ops)
{
	ops->readdir = pf_readdir;
	ops->readdirplus = pf_readdirplus;
	ops->getxattr = pf_getxattr;
	ops->listxattr = pf_listxattr;
	ops->setxattr = pf_setxattr;
	ops->removexattr = pf_removexattr;
	ops->statfs = pf_statfs;
	ops->ioctl = pf_ioctl;
}
