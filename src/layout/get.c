/*
 * get.c - getting and giving back a layout (docs/layout.md): the pages of
 * PONYFUSE_IOC_LAYOUT joined into one list, the members named by
 * PONYFUSE_IOC_LAYOUT_MEMBER opened read-only by the client itself, and
 * the lease: asked for on the first page (PONYFUSE_LEASE_NEW), joined on
 * the next (and on every page of a layout moved to another range of the
 * file, pony_layout_seek), checked after a read, returned at the end. A
 * clone opens again the member files its origin opened. A daemon without
 * leases answers no lease (0, or the request echoed back with lease_ms 0)
 * and ENOTTY to PONYFUSE_IOC_LAYOUT_LEASE: the layout is then a snapshot.
 * A layout got from another host asks the same of the mount's layout
 * service (remote.c) instead of the ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pony/acall.h"
#include "pony/bdev.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "internal.h"

/* Grows *arr (of *cap elements of size sz) to hold need; 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	while (*cap < need) {
		void *p = util_array_grow(*arr, cap, *cap, sz, 64);

		if (!p)
			return -ENOMEM;
		*arr = p;
	}
	return 0;
}

/* Appends page a to l, rebasing its extents' indexes onto the joined arrays. */
static int layout_append(struct pony_layout *l, const struct ponyfuse_layout_arg *a)
{
	int r = grow((void **)&l->ext, &l->ext_cap, l->next + a->nextents, sizeof(*l->ext));

	if (!r)
		r = grow((void **)&l->csums, &l->csums_cap, l->ncsums + a->ncsums, sizeof(*l->csums));
	if (!r)
		r = grow((void **)&l->pieces, &l->pieces_cap, l->npieces + a->npieces,
			 sizeof(*l->pieces));
	if (r)
		return r;
	for (uint32_t i = 0; i < a->nextents; i++) {
		struct ponyfuse_layout_extent e = a->extents[i];

		if ((uint64_t)e.first_csum + (e.state == PONYFUSE_LAYOUT_DATA ?
					      e.length / a->block_size : 0) > a->ncsums ||
		    (uint64_t)e.first_piece + e.npieces > a->npieces)
			return -EPROTO;         /* indexes past what the page filled */
		e.first_csum += (uint32_t)l->ncsums;
		e.first_piece += (uint32_t)l->npieces;
		l->ext[l->next++] = e;
	}
	/* An empty file's page fills nothing: the arrays may still be NULL. */
	if (a->ncsums)
		memcpy(l->csums + l->ncsums, a->csums, a->ncsums * sizeof(*a->csums));
	l->ncsums += a->ncsums;
	if (a->npieces)
		memcpy(l->pieces + l->npieces, a->pieces, a->npieces * sizeof(*a->pieces));
	l->npieces += a->npieces;
	return 0;
}

/* A lease the daemon really granted: an id other than the request, with time on it. */
static uint32_t lease_granted(const struct ponyfuse_layout_arg *a)
{
	return a->lease != PONYFUSE_LEASE_NEW && a->lease_ms ? a->lease : 0;
}

static int lease_call(struct pony_layout *l, uint32_t op, uint32_t *ret_state)
{
	struct ponyfuse_layout_lease_arg a = {
		.version = PONYFUSE_LAYOUT_VERSION, .lease = l->lease, .op = op,
	};

	if (l->remote) {
		int r = layout_remote_lease(l, l->lease, op, ret_state);

		return r == -ENOTTY || r == -EOPNOTSUPP ? 1 : r;
	}
	if (ioctl(l->fd, PONYFUSE_IOC_LAYOUT_LEASE, &a) < 0)
		return errno == ENOTTY || errno == EINVAL ? 1 : -errno;        /* 1: no leases */
	*ret_state = a.state;
	return 0;
}

int layout_lease_status(struct pony_layout *l)
{
	uint32_t state = PONYFUSE_LEASE_HELD;
	int r = l->lease ? lease_call(l, PONYFUSE_LEASE_STATUS, &state) : 1;

	if (r < 0)
		return r;
	return r ? PONYFUSE_LEASE_HELD : (int)state;
}

/* Gives the lease back (a daemon without leases has none to take; a clone's
 * is its origin's to give back). */
