/*
 * passthrough.c - FUSE passthrough (kernel 6.9+, CONFIG_FUSE_PASSTHROUGH):
 * an open of a file whose data is a host file (the vfs data_fd hook: hostfs,
 * and union over hostfs) is answered with FOPEN_PASSTHROUGH and a backing
 * id, and the kernel then reads, writes, splices and maps the host file
 * itself: no READ or WRITE round trip reaches the daemon. libfuse 3.14 has
 * no API for it; devio.c negotiates it in the INIT reply and puts the id in
 * the open reply, this file registers host files with the kernel
 * (FUSE_DEV_IOC_BACKING_OPEN on /dev/fuse) and drops them (BACKING_CLOSE)
 * when their last open is released.
 *
 * The kernel's rules, which shape this (fs/fuse/iomode.c):
 *  - while an inode has a passthrough open, every other open of it must be
 *    a passthrough open of the same backing file, or the open fails (EIO);
 *    so opens of one inode's one host file share one backing id;
 *  - an inode with a cached (page cache) open refuses passthrough opens,
 *    and a passthrough open refuses FOPEN_KEEP_CACHE: a file is served one
 *    way or the other;
 *  - no passthrough next to the writeback cache (devio.c does not ask).
 * So an inode with opens served through the page cache gets only such opens
 * until they are all released, and only host files that stay the inode's
 * for every open are passed through (vfs data_fd_stable): a union's lower
 * file is served as before (spliced), since an open for writing copies it
 * up to another host file while readers may hold it; once copied up, the
 * upper file is passed through.
 * Where the kernel refuses a backing file (no CAP_SYS_ADMIN: EPERM; a host
 * file on a stacked filesystem: ELOOP) the open is served as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "internal.h"
#include "pony/util.h"

/* Kernel 6.9's device ioctls (uapi fuse.h 7.40), newer than this host's headers. */
struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define PT_IOC_BACKING_OPEN _IOW(229, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* A host file registered with the kernel for one FUSE inode's opens. */
struct pt_backing {
	struct pt_backing *next;
	uint64_t ino;                   /* the FUSE node id */
	dev_t dev;                      /* the host file */
	ino_t hino;
	int id;                         /* the kernel's backing id */
	unsigned opens;                 /* passthrough opens holding it */
};

/* A FUSE inode with opens served through the page cache, not passed through. */
struct pt_cached {
	struct pt_cached *next;
	uint64_t ino;                   /* the FUSE node id */
	unsigned opens;
};

/* An open: the vfs handle and the backing it holds, or its cached record. */
struct pt_open {
	struct pt_open *next;
	uint64_t fh;
	struct pt_backing *b;
	struct pt_cached *c;
};

#define PT_BUCKETS 256

/* All fields protected by lock. */
struct ponyfuse_pt {
	pthread_mutex_t lock;
	bool off;                       /* the kernel refused us: serve as before */
	struct pt_backing *backings[PT_BUCKETS];
	struct pt_cached *cached[PT_BUCKETS];
	struct pt_open *opens[PT_BUCKETS];
	uint64_t nbackings, nopens;
};

static size_t bucket(uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 56) % PT_BUCKETS;
}

int ponyfuse_pt_new(struct ponyfuse_pt **ret)
{
	struct ponyfuse_pt *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return -ENOMEM;
	pthread_mutex_init(&pt->lock, NULL);
	*ret = pt;
	return 0;
}

/* The kernel drops what is still registered when the connection ends. */
void ponyfuse_pt_free(struct ponyfuse_pt *pt)
{
	if (!pt)
		return;
	for (size_t i = 0; i < PT_BUCKETS; i++) {
		for (struct pt_backing *b = pt->backings[i], *n; b; b = n) {
			n = b->next;
			free(b);
		}
		for (struct pt_cached *c = pt->cached[i], *n; c; c = n) {
			n = c->next;
			free(c);
		}
		for (struct pt_open *o = pt->opens[i], *n; o; o = n) {
			n = o->next;
			free(o);
		}
	}
	pthread_mutex_destroy(&pt->lock);
	free(pt);
}

static struct pt_backing *backing_get_locked(struct ponyfuse *pf, uint64_t ino,
					     const struct stat *st, int fd)
{
	struct ponyfuse_pt *pt = pf->pt;
	struct pt_backing_map map = { .fd = fd };
	struct pt_backing **head = &pt->backings[bucket(ino)], *b;
	int id;

	for (b = *head; b; b = b->next)
		if (b->ino == ino && b->dev == st->st_dev && b->hino == st->st_ino)
			return b;
	if (pt->off)
		return NULL;
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	id = ioctl(fuse_session_fd(pf->se), PT_IOC_BACKING_OPEN, &map);
	if (id <= 0) {
		/* EPERM: passthrough not taken by the kernel, or no
		 * CAP_SYS_ADMIN; it will not change for this mount. */
		if (id < 0 && errno == EPERM)
			pt->off = true;
		free(b);
		return NULL;
	}
	*b = (struct pt_backing){ .next = *head, .ino = ino, .dev = st->st_dev,
				  .hino = st->st_ino, .id = id };
	*head = b;
	pt->nbackings++;
	return b;
}

