/*
 * fuse_floor.c - bench/union's floor: a FUSE filesystem that does no storage
 * work at all, to measure the best any FUSE filesystem can do on this
 * machine for the union rows (untar, rm -rf, stat of a tree). Names and
 * attributes live in memory (a hash of (parent, name) and a node array);
 * file contents are not kept (reads return zeros). It uses every kernel
 * option that saves a round trip, whether or not a real filesystem could:
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
 * --io-uring: requests over pony's FUSE-over-io_uring transport (a ring and
 * thread per CPU, src/fuse/uring.c) where the kernel offers it; every
 * request then takes one lock, as several threads serve at once.
 *
 * Usage: fuse_floor [-d] [--union] [--io-uring] [--dirs D --per P --rm R --big MB] MNT (foreground:
 * the tree of bench/union's lower, tree/dNNNN/fNN of D x P small files,
 * rmme/sNNN/rNNNNN of R files and a file "big" of MB MiB; unmount with
 * fusermount3 -u, then it prints how many requests of each kind it had).
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pony/fuse.h"

#define TIMEOUT 86400.0

struct node {
	struct stat st;
	uint64_t parent;
	char *name;
	uint64_t *kids;                 /* directories: child inos, 0 = removed */
	size_t nkids, cap;
};

struct slot {                           /* the (parent, name) -> ino hash */
	uint64_t parent, ino;           /* ino 0: empty; UINT64_MAX: removed */
	const char *name;
};

/* Requests handled, by kind: printed on stderr at exit (bench/union's
 * requests-per-file figure for the floor). */
enum { R_LOOKUP, R_GETATTR, R_SETATTR, R_MAKE, R_READLINK, R_REMOVE, R_WRITE, R_READ,
       R_NOSYS, R_RELEASE, R_READDIR, R_STATFS, R_FORGET, R_XATTR, R_KINDS };
static const char *const kind_names[R_KINDS] = {
	"lookup", "getattr", "setattr", "mknod/mkdir/symlink", "readlink", "unlink/rmdir",
	"write", "read", "enosys", "release", "readdir", "statfs", "forget", "xattr",
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

static struct node *nodes;
static size_t nnodes, nodes_cap;
static struct slot *slots;
static size_t nslots, slots_used;

static uint64_t hash(uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return h;
}

static struct slot *slot_find(uint64_t parent, const char *name, bool for_insert)
{
	size_t i = hash(parent, name) & (nslots - 1);
	struct slot *tomb = NULL;

	for (;; i = (i + 1) & (nslots - 1)) {
		struct slot *s = &slots[i];

		if (s->ino == 0)
			return for_insert ? (tomb ? tomb : s) : NULL;
		if (s->ino == UINT64_MAX) {
			if (!tomb)
				tomb = s;
			continue;
		}
		if (s->parent == parent && !strcmp(s->name, name))
			return s;
	}
}

static void slots_grow(void)
{
	struct slot *old = slots;
	size_t n = nslots;

	nslots = nslots ? nslots * 2 : 1 << 16;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		abort();
	slots_used = 0;
	for (size_t i = 0; i < n; i++) {
		if (old[i].ino && old[i].ino != UINT64_MAX) {
			*slot_find(old[i].parent, old[i].name, true) = old[i];
			slots_used++;
		}
	}
	free(old);
}

static uint64_t node_new(uint64_t parent, const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	struct timespec now;
	struct node *p, *n;
	uint64_t ino;

	if (nnodes == nodes_cap) {
		nodes_cap = nodes_cap ? nodes_cap * 2 : 1 << 16;
		nodes = realloc(nodes, nodes_cap * sizeof(*nodes));
		if (!nodes)
			abort();
	}
	if ((slots_used + 1) * 2 > nslots)
		slots_grow();
	ino = nnodes++;
	n = &nodes[ino];
	clock_gettime(CLOCK_REALTIME, &now);
	*n = (struct node){ .parent = parent, .name = strdup(name) };
	n->st = (struct stat){ .st_ino = ino, .st_mode = mode, .st_nlink = S_ISDIR(mode) ? 2 : 1,
			       .st_uid = uid, .st_gid = gid, .st_blksize = 4096,
			       .st_atim = now, .st_mtim = now, .st_ctim = now };
	if (parent) {
		struct slot *s = slot_find(parent, name, true);

		*s = (struct slot){ .parent = parent, .ino = ino, .name = n->name };
		slots_used++;
		p = &nodes[parent];
		if (p->nkids == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 16;
			p->kids = realloc(p->kids, p->cap * sizeof(*p->kids));
			if (!p->kids)
				abort();
		}
		p->kids[p->nkids++] = ino;
		if (S_ISDIR(mode))
			p->st.st_nlink++;
	}
	return ino;
}

static void entry_of(uint64_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	if (ino)
		e->attr = nodes[ino].st;
	e->attr_timeout = e->entry_timeout = TIMEOUT;
}

static void fl_init(void *data, struct fuse_conn_info *conn)
{
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
	fuse_reply_attr(req, &nodes[ino].st, TIMEOUT);
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
	fuse_reply_attr(req, st, TIMEOUT);
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

static void drop(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	COUNT(R_REMOVE);
	struct slot *s = slot_find(parent, name, false);
	struct node *p = &nodes[parent];

	if (!s) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (dir) {
		struct node *d = &nodes[s->ino];

		for (size_t i = 0; i < d->nkids; i++)
			if (d->kids[i]) {
				fuse_reply_err(req, ENOTEMPTY);
				return;
			}
		p->st.st_nlink--;
	}
	for (size_t i = 0; i < p->nkids; i++)
		if (p->kids[i] == s->ino)
			p->kids[i] = 0;
	s->ino = UINT64_MAX;
	fuse_reply_err(req, 0);
}

static void fl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, false);
}

