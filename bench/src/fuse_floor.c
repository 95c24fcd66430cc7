/*
 * fuse_floor.c - bench/union's floor: a FUSE filesystem that does no storage
 * work at all, to measure the best any FUSE filesystem can do on this
 * machine for the union rows (untar, rm -rf, stat of a tree). Names and
 * attributes live in memory (a hash of (parent, name) and a node array,
 * fuse_floor_tree.c);
 * file contents are not kept (reads return a fixed pattern). It uses every
 * kernel option that saves a round trip, whether or not a real filesystem could:
 * day-long entry and attribute timeouts with negative entries, readdirplus
 * always, permission checks left to the daemon (none here), HANDLE_KILLPRIV,
 * and ENOSYS for OPEN, OPENDIR, CREATE, FLUSH and the xattr
 * requests, so the kernel stops sending them (no_open: no OPEN or
 * RELEASE per file; no_create: MKNOD then no OPEN; no_getxattr: no
 * security.capability question per write or chown).
 *
 * --union: the floor of a filesystem that keeps what the issue asks of a
 * union, and so of pony: the kernel's permission checks (default_permissions,
 * with allow_other, as pony mounts as root: a directory each unlink or create
 * made stale then costs a GETATTR before the next) and xattrs (GETXATTR
 * answered "no such attribute", not ENOSYS, so the kernel keeps asking for
 * security.capability on a file's first write and on chown). Everything
 * else as above.
 *
 * --ponyfs: bench/ponyfs's floor: what keeping ponyfs's semantics costs
 * any FUSE filesystem. The kernel's permission checks (default_permissions,
 * and allow_other,suid,dev as root, as src/fuse/mount.c mounts); POSIX ACLs
 * enforced by the kernel (it asks for a file's system.posix_acl_* once);
 * xattrs answered but none kept (SETXATTR succeeds, GETXATTR says "no such
 * attribute"); OPEN, CREATE, FLUSH, FSYNC, RELEASE, OPENDIR, RELEASEDIR
 * answered (ponyfs tracks open files); INIT as
 * src/fuse/more.c's ponyfuse_init asks; RENAME (replace, NOREPLACE); an
 * empty start. What ponyfs asks the kernel for beyond that comes as flags,
 * which bench/ponyfs takes from the live pony mount and from mount_run in
 * src/cli/cmd_ponyfs.c: -o OPTS (mount options, instead of the ones above),
 * --timeout S (entries, negative ones too, and attributes; 1 s by default,
 * as ponyfs), --writeback (the kernel's writeback cache) and --killpriv
 * (KILLPRIV_V2 through pony's transport: no GETATTR before a chown; the
 * floor keeps no data, so it has no bits to drop) and --noflush
 * (FOPEN_NOFLUSH on every open: no FLUSH at close) and --direct-wronly
 * (FOPEN_DIRECT_IO on write-only opens: no GETXATTR of security.capability
 * before a new file's first write; the floor keeps no xattrs to drop).
 * One thread, as ponyfs (max_threads 1).
 *
 * --io-uring: requests over pony's FUSE-over-io_uring transport (a ring and
 * thread per CPU, src/fuse/uring.c) where the kernel offers it; every
 * request then takes one lock, as several threads serve at once.
 *
 * Usage: fuse_floor [-d] [--union | --ponyfs [--timeout S] [--writeback] [--killpriv]
 *        [--noflush] [--direct-wronly] [-o OPTS]]
 *        [--io-uring] [--dirs D --per P --rm R --big MB] MNT
 * (foreground: the tree of bench/union's lower, tree/dNNNN/fNN of D x P
 * small files, rmme/sNNN/rNNNNN of R files and a file "big" of MB MiB,
 * none with --ponyfs; unmount with fusermount3 -u, then it prints how many
 * requests of each kind it had). Bad usage exits 2.
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <errno.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuse_floor.h"
#include "pony/fuse.h"

/* What the floor keeps of a real filesystem's duties (see the top). */
static enum { DUTIES_NONE, DUTIES_UNION, DUTIES_PONYFS } duties;
static double timeout = 86400.0;        /* --timeout; a day unless --ponyfs */
static bool writeback;                  /* --writeback (--ponyfs only) */
static bool noflush;                    /* --noflush (--ponyfs only) */
static bool direct_wronly;              /* --direct-wronly (--ponyfs only) */
static unsigned max_read;               /* -o max_read=N: libfuse wants it in INIT too */