/* ino's record of cached opens, made if asked to: NULL if none (or no memory). */
static struct pt_cached *cached_get_locked(struct ponyfuse_pt *pt, uint64_t ino, bool make)
{
	struct pt_cached **head = &pt->cached[bucket(ino)], *c;

	for (c = *head; c; c = c->next)
		if (c->ino == ino)
			return c;
	if (!make || !(c = calloc(1, sizeof(*c))))
		return NULL;
	*c = (struct pt_cached){ .next = *head, .ino = ino };
	*head = c;
	return c;
}

static void cached_put_locked(struct ponyfuse_pt *pt, struct pt_cached *dead)
{
	if (--dead->opens)
		return;
	for (struct pt_cached **p = &pt->cached[bucket(dead->ino)]; *p; p = &(*p)->next) {
		if (*p == dead) {
			*p = dead->next;
			break;
		}
	}
	free(dead);
}

/*
 * The backing id to answer an open of ino with, or 0 to serve it through
 * the page cache. The kernel fails (EIO) an open that would mix the two
 * on one inode, so an inode with cached opens gets cached ones until they
 * are all released, and only host files that stay the inode's for every
 * open (data_fd_stable) are passed through: a union's lower file opened
 * for reading while a writer copies it up must not hold the inode.
 */
int ponyfuse_pt_open(struct ponyfuse *pf, uint64_t ino, uint64_t fh)
{
	struct ponyfuse_pt *pt = pf->pt;
	struct pt_backing *b = NULL;
	struct pt_cached *c = NULL;
	struct pt_open *o;
	struct stat st;
	bool candidate;
	int fd, id = 0;

	if (!pt || !atomic_load(&pf->pt_on))
		return 0;
	fd = VFS_CALL(pf->fs, data_fd, ino, fh);
	candidate = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (!pf->fs->ops->data_fd_stable || pf->fs->ops->data_fd_stable(pf->fs, ino, fh));
	o = malloc(sizeof(*o));
	if (!o)
		return 0;
	pthread_mutex_lock(&pt->lock);
	if (candidate && !cached_get_locked(pt, ino, false))
		b = backing_get_locked(pf, ino, &st, fd);
	if (b) {
		b->opens++;
		id = b->id;
	} else if ((c = cached_get_locked(pt, ino, true))) {
		c->opens++;
	}
	if (b || c) {
		size_t h = bucket(fh);

		*o = (struct pt_open){ .next = pt->opens[h], .fh = fh, .b = b, .c = c };
		pt->opens[h] = o;
		pt->nopens += b != NULL;
	}
	pthread_mutex_unlock(&pt->lock);
	if (!b && !c)
		free(o);
	return id;
}

static void backing_drop_locked(struct ponyfuse *pf, struct pt_backing *dead)
{
	uint32_t id = (uint32_t)dead->id;

	for (struct pt_backing **p = &pf->pt->backings[bucket(dead->ino)]; *p; p = &(*p)->next) {
		if (*p == dead) {
			*p = dead->next;
			break;
		}
	}
	/* The kernel's inode keeps its own reference while files use it. */
	ioctl(fuse_session_fd(pf->se), PT_IOC_BACKING_CLOSE, &id);
	pf->pt->nbackings--;
	free(dead);
}

void ponyfuse_pt_release(struct ponyfuse *pf, uint64_t fh)
{
	struct ponyfuse_pt *pt = pf->pt;
	struct pt_open **p, *o = NULL;

	if (!pt)
		return;
	pthread_mutex_lock(&pt->lock);
	for (p = &pt->opens[bucket(fh)]; *p; p = &(*p)->next) {
		if ((*p)->fh == fh) {
			o = *p;
			*p = o->next;
			break;
		}
	}
	if (o && o->c)
		cached_put_locked(pt, o->c);
	else if (o && --o->b->opens == 0)
		backing_drop_locked(pf, o->b);
	pthread_mutex_unlock(&pt->lock);
	free(o);
}

int ponyfuse_pt_counters(struct ponyfuse *pf, char *buf, size_t size)
{
	struct ponyfuse_pt *pt = pf->pt;
	uint64_t nb = 0, no = 0;
	bool on = false;

	if (pt) {
		pthread_mutex_lock(&pt->lock);
		nb = pt->nbackings;
		no = pt->nopens;
		on = atomic_load(&pf->pt_on) && !pt->off;
		pthread_mutex_unlock(&pt->lock);
	}
	return snprintf(buf, size, "passthrough %d\npassthrough_opens %llu\n"
			"passthrough_backing_files %llu\n", on, (unsigned long long)no,
			(unsigned long long)nb);
}
