/*
 * inode.c - hostfs's inode table: (st_dev, st_ino) -> O_PATH descriptor with
 * a lookup count. Two names of one host file are one inode here, so hard links
 * look like hard links through FUSE too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "pony/util.h"

/* Descriptors held for inodes by every instance of the process. */
static atomic_size_t hostfs_fds_held;

int hostfs_inode_fd(struct hostfs *h, struct hostfs_inode *in, int *ret_tmp)
{
	*ret_tmp = -1;
	if (in->fd >= 0)
		return in->fd;
	*ret_tmp = open_by_handle_at(h->mount_fd, in->handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return *ret_tmp >= 0 ? *ret_tmp : -errno;
}

/* A non-directory's handle, if this filesystem gives one on the root's mount. */
static struct file_handle *inode_handle(struct hostfs *h, int fd)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id;

	if (!fh)
		return NULL;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) < 0 ||
	    mount_id != h->mount_id) {
		free(fh);
		return NULL;
	}
	return fh;
}

void hostfs_handles_probe(struct hostfs *h)
{
	struct file_handle *fh;
	int fd;

	/* open_by_handle_at() needs CAP_DAC_READ_SEARCH. */
	struct rlimit rl;

	h->use_handles = false;
	h->mount_fd = -1;
	/* The instances of a process (a union has 2 or more) share one budget,
	 * first come first served: three quarters of the descriptor limit, the
	 * rest for open files and the front end. */
	h->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ?
		     rl.rlim_cur / 4 * 3 : 1 << 16;
	if (geteuid() != 0)
		return;
	h->mount_fd = openat(h->root.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fh = h->mount_fd >= 0 ? malloc(sizeof(*fh) + MAX_HANDLE_SZ) : NULL;
	if (!fh)
		return;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(h->root.fd, "", fh, &h->mount_id, AT_EMPTY_PATH) == 0) {
		fd = open_by_handle_at(h->mount_fd, fh, O_PATH | O_CLOEXEC);
		h->use_handles = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	free(fh);
}

const char *hostfs_fd_path(int fd, char buf[static 32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
	return buf;
}

struct hostfs_inode *hostfs_inode_get(struct hostfs *h, uint64_t ino)
{
	if (ino == VFS_ROOT_INO)
		return &h->root;
	return (struct hostfs_inode *)(uintptr_t)ino;
}

static size_t inode_hash(const struct hostfs *h, dev_t dev, ino_t ino)
{
	uint64_t x = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (size_t)(x ^ x >> 29) & (h->nbuckets - 1);
}

static int table_grow_locked(struct hostfs *h)
{
	size_t n = h->nbuckets ? h->nbuckets * 2 : 1024;
	struct hostfs_inode **nb = calloc(n, sizeof(*nb));
	struct hostfs_inode **old = h->buckets;
	size_t oldn = h->nbuckets;

	if (!nb)
		return -ENOMEM;
	h->buckets = nb;
	h->nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		struct hostfs_inode *in = old[i], *next;

		for (; in; in = next) {
			size_t b = inode_hash(h, in->dev, in->ino);

			next = in->hnext;
			in->hnext = nb[b];
			nb[b] = in;
		}
	}
	free(old);
	return 0;
}

static struct hostfs_inode *table_find_locked(struct hostfs *h, dev_t dev, ino_t ino)
{
	if (h->root.dev == dev && h->root.ino == ino)
		return &h->root;
	if (!h->nbuckets)
		return NULL;
	for (struct hostfs_inode *in = h->buckets[inode_hash(h, dev, ino)]; in; in = in->hnext)
		if (in->dev == dev && in->ino == ino)
			return in;
	return NULL;
}

static uint64_t inode_id(struct hostfs *h, struct hostfs_inode *in)
{
	return in == &h->root ? VFS_ROOT_INO : (uint64_t)(uintptr_t)in;
}

static int inode_of_fd(struct hostfs *h, int *pfd, struct vfs_entry *ret, bool *ret_known);

/* Opens name and takes its inode; *ret_known (if not NULL): the table had it. */
static int lookup_open(struct hostfs *h, struct hostfs_inode *parent, const char *name,
		       struct vfs_entry *ret, bool *ret_known)
{
	int fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return inode_of_fd(h, &fd, ret, ret_known);
}

int hostfs_do_lookup(struct hostfs *h, struct hostfs_inode *parent, const char *name,
		     struct vfs_entry *ret)
{
	int r = vfs_check_name(name);

	if (r < 0)
		return r;
	if (parent->fd < 0) /* only non-directories are kept as handles */
		return -ENOTDIR;
	return lookup_open(h, parent, name, ret, NULL);
}

/* Moves the score of lookups that found new inodes (+1) or known ones (-1)
 * by d, within +-16. */
static void new_inode_score_add(struct hostfs *h, int d)
{
	int s = atomic_load_explicit(&h->new_inode_score, memory_order_relaxed) + d;

	if (s >= -16 && s <= 16)
		atomic_store_explicit(&h->new_inode_score, s, memory_order_relaxed);
}

/*
 * A lookup of a name whose inode the table may hold already (a union asks
 * its layers again for names the kernel has looked up): a statx of the name
 * finds it, one system call instead of an open, a statx and a close. The
 * inode is the one the name gave: the table's descriptor keeps it alive, so
 * no other file has its number meanwhile. A new inode is opened as by
 * hostfs_do_lookup, its descriptor's attributes deciding: three calls where
 * opening first costs two. Which order is cheaper depends on the caller
 * (a union asking again for names the kernel looked up, or a first walk
 * of a tree), so a score of what recent lookups found picks it: known
 * inodes, statx first; new ones, open first (a known inode then costs an
 * open, a statx and a close). Either order gives the same answer.
 */
int hostfs_do_lookup_known(struct hostfs *h, struct hostfs_inode *parent, const char *name,
			   struct vfs_entry *ret)
{
	struct hostfs_inode *in;
	struct statx x;
	int r = vfs_check_name(name);

	if (r < 0)
		return r;
	if (parent->fd < 0)
		return -ENOTDIR;
	if (atomic_load_explicit(&h->new_inode_score, memory_order_relaxed) > 0) {
		bool known = false;

		r = lookup_open(h, parent, name, ret, &known);
		if (r == 0)
			new_inode_score_add(h, known ? -1 : 1);
		return r;
	}
	if (statx(parent->fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_BTIME, &x) < 0)
		return -errno;
	pthread_mutex_lock(&h->lock);
	in = table_find_locked(h, makedev(x.stx_dev_major, x.stx_dev_minor), x.stx_ino);
	if (in && in != &h->root) {
		in->nlookup++;
		pthread_mutex_unlock(&h->lock);
		*ret = (struct vfs_entry){ .ino = inode_id(h, in), .attr = x };
		new_inode_score_add(h, -1);
		return 0;
	}
	pthread_mutex_unlock(&h->lock);
	r = lookup_open(h, parent, name, ret, NULL);
	if (r == 0)
		new_inode_score_add(h, 1);
	return r;
}

int hostfs_inode_of_fd(struct hostfs *h, int *pfd, struct vfs_entry *ret)
{
	return inode_of_fd(h, pfd, ret, NULL);
}

static int inode_of_fd(struct hostfs *h, int *pfd, struct vfs_entry *ret, bool *ret_known)
{
	_cleanup_(closep) int fd = TAKE_FD(*pfd);
	struct hostfs_inode *in;
	struct vfs_entry e = { 0 };
	int r;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
		  &e.attr) < 0)
		return -errno;
	pthread_mutex_lock(&h->lock);
	in = table_find_locked(h, makedev(e.attr.stx_dev_major, e.attr.stx_dev_minor),
			       e.attr.stx_ino);
	if (!in) {
		r = h->count >= h->nbuckets ? table_grow_locked(h) : 0;
		in = r < 0 ? NULL : calloc(1, sizeof(*in));
		if (!in) {
			pthread_mutex_unlock(&h->lock);
			return -ENOMEM;
		}
		in->dev = makedev(e.attr.stx_dev_major, e.attr.stx_dev_minor);
		in->ino = e.attr.stx_ino;
		in->fd = -1;
		/* Descriptors are faster (no open per call): handles only once
		 * many are held. */
		if (h->use_handles && !S_ISDIR(e.attr.stx_mode) &&
		    atomic_load(&hostfs_fds_held) >= h->max_fds)
			in->handle = inode_handle(h, fd);
		if (!in->handle) {
			in->fd = TAKE_FD(fd);
			atomic_fetch_add(&hostfs_fds_held, 1);
		}
		size_t b = inode_hash(h, in->dev, in->ino);
		in->hnext = h->buckets[b];
		h->buckets[b] = in;
		h->count++;
	} else if (ret_known) {
		*ret_known = true;
	}
	in->nlookup++;
	e.ino = inode_id(h, in);
	pthread_mutex_unlock(&h->lock);
	*ret = e;
	return 0;
}