/* Requests handled, by kind: printed on stderr at exit (bench/union's
 * requests-per-file figure for the floor). */
enum { R_LOOKUP, R_GETATTR, R_SETATTR, R_MAKE, R_READLINK, R_REMOVE, R_WRITE, R_READ,
       R_NOSYS, R_RELEASE, R_READDIR, R_STATFS, R_FORGET, R_XATTR, R_OPEN, R_CREATE,
       R_RENAME, R_FLUSH, R_FSYNC, R_KINDS };
static const char *const kind_names[R_KINDS] = {
	"lookup", "getattr", "setattr", "mknod/mkdir/symlink", "readlink", "unlink/rmdir",
	"write", "read", "enosys", "release", "readdir", "statfs", "forget", "xattr",
	"open/opendir", "create", "rename", "flush", "fsync",
};
static unsigned long counts[R_KINDS];

/* One request at a time: COUNT(kind) at the top of a handler counts it and
 * holds the lock until the handler returns. */
static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;
static void serial_unlock(bool *held)
{
	if (*held)
		pthread_mutex_unlock(&serial);
}
#define COUNT(kind) \
	bool serial_held_ __attribute__((cleanup(serial_unlock))) = \
		(pthread_mutex_lock(&serial), true); \
	counts[kind]++

static void entry_of(uint64_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	if (ino)
		e->attr = nodes[ino].st;
	e->attr_timeout = e->entry_timeout = timeout;
}

/* --ponyfs: what src/fuse/more.c's ponyfuse_init asks for, with the
 * options pony mount gives it (posix_acl, export_support; the writeback
 * cache only with --writeback). */
static void init_ponyfs(struct fuse_conn_info *conn)
{
	unsigned want = FUSE_CAP_READDIRPLUS | FUSE_CAP_IOCTL_DIR | FUSE_CAP_DONT_MASK |
			FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_ASYNC_READ | FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_POSIX_ACL | FUSE_CAP_EXPORT_SUPPORT;

	if (writeback)
		want |= FUSE_CAP_WRITEBACK_CACHE;
	conn->want |= want & conn->capable;
	conn->want &= ~(FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_ASYNC_DIO | FUSE_CAP_HANDLE_KILLPRIV);
	if (!writeback)
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	conn->max_read = max_read;
}

static void fl_init(void *data, struct fuse_conn_info *conn)
{
	if (duties == DUTIES_PONYFS) {
		init_ponyfs(conn);
		return;
	}
	/* HANDLE_KILLPRIV: no GETATTR before each chown to recompute suid
	 * bits (which this floor then does not drop: it keeps no data). */
	conn->want |= (FUSE_CAP_READDIRPLUS | FUSE_CAP_PARALLEL_DIROPS |
		       FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_ASYNC_READ |
		       FUSE_CAP_HANDLE_KILLPRIV) & conn->capable;
	conn->want &= ~(FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_WRITEBACK_CACHE);
}

static void fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	COUNT(R_LOOKUP);
	struct slot *s = slot_find(parent, name, false);

	entry_of(s ? s->ino : 0, &e);   /* ino 0: a cached negative entry */
	fuse_reply_entry(req, &e);
}

static void fl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	COUNT(R_FORGET);
	fuse_reply_none(req);
}

static void fl_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	COUNT(R_FORGET);
	fuse_reply_none(req);
}

static void fl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(R_GETATTR);
	fuse_reply_attr(req, &nodes[ino].st, timeout);
}

static void fl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int set,
		       struct fuse_file_info *fi)
{
	COUNT(R_SETATTR);
	struct stat *st = &nodes[ino].st;

	if (set & FUSE_SET_ATTR_MODE)
		st->st_mode = (st->st_mode & S_IFMT) | (a->st_mode & 07777);
	if (set & FUSE_SET_ATTR_UID)
		st->st_uid = a->st_uid;
	if (set & FUSE_SET_ATTR_GID)
		st->st_gid = a->st_gid;
	if (set & FUSE_SET_ATTR_SIZE)
		st->st_size = a->st_size;
	if (set & FUSE_SET_ATTR_ATIME)
		st->st_atim = a->st_atim;
	if (set & FUSE_SET_ATTR_MTIME)
		st->st_mtim = a->st_mtim;
	fuse_reply_attr(req, st, timeout);
}

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fuse_entry_param e;

	COUNT(R_MAKE);
	if (slot_find(parent, name, false)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	entry_of(node_new(parent, name, mode & ~c->umask, c->uid, c->gid), &e);
	fuse_reply_entry(req, &e);
}