static int lease_return(struct pony_layout *l)
{
	uint32_t state;
	int r = l->lease && !l->lease_borrowed ? lease_call(l, PONYFUSE_LEASE_RETURN, &state) : 0;

	l->lease = 0;
	l->lease_borrowed = false;
	return r < 0 ? r : 0;
}

/*
 * Gets l's range page by page: under a new lease (the one held returned
 * first), or with join under the lease l holds (borrowed or not: each page
 * joins it, as the pages after the first always do), a new one when it
 * holds none.
 */
static int layout_fetch_once(struct pony_layout *l, bool join)
{
	_cleanup_(freep) struct ponyfuse_layout_arg *a = malloc(sizeof(*a));
	uint64_t off = l->off;
	int r;

	if (!a)
		return -ENOMEM;
	if (l->lease && !join)
		lease_return(l);
	join = join && l->lease;
	l->next = l->ncsums = l->npieces = 0;
	for (bool first = true;; first = false) {
		*a = (struct ponyfuse_layout_arg){
			.version = PONYFUSE_LAYOUT_VERSION, .offset = off, .length = l->end - off,
			.lease = first && !join ? PONYFUSE_LEASE_NEW : l->lease,
		};
		r = l->remote ? layout_remote_page(l, a) :
		    ioctl(l->fd, PONYFUSE_IOC_LAYOUT, a) < 0 ? -errno : 0;
		if (r < 0)
			return r;
		if (first && !join) {
			l->lease = lease_granted(a);
			l->lease_borrowed = false;
		}
		if (first) {
			l->flags = a->flags;
			l->size = a->size;
			l->block_size = a->block_size;
			if (a->flags & PONYFUSE_LAYOUT_ENCRYPTED)
				return -EACCES;         /* keys never leave the mount */
			if (!a->block_size)
				return -EPROTO;
		}
		r = layout_append(l, a);
		if (r)
			return r;
		if ((a->flags & PONYFUSE_LAYOUT_COMPLETE) || a->next <= off)
			return 0;
		off = a->next;
	}
}

/*
 * The layout of l's range, page by page under one lease (joined: the lease
 * l holds). A lease that ends between two pages (it expired, or space
 * pressure revoked it) makes the next page ESTALE: the whole layout is got
 * again under a new lease, a few times at most.
 */
static int layout_fetch_joined(struct pony_layout *l, bool join)
{
	int r;

	for (int tries = 0;; tries++) {
		r = layout_fetch_once(l, join);
		if (r != -ESTALE || tries == 3)
			return r;
		l->lease = 0;           /* gone already: nothing to return */
		l->lease_borrowed = false;
	}
}

int layout_fetch(struct pony_layout *l)
{
	return layout_fetch_joined(l, false);
}

int pony_layout_seek(struct pony_layout *l, uint64_t off, uint64_t len)
{
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;

	if (off >= l->off && end <= l->end)
		return 0;               /* covered already: no call */
	l->off = off;
	l->end = end;
	return layout_fetch_joined(l, true);
}

int layout_member_bdev(const struct pony_layout *l, const struct layout_member *m,
		       struct bdev **ret)
{
	struct bdev_open_params p = { .flags = O_RDONLY };
	_cleanup_(freep) char *uri = NULL;
	int r;

	if (!bdev_name_is_nbd(m->arg.device))
		return l->remote ? -ENODEV : bdev_open(m->arg.device, &p, ret);
	if (l->remote) {
		r = layout_remote_member_uri(l, m->arg.device, &uri);
		if (r < 0)
			return r;
		p.timeout_ms = layout_remote_member_timeout(l);
	}
	return bdev_open(uri ? uri : m->arg.device, &p, ret);
}

/*
 * Whether what m's name opened (dev, or else the path itself) is member m:
 * its pony superblock names the member UUID the daemon gave for that index.
 * A name can lead elsewhere by the time a client opens it (a server back
 * with another export, a path now an image of another volume); such a
 * device is neither read nor written as the member (-EXDEV), and a reader
 * rebuilds its blocks from the others. Without a UUID from the daemon (a
 * volume that is not a pony set) there is nothing to check against.
 */
int layout_member_verify(struct layout_member *m, struct bdev *dev)
{
	_cleanup_(bdev_freep) struct bdev *own = NULL;
	uint8_t uuid[16];
	int r;

	if (!m->arg.has_uuid)
		return 0;
	if (!dev) {
		r = bdev_file_open(m->arg.device, O_RDONLY, &own);
		if (r < 0)
			return r;
		dev = own;
	}
	r = volume_device_member_uuid(dev, uuid);
	if (r < 0)
		return r == -ENODATA || r == -EBADMSG ? -EXDEV : r;
	return memcmp(uuid, m->arg.uuid, sizeof(uuid)) ? -EXDEV : 0;
}