void hostfs_inode_ref(struct hostfs *h, uint64_t ino)
{
	struct hostfs_inode *in = hostfs_inode_get(h, ino);

	if (in == &h->root)
		return;
	pthread_mutex_lock(&h->lock);
	in->nlookup++;
	pthread_mutex_unlock(&h->lock);
}

void hostfs_forget(struct vfs *fs, uint64_t ino, uint64_t nlookup)
{
	struct hostfs *h = hostfs_of(fs);
	struct hostfs_inode *in = hostfs_inode_get(h, ino);

	if (in == &h->root)
		return;
	pthread_mutex_lock(&h->lock);
	in->nlookup -= MIN(nlookup, in->nlookup);
	if (in->nlookup == 0) {
		struct hostfs_inode **p = &h->buckets[inode_hash(h, in->dev, in->ino)];

		while (*p != in)
			p = &(*p)->hnext;
		*p = in->hnext;
		h->count--;
		if (in->fd >= 0) {
			close(in->fd);
			atomic_fetch_sub(&hostfs_fds_held, 1);
		}
		free(in->handle);
		free(in);
	}
	pthread_mutex_unlock(&h->lock);
}

void hostfs_inodes_free(struct hostfs *h)
{
	for (size_t i = 0; i < h->nbuckets; i++) {
		struct hostfs_inode *in = h->buckets[i], *next;

		for (; in; in = next) {
			next = in->hnext;
			if (in->fd >= 0) {
				close(in->fd);
				atomic_fetch_sub(&hostfs_fds_held, 1);
			}
			free(in->handle);
			free(in);
		}
	}
	free(h->buckets);
}