static void fl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	make(req, parent, name, mode);
}

static void fl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, mode | S_IFDIR);
}

static void fl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, S_IFLNK | 0777);
}

static void fl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	COUNT(R_READLINK);
	fuse_reply_readlink(req, "x");
}

/* 0 when the node of s may go (as unlink, rmdir or a rename over it). */
static int removable(const struct slot *s, bool dir)
{
	const struct node *n = &nodes[s->ino];

	if (S_ISDIR(n->st.st_mode) != dir)
		return dir ? ENOTDIR : EISDIR;
	return dir && n->nlive ? ENOTEMPTY : 0;
}

static void drop(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	COUNT(R_REMOVE);
	struct slot *s = slot_find(parent, name, false);
	int r = s ? removable(s, dir) : ENOENT;

	if (!r) {
		if (!dir)
			nodes[s->ino].st.st_nlink = 0;
		name_drop(s);
	}
	fuse_reply_err(req, r);
}

static void fl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, false);
}

static void fl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, true);
}

/* Plain and RENAME_NOREPLACE; EXCHANGE and WHITEOUT are not served. */
static void fl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	COUNT(R_RENAME);
	struct slot *s = slot_find(parent, name, false);
	struct slot *t = slot_find(newparent, newname, false);
	uint64_t ino;
	int r = 0;

	if (!s)
		r = ENOENT;
	else if (flags & ~RENAME_NOREPLACE)
		r = EINVAL;
	else if (t && flags & RENAME_NOREPLACE)
		r = EEXIST;
	else if (t && t != s)
		r = removable(t, S_ISDIR(nodes[s->ino].st.st_mode));
	if (r || t == s) {
		fuse_reply_err(req, r);
		return;
	}
	if (t) {
		if (!S_ISDIR(nodes[t->ino].st.st_mode))
			nodes[t->ino].st.st_nlink = 0;
		name_drop(t);
	}
	ino = s->ino;
	name_drop(s);
	name_add(newparent, newname, ino);
	fuse_reply_err(req, 0);
}

static void fl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	COUNT(R_WRITE);
	if (off + (off_t)size > nodes[ino].st.st_size)
		nodes[ino].st.st_size = off + (off_t)size;
	fuse_reply_write(req, size);
}

/* What every READ answers: a byte pattern written once at start, not
 * untouched zeros, whose pages would all be the kernel's one zero page and
 * make the reply's copy cheaper than any real filesystem's (bench/ponyfs's
 * seq_read_vs_fuse_floor). */
static char read_data[1 << 20];

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	COUNT(R_READ);
	off_t end = nodes[ino].st.st_size;

	size = off >= end ? 0 : (size_t)(end - off) < size ? (size_t)(end - off) : size;
	fuse_reply_buf(req, read_data, size < sizeof(read_data) ? size : sizeof(read_data));
}

static void fl_nosys(fuse_req_t req)
{
	COUNT(R_NOSYS);
	fuse_reply_err(req, ENOSYS);
}

/* Requests only --ponyfs answers: the other floors say ENOSYS once, and the
 * kernel stops sending them. */
static bool not_ponyfs(fuse_req_t req)
{
	if (duties == DUTIES_PONYFS)
		return false;
	fl_nosys(req);
	return true;
}

/* A write-only open as direct I/O, as src/fuse/ops.c's write_only_direct(). */
static bool write_only_direct(int flags)
{
	return direct_wronly && !writeback && (flags & O_ACCMODE) == O_WRONLY;
}

/* Open files and listings keep their page cache while attributes are
 * cached, as src/fuse/ops.c's reply_open and req_opendir ask. */
static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_OPEN);
	if (fi->flags & O_TRUNC)
		nodes[ino].st.st_size = 0;
	fi->fh = ino;
	fi->keep_cache = timeout > 0;
	fi->noflush = noflush;
	fi->direct_io = write_only_direct(fi->flags);
	fuse_reply_open(req, fi);
}

static void fl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_OPEN);
	fi->fh = ino;
	fi->cache_readdir = fi->keep_cache = timeout > 0;
	fuse_reply_open(req, fi);
}

static void fl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_CREATE);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct slot *s = slot_find(parent, name, false);
	struct fuse_entry_param e;

	if (s && fi->flags & O_EXCL) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	entry_of(s ? s->ino : node_new(parent, name, mode & ~c->umask, c->uid, c->gid), &e);
	fi->fh = e.ino;
	fi->keep_cache = timeout > 0;
	fi->noflush = noflush;
	fi->direct_io = write_only_direct(fi->flags);
	fuse_reply_create(req, &e, fi);
}