/*
 * Member m opened for the direct reads: a path read on the ring by its
 * descriptor, an NBD URI through its own connections. A member the daemon
 * failed is not read (its blocks are rebuilt), and neither, from another
 * host, is a member named by a path: that path is the mount host's.
 */
static void member_open(struct pony_layout *l, struct layout_member *m)
{
	m->fd = -1;
	m->dev = NULL;
	m->arg.device[sizeof(m->arg.device) - 1] = 0;
	if (!m->arg.device[0] || m->arg.state != 0)
		return;
	if (bdev_name_is_nbd(m->arg.device)) {
		if (layout_member_bdev(l, m, &m->dev) < 0)
			m->dev = NULL;
	} else if (!l->remote) {
		m->fd = open(m->arg.device, O_RDONLY | O_CLOEXEC);
	}
	if ((m->dev || m->fd >= 0) && layout_member_verify(m, m->dev) < 0) {
		bdev_free(m->dev);
		m->dev = NULL;
		if (m->fd >= 0)
			close(m->fd);
		m->fd = -1;
		atomic_fetch_add(&l->members_refused, 1);
	}
}

struct member_opening {
	struct pony_layout *l;
	struct layout_member *m;
	pthread_t thread;
	bool started;
};

static void *member_open_main(void *arg)
{
	struct member_opening *o = arg;

	member_open(o->l, o->m);
	return NULL;
}

/*
 * A member path the origin of a clone holds open, opened again through
 * /proc/self/fd: the very file the origin checked (no name looked up, so
 * no check again), with a descriptor, and so a read-ahead, of its own.
 */
static int member_reopen(int fd)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * Every member opened at once: an NBD member's connections (several with
 * multi-conn, each a TLS handshake with nbds://) cost round trips, which
 * for eight servers in turn would cost more than reading a file's share.
 * A clone's (origin not NULL) path members the origin has open are its
 * files opened again; the rest are opened by name as the origin's were.
 */
static void members_open_all(struct pony_layout *l, const struct pony_layout *origin)
{
	struct member_opening *o = calloc(l->nmembers, sizeof(*o));

	for (unsigned i = 0; i < l->nmembers; i++) {
		l->members[i].fd = origin && origin->members[i].fd >= 0 ?
				   member_reopen(origin->members[i].fd) : -1;
		if (l->members[i].fd >= 0)
			continue;
		if (o && bdev_name_is_nbd(l->members[i].arg.device)) {
			o[i] = (struct member_opening){ .l = l, .m = &l->members[i] };
			o[i].started = !pthread_create(&o[i].thread, NULL, member_open_main, &o[i]);
		}
		if (!o || !o[i].started)
			member_open(l, &l->members[i]);
	}
	for (unsigned i = 0; o && i < l->nmembers; i++)
		if (o[i].started)
			pthread_join(o[i].thread, NULL);
	free(o);
}

int layout_members_get(struct pony_layout *l)
{
	struct ponyfuse_layout_member_arg first = { .version = PONYFUSE_LAYOUT_VERSION };

	if (ioctl(l->fd, PONYFUSE_IOC_LAYOUT_MEMBER, &first) < 0)
		return -errno;
	if (!first.nmembers)
		return -EPROTO;
	l->members = calloc(first.nmembers, sizeof(*l->members));
	if (!l->members)
		return -ENOMEM;
	l->nmembers = first.nmembers;
	for (unsigned i = 0; i < l->nmembers; i++) {
		struct layout_member *m = &l->members[i];

		m->fd = -1;
		m->arg = (struct ponyfuse_layout_member_arg){ .version = PONYFUSE_LAYOUT_VERSION,
							       .index = i };
		if (ioctl(l->fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m->arg) < 0)
			return -errno;
	}
	return 0;
}

/* The same through the layout service. */
static int members_get_remote(struct pony_layout *l)
{
	struct ponyfuse_layout_member_arg *args;
	unsigned n;
	int r = layout_remote_members(l, &args, &n);

	if (r < 0)
		return r;
	l->members = n ? calloc(n, sizeof(*l->members)) : NULL;
	if (l->members) {
		l->nmembers = n;
		for (unsigned i = 0; i < n; i++) {
			l->members[i].fd = -1;
			l->members[i].arg = args[i];
		}
	}
	free(args);
	return !n ? -EPROTO : l->members ? 0 : -ENOMEM;
}