static void fl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop(req, parent, name, true);
}

static void fl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	COUNT(R_WRITE);
	if (off + (off_t)size > nodes[ino].st.st_size)
		nodes[ino].st.st_size = off + (off_t)size;
	fuse_reply_write(req, size);
}

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	static char zeros[1 << 20];

	COUNT(R_READ);
	off_t end = nodes[ino].st.st_size;

	size = off >= end ? 0 : (size_t)(end - off) < size ? (size_t)(end - off) : size;
	fuse_reply_buf(req, zeros, size < sizeof(zeros) ? size : sizeof(zeros));
}

static void fl_nosys(fuse_req_t req)
{
	COUNT(R_NOSYS);
	fuse_reply_err(req, ENOSYS);
}

static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fl_nosys(req);
}

static void fl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	fl_nosys(req);
}

static void fl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fl_nosys(req);
}

static void fl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(R_RELEASE);
	fuse_reply_err(req, 0);
}

static bool union_duties;               /* --union */

/* With --union, files have xattrs, just none set; POSIX ACLs and SELinux
 * labels are refused as pony's front end refuses them (src/fuse/more.c),
 * so ls stops asking for them. */
static void fl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (!union_duties) {
		fl_nosys(req);
		return;
	}
	COUNT(R_XATTR);
	if (!strncmp(name, "system.posix_acl_", 17) || !strcmp(name, "security.selinux"))
		fuse_reply_err(req, EOPNOTSUPP);
	else
		fuse_reply_err(req, ENODATA);
}

static void fl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!union_duties) {
		fl_nosys(req);
		return;
	}
	COUNT(R_XATTR);
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
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
	.init = fl_init, .lookup = fl_lookup, .forget = fl_forget, .forget_multi = fl_forget_multi, .getattr = fl_getattr, .setattr = fl_setattr,
	.mknod = fl_mknod, .mkdir = fl_mkdir, .symlink = fl_symlink, .readlink = fl_readlink,
	.unlink = fl_unlink, .rmdir = fl_rmdir, .open = fl_open, .create = fl_create,
	.read = fl_read, .write = fl_write, .flush = fl_flush, .release = fl_release,
	.opendir = fl_open, .readdir = fl_readdir, .readdirplus = fl_readdirplus, .getxattr = fl_getxattr,
	.listxattr = fl_listxattr, .statfs = fl_statfs,
};

static void populate(int dirs, int per, int rm, long big_mb)
{
	uint64_t tree, rmme, sub = 0;
	char name[32];

	node_new(0, "", 0, 0, 0);                       /* ino 0: unused */
	node_new(0, "", S_IFDIR | 0755, 0, 0);          /* ino 1: the root */
	tree = node_new(1, "tree", S_IFDIR | 0755, 0, 0);
	for (int d = 0; d < dirs; d++) {
		snprintf(name, sizeof(name), "d%04d", d);
		uint64_t dir = node_new(tree, name, S_IFDIR | 0755, 0, 0);

		for (int f = 0; f < per; f++) {
			snprintf(name, sizeof(name), "f%02d", f);
			nodes[node_new(dir, name, S_IFREG | 0644, 0, 0)].st.st_size = 100 + f;
		}
	}
	nodes[node_new(1, "big", S_IFREG | 0644, 0, 0)].st.st_size = big_mb << 20;
	rmme = node_new(1, "rmme", S_IFDIR | 0755, 0, 0);
	for (int f = 0; f < rm; f++) {
		if (f % 100 == 0) {
			snprintf(name, sizeof(name), "s%03d", f / 100);
			sub = node_new(rmme, name, S_IFDIR | 0755, 0, 0);
		}
		snprintf(name, sizeof(name), "r%05d", f);
		nodes[node_new(sub, name, S_IFREG | 0644, 0, 0)].st.st_size = 1;
	}
}

int main(int argc, char **argv)
{
	/* No default_permissions: the kernel then checks no permission
	 * against cached attributes, and sends no GETATTR of a directory
	 * each create in it made stale (a real filesystem would check in
	 * the daemon, at no round trip). --union: as pony mounts as root. */
	char *fargv[] = { argv[0], "-o", "fsname=fuse-floor,subtype=floor", NULL, NULL };
	char union_opts[] = "fsname=fuse-floor,subtype=floor,default_permissions,allow_other";
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	int dirs = 150, per = 20, rm = 500, big = 128, i, r;
	struct ponyfuse_options opts = { 0 };
	struct ponyfuse *pf = NULL;
	struct fuse_session *se;

	for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "-d"))     /* libfuse's request log */
			fargv[args.argc++] = argv[i--];
		else if (!strcmp(argv[i], "--io-uring"))
			opts.io_uring = true, i--;
		else if (!strcmp(argv[i], "--union"))
			union_duties = true, fargv[2] = union_opts, i--;
		else if (!strcmp(argv[i], "--dirs"))
			dirs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--per"))
			per = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--rm"))
			rm = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--big"))
			big = atoi(argv[i + 1]);
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: fuse_floor [-d] [--union] [--io-uring] [--dirs D --per P --rm R "
			"--big MB] MNT\n");
		return 2;
	}
	populate(dirs, per, rm, big);
	umask(0);
	if (ponyfuse_transport_new(&opts, &pf) < 0)
		return 1;
	se = fuse_session_new(&args, &floor_ops, sizeof(floor_ops), pf);
	if (!se || fuse_session_mount(se, argv[i]) != 0 || ponyfuse_transport_attach(pf, se) < 0) {
		fprintf(stderr, "fuse_floor: cannot mount %s\n", argv[i]);
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