static void fl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_FLUSH);
	fuse_reply_err(req, 0);
}

static void fl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_FSYNC);
	fuse_reply_err(req, 0);
}

static void fl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(R_RELEASE);
	fuse_reply_err(req, 0);
}

/* With --union and --ponyfs, files have xattrs, just none kept. --union
 * refuses POSIX ACLs and SELinux labels as pony union's front end does
 * (src/fuse/more.c), so ls stops asking for them; ponyfs keeps both. */
static void fl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (duties == DUTIES_NONE) {
		fl_nosys(req);
		return;
	}
	COUNT(R_XATTR);
	if (duties == DUTIES_UNION &&
	    (!strncmp(name, "system.posix_acl_", 17) || !strcmp(name, "security.selinux")))
		fuse_reply_err(req, EOPNOTSUPP);
	else
		fuse_reply_err(req, ENODATA);
}

static void fl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (duties == DUTIES_NONE) {
		fl_nosys(req);
		return;
	}
	COUNT(R_XATTR);
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

static void fl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_XATTR);
	fuse_reply_err(req, 0);
}

static void fl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (not_ponyfs(req))
		return;
	COUNT(R_XATTR);
	fuse_reply_err(req, ENODATA);
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	char *buf = malloc(size);
	size_t used = 0;

	COUNT(R_READDIR);
	struct node *d = &nodes[ino];

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; i < d->nkids; i++) {
		struct node *k = &nodes[d->kids[i]];
		struct fuse_entry_param e;
		size_t n;

		if (!d->kids[i])
			continue;
		entry_of(d->kids[i], &e);
		n = plus ? fuse_add_direntry_plus(req, buf + used, size - used, k->name, &e,
						  (off_t)i + 1)
			 : fuse_add_direntry(req, buf + used, size - used, k->name, &k->st,
					     (off_t)i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list(req, ino, size, off, false);
}

static void fl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	list(req, ino, size, off, true);
}

static void fl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs s = { .f_bsize = 4096, .f_frsize = 4096, .f_blocks = 1 << 24,
			     .f_bfree = 1 << 23, .f_bavail = 1 << 23, .f_files = 1 << 24,
			     .f_ffree = 1 << 23, .f_namemax = 255 };

	COUNT(R_STATFS);
	fuse_reply_statfs(req, &s);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.init = fl_init, .lookup = fl_lookup, .forget = fl_forget,
	.forget_multi = fl_forget_multi, .getattr = fl_getattr, .setattr = fl_setattr,
	.mknod = fl_mknod, .mkdir = fl_mkdir, .symlink = fl_symlink, .readlink = fl_readlink,
	.unlink = fl_unlink, .rmdir = fl_rmdir, .rename = fl_rename, .open = fl_open,
	.create = fl_create, .read = fl_read, .write = fl_write, .flush = fl_flush,
	.fsync = fl_fsync, .release = fl_release, .opendir = fl_opendir,
	.readdir = fl_readdir, .readdirplus = fl_readdirplus, .releasedir = fl_release,
	.getxattr = fl_getxattr, .setxattr = fl_setxattr, .listxattr = fl_listxattr,
	.removexattr = fl_removexattr, .statfs = fl_statfs,
};

/* why: NULL when the caller said it already. */
static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "fuse_floor: %s\n", why);
	fprintf(stderr, "usage: fuse_floor [-d] [--union | --ponyfs [--timeout S] [--writeback] "
		"[--killpriv] [--noflush] [--direct-wronly] [-o OPTS]]\n"
		"                  [--io-uring] [--dirs D --per P --rm R --big MB] MNT\n");
	return 2;
}

/* A count option's value: 0 up to INT_MAX, else false (said on stderr). */
static bool arg_count(const char *opt, const char *v, int *ret)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 0 || n > INT_MAX) {
		fprintf(stderr, "fuse_floor: bad %s value '%s': a whole number, 0 or more\n",
			opt, v);
		return false;
	}
	*ret = (int)n;
	return true;
}