/* The members of the data region, each opened read-only (or none: missing). */
static int members_open(struct pony_layout *l)
{
	int r = l->remote ? members_get_remote(l) : layout_members_get(l);

	if (r < 0)
		return r;
	l->region_offset = l->members[0].arg.region_offset;
	members_open_all(l, NULL);
	return 0;
}

/* The layout of l's range (its source set), its members opened. */
int layout_get_members(struct pony_layout *l)
{
	int r = layout_fetch(l);

	if (!r && (l->flags & PONYFUSE_LAYOUT_ON_VOLUME))
		r = members_open(l);
	return r;
}

int pony_layout_get(int fd, uint64_t off, uint64_t len, struct pony_layout **ret)
{
	struct pony_layout *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	l->off = off;
	l->end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	r = l->fd < 0 ? -errno : layout_get_members(l);
	if (r) {
		pony_layout_return(l);
		return r;
	}
	*ret = l;
	return 0;
}

int pony_layout_get_path(const char *path, uint64_t off, uint64_t len, struct pony_layout **ret)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : pony_layout_get(fd, off, len, ret);
}

/* A copy of n elements of src (NULL for none), into *ret. */
static int array_dup(void **ret, const void *src, size_t n, size_t sz)
{
	*ret = n ? malloc(n * sz) : NULL;
	if (n && !*ret)
		return -ENOMEM;
	if (n)
		memcpy(*ret, src, n * sz);
	return 0;
}

int pony_layout_clone(const struct pony_layout *l, struct pony_layout **ret)
{
	struct pony_layout *c;
	int r;

	if (l->remote)
		return -EOPNOTSUPP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct pony_layout){
		.off = l->off, .end = l->end, .size = l->size, .flags = l->flags,
		.block_size = l->block_size, .lease = l->lease, .lease_borrowed = l->lease != 0,
		.next = l->next, .ext_cap = l->next, .ncsums = l->ncsums, .csums_cap = l->ncsums,
		.npieces = l->npieces, .pieces_cap = l->npieces, .region_offset = l->region_offset,
	};
	c->fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 3);
	r = c->fd < 0 ? -errno : array_dup((void **)&c->ext, l->ext, l->next, sizeof(*l->ext));
	if (!r)
		r = array_dup((void **)&c->csums, l->csums, l->ncsums, sizeof(*l->csums));
	if (!r)
		r = array_dup((void **)&c->pieces, l->pieces, l->npieces, sizeof(*l->pieces));
	if (!r && l->nmembers) {
		/* Opened again: each reader its own descriptors (and
		 * read-ahead) of the files the origin checked to be the
		 * members; those it refused looked up and checked again. */
		c->members = calloc(l->nmembers, sizeof(*c->members));
		r = c->members ? 0 : -ENOMEM;
		for (unsigned i = 0; !r && i < l->nmembers; i++)
			c->members[i] = (struct layout_member){ .fd = -1, .arg = l->members[i].arg };
		if (!r) {
			c->nmembers = l->nmembers;
			members_open_all(c, l);
		}
	}
	if (r) {
		pony_layout_return(c);
		return r;
	}
	*ret = c;
	return 0;
}

uint64_t pony_layout_size(const struct pony_layout *l)
{
	return l->size;
}

void pony_layout_stats(const struct pony_layout *l, struct pony_layout_stats *ret)
{
	*ret = l->stats;
	ret->members_refused = atomic_load(&l->members_refused);
}

int pony_layout_return(struct pony_layout *l)
{
	int r;

	if (!l)
		return 0;
	r = l->fd >= 0 || l->remote ? lease_return(l) : 0;
	layout_rebuild_done(l);
	acall_ring_free(l->ring);
	for (unsigned i = 0; i < l->nmembers; i++) {
		if (l->members[i].fd >= 0)
			close(l->members[i].fd);
		bdev_free(l->members[i].dev);
	}
	if (l->fd >= 0)
		close(l->fd);
	layout_remote_free(l->remote);
	free(l->members);
	free(l->ext);
	free(l->csums);
	free(l->pieces);
	free(l);
	return r;
}