static bool arg_seconds(const char *v, double *ret)
{
	char *end;
	double t;

	errno = 0;
	t = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(t) || t < 0) {
		fprintf(stderr, "fuse_floor: bad --timeout value '%s': seconds, 0 or more\n", v);
		return false;
	}
	*ret = t;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "union", no_argument, NULL, 'U' },
		{ "ponyfs", no_argument, NULL, 'P' },
		{ "io-uring", no_argument, NULL, 'I' },
		{ "timeout", required_argument, NULL, 't' },
		{ "writeback", no_argument, NULL, 'w' },
		{ "killpriv", no_argument, NULL, 'k' },
		{ "noflush", no_argument, NULL, 'n' },
		{ "direct-wronly", no_argument, NULL, 'W' },
		{ "dirs", required_argument, NULL, 'D' },
		{ "per", required_argument, NULL, 'p' },
		{ "rm", required_argument, NULL, 'r' },
		{ "big", required_argument, NULL, 'b' },
		{ 0 },
	};
	/* No default_permissions: the kernel then checks no permission
	 * against cached attributes, and sends no GETATTR of a directory
	 * each create in it made stale (a real filesystem would check in
	 * the daemon, at no round trip). --union: as pony mounts as root;
	 * --ponyfs: as src/fuse/mount.c mounts, or -o's options instead. */
	char opts[4096] = "fsname=fuse-floor,subtype=floor", extra[3800] = "";
	char *fargv[] = { argv[0], "-o", opts, NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	int dirs = 150, per = 20, rm = 500, big = 128, c, r;
	bool timeout_set = false;
	struct ponyfuse_options popts = { 0 };
	struct ponyfuse *pf = NULL;
	struct fuse_session *se;

	while ((c = getopt_long(argc, argv, "do:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': fargv[args.argc++] = "-d"; break;    /* libfuse's request log */
		case 'U': duties = DUTIES_UNION; break;
		case 'P': duties = DUTIES_PONYFS; break;
		case 'I': popts.io_uring = true; break;
		case 'w': writeback = true; break;
		case 'k': popts.killpriv = true; break;
		case 'n': noflush = true; break;
		case 'W': direct_wronly = true; break;
		case 't':
			if (!arg_seconds(optarg, &timeout))
				return usage(NULL);
			timeout_set = true;
			break;
		case 'o':
			if (strlen(extra) + strlen(optarg) + 2 > sizeof(extra))
				return usage("-o: options too long");
			strcat(strcat(extra, ","), optarg);
			if (strstr(optarg, "max_read="))
				max_read = (unsigned)strtoul(strstr(optarg, "max_read=") + 9, NULL, 10);
			break;
		case 'D': if (!arg_count("--dirs", optarg, &dirs)) return usage(NULL); break;
		case 'p': if (!arg_count("--per", optarg, &per)) return usage(NULL); break;
		case 'r': if (!arg_count("--rm", optarg, &rm)) return usage(NULL); break;
		case 'b': if (!arg_count("--big", optarg, &big)) return usage(NULL); break;
		default: return usage(NULL);
		}
	}
	if (optind != argc - 1)
		return usage("one mount point is needed");
	if (duties != DUTIES_PONYFS &&
	    (timeout_set || writeback || popts.killpriv || noflush || direct_wronly || *extra))
		return usage("--timeout, --writeback, --killpriv, --noflush, --direct-wronly and -o go with --ponyfs");
	if (duties == DUTIES_UNION)
		strcat(opts, ",default_permissions,allow_other");
	if (duties == DUTIES_PONYFS) {
		if (!timeout_set)
			timeout = 1.0;          /* src/cli/cmd_ponyfs.c mount_run's */
		strcat(opts, *extra ? extra : geteuid() == 0 ?
		       ",default_permissions,allow_other,suid,dev" : ",default_permissions");
	}
	populate(duties == DUTIES_PONYFS, dirs, per, rm, big);
	for (size_t i = 0; i < sizeof(read_data); i++)
		read_data[i] = (char)(i * 131 + 7);
	umask(0);
	if (ponyfuse_transport_new(&popts, &pf) < 0)
		return 1;
	se = fuse_session_new(&args, &floor_ops, sizeof(floor_ops), pf);
	if (!se || fuse_session_mount(se, argv[optind]) != 0 ||
	    ponyfuse_transport_attach(pf, se) < 0) {
		fprintf(stderr, "fuse_floor: cannot mount %s\n", argv[optind]);
		return 1;
	}
	fuse_set_signal_handlers(se);
	r = fuse_session_loop(se);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	ponyfuse_free(pf);
	fuse_session_destroy(se);
	for (int k = 0; k < R_KINDS; k++)
		fprintf(stderr, "fuse_floor %s %lu\n", kind_names[k], counts[k]);
	return r ? 1 : 0;
}
