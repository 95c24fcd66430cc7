/*
 * prefetch.c - reading lower directories ahead of a tree walk. When a
 * directory's listing is taken, its lower subdirectories are queued, and a
 * thread of the union reads each one (its entries, and every entry's inode)
 * through the lower's vfs, so that when the walker (find, ls -R, du) asks
 * for them the host's dentry, inode and directory-block caches hold them.
 * On a cold cache a FUSE walk otherwise waits on the disk for every
 * directory, one after the other, between two round trips of its own; with
 * the reads done ahead the disk works while the round trips happen (the
 * walker goes through the listing in the order queued: cookie order).
 * The thread's lookups of the entries are kept, with their references, for
 * the walker's lookups to take (union_prefetch_take_locked()): the lookups
 * the FUSE readdirplus needs are then done on the other core. They are keyed
 * by the layer and the directory's st_dev and st_ino (never reused: the
 * lower is read-only), kept first in, first out, the oldest dropped when
 * PREFETCH_ENTRIES are kept. So that what it reads is used, the thread
 * keeps at most PREFETCH_LEAD directories ahead of the walker's listings
 * (waiting a moment for each, after which a walker that stopped is not
 * waited for), and skips a directory the walker listed already.
 *
 * Only reads: lowers are read-only, and nothing the union shows comes from
 * here; the thread takes no union state but the directory node's lowers,
 * under u->lock, with a reference on the node held while it is queued.
 * The queue is bounded; a full queue drops the rest, which are then simply
 * read when asked for, as before.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pony/util.h"

#define PREFETCH_MAX 4096               /* directories queued at most */
#define PREFETCH_ENTRIES 16384          /* looked-up entries kept (power of 2) */
#define PREFETCH_LEAD 128               /* directories read ahead of the walker */
#define PREFETCH_WAIT_NS 200000000L     /* longest wait for the walker */

/* A lookup done ahead, for the walker's: one reference on e.ino. */
struct prefetch_entry {
	struct prefetch_entry *hnext;
	unsigned layer;
	uint64_t dir;                   /* its directory's st_ino in the layer */
	dev_t dev;                      /* and st_dev */
	size_t slot;                    /* its place in the ring */
	struct vfs_entry e;
	char name[];
};

struct prefetch_item {
	struct union_node *dir;         /* holds a reference */
	char *name;
};

/* The queue, a ring; all fields protected by lock. */
struct union_prefetch {
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* work queued, or stop */
	pthread_cond_t space;           /* a listing taken, or stop */
	uint64_t listed, warmed;        /* listings taken, directories read */
	pthread_t thread;
	bool stop;
	struct prefetch_item q[PREFETCH_MAX];
	size_t head, n;
	struct prefetch_entry *ring[PREFETCH_ENTRIES]; /* oldest first; NULL: taken */
	size_t ring_head, ring_n;
	struct prefetch_entry *hash[PREFETCH_ENTRIES];
	uint64_t hits;                  /* entries taken by the walker */
};

static size_t entry_hash(unsigned layer, uint64_t dir, const char *name)
{
	uint64_t h = (dir * 0x9e3779b97f4a7c15ull) ^ layer;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29) & (PREFETCH_ENTRIES - 1);
}

static void entry_unhash_locked(struct union_prefetch *p, struct prefetch_entry *pe)
{
	struct prefetch_entry **q = &p->hash[entry_hash(pe->layer, pe->dir, pe->name)];

	while (*q != pe)
		q = &(*q)->hnext;
	*q = pe->hnext;
	p->ring[pe->slot] = NULL;
}

/* Drops the oldest kept entry (or taken slot) of the ring. */
static void ring_pop_locked(struct union_fs *u, struct union_prefetch *p)
{
	struct prefetch_entry *pe = p->ring[p->ring_head];

	if (pe) {
		entry_unhash_locked(p, pe);
		VFS_FORGET(u->lowers[pe->layer], pe->e.ino, 1);
		free(pe);
	}
	p->ring_head = (p->ring_head + 1) % PREFETCH_ENTRIES;
	p->ring_n--;
}

/* Keeps e (its reference) for the walker; forgets it if it cannot. */
static void entry_keep(struct union_fs *u, unsigned layer, const struct statx *dir,
		       const char *name, const struct vfs_entry *e)
{
	struct union_prefetch *p = u->prefetch;
	size_t len = strlen(name) + 1;
	struct prefetch_entry *pe = malloc(sizeof(*pe) + len);

	if (!pe) {
		VFS_FORGET(u->lowers[layer], e->ino, 1);
		return;
	}
	*pe = (struct prefetch_entry){ .layer = layer, .dir = dir->stx_ino,
				       .dev = union_statx_dev(dir), .e = *e };
	memcpy(pe->name, name, len);
	pthread_mutex_lock(&p->lock);
	if (p->ring_n == PREFETCH_ENTRIES)
		ring_pop_locked(u, p);
	size_t h = entry_hash(layer, pe->dir, name);
	pe->slot = (p->ring_head + p->ring_n++) % PREFETCH_ENTRIES;
	p->ring[pe->slot] = pe;
	pe->hnext = p->hash[h];
	p->hash[h] = pe;
	pthread_mutex_unlock(&p->lock);
}

bool union_prefetch_take_locked(struct union_fs *u, const struct union_lower *dir,
				const char *name, struct vfs_entry *ret)
{
	struct union_prefetch *p = u->prefetch;
	struct prefetch_entry *pe;

	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	for (pe = p->hash[entry_hash(dir->layer, dir->st_ino, name)]; pe; pe = pe->hnext)
		if (pe->dir == dir->st_ino && pe->dev == dir->dev && pe->layer == dir->layer &&
		    !strcmp(pe->name, name))
			break;
	if (pe) {
		entry_unhash_locked(p, pe);
		p->hits++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!pe)
		return false;
	*ret = pe->e;
	free(pe);
	return true;
}

/* Reads one lower directory (attributes dir) and looks each entry up. */
static void warm_dir(struct union_fs *u, unsigned layer, uint64_t ino, const struct statx *dir)
{
	struct vfs *fs = u->lowers[layer];
	struct union_dirlist l = { 0 };
	struct vfs_entry e;

	union_list_layer_dir(u, layer, ino, &l);
	for (size_t i = 0; i < l.n; i++)
		if (VFS_CALL(fs, lookup, &u->root_ctx, ino, l.e[i].name, &e) == 0)
			entry_keep(u, layer, dir, l.e[i].name, &e);
	union_dirlist_done(&l);
}

/* Whether the walker listed the directory already: nothing to read ahead. */
static bool listed_already(struct union_fs *u, unsigned layer, const struct statx *x)
{
	struct union_node *n;
	bool r;

	pthread_mutex_lock(&u->lock);
	n = union_node_find_locked(u, union_key(layer, x->stx_ino));
	r = n && n->listed;
	pthread_mutex_unlock(&u->lock);
	return r;
}

static void warm(struct union_fs *u, const struct prefetch_item *it)
{
	struct union_lower lowers[UNION_MAX_LOWERS];
	unsigned n;

	pthread_mutex_lock(&u->lock);
	n = u->stale || it->dir->opaque ? 0 : it->dir->nlower;
	memcpy(lowers, it->dir->lower, n * sizeof(lowers[0]));
	pthread_mutex_unlock(&u->lock);
	/* The directory's lowers stay while the node lives (our reference). */
	for (unsigned i = 0; i < n; i++) {
		struct vfs *fs = u->lowers[lowers[i].layer];
		struct vfs_entry e;

		if (VFS_CALL(fs, lookup, &u->root_ctx, lowers[i].ino, it->name, &e) < 0)
			continue;
		if (S_ISDIR(e.attr.stx_mode) && !listed_already(u, lowers[i].layer, &e.attr)) {
			warm_dir(u, lowers[i].layer, e.ino, &e.attr);
			atomic_fetch_add(&u->prefetched, 1);
		}
		VFS_FORGET(fs, e.ino, 1);
	}
}

static void *prefetch_main(void *arg)
{
	struct union_fs *u = arg;
	struct union_prefetch *p = u->prefetch;

	for (;;) {
		struct prefetch_item it;

		pthread_mutex_lock(&p->lock);
		while (!p->n && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		it = p->q[p->head];
		p->head = (p->head + 1) % PREFETCH_MAX;
		p->n--;
		/* Not too far ahead of the walker, whose listings are counted:
		 * what was read too early is dropped before use. A walker that
		 * stopped is waited for a moment a directory. */
		if (p->warmed > p->listed + PREFETCH_LEAD) {
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += PREFETCH_WAIT_NS;
			t.tv_sec += t.tv_nsec / 1000000000L;
			t.tv_nsec %= 1000000000L;
			while (p->warmed > p->listed + PREFETCH_LEAD && !p->stop &&
			       pthread_cond_timedwait(&p->space, &p->lock, &t) == 0)
				;
		}
		p->warmed++;
		pthread_mutex_unlock(&p->lock);
		warm(u, &it);
		pthread_mutex_lock(&u->lock);
		union_node_unref_locked(u, it.dir, 1);
		pthread_mutex_unlock(&u->lock);
		free(it.name);
	}
}

/* The thread, started at the first listing; false if it cannot be. */
static bool prefetch_start_locked(struct union_fs *u)
{
	struct union_prefetch *p;

	if (u->prefetch)
		return true;
	if (u->no_prefetch || !(p = calloc(1, sizeof(*p))))
		return false;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_cond_init(&p->space, NULL);
	u->prefetch = p;
	if (pthread_create(&p->thread, NULL, prefetch_main, u) != 0) {
		u->prefetch = NULL;
		u->no_prefetch = true;
		pthread_cond_destroy(&p->space);
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return false;
	}
	return true;
}

void union_prefetch_dirs_locked(struct union_fs *u, struct union_node *dir,
				const struct union_dirlist *l)
{
	struct union_prefetch *p;

	dir->listed = true;
	if (!dir->nlower || dir->opaque || !prefetch_start_locked(u))
		return;
	p = u->prefetch;
	pthread_mutex_lock(&p->lock);
	p->listed++;
	pthread_cond_signal(&p->space);
	for (size_t i = 0; i < l->n && p->n < PREFETCH_MAX; i++) {
		char *name;

		/* Lower subdirectories only: the upper's are the union's own. */
		if (l->e[i].type != DT_DIR || !(l->e[i].ino >> UNION_LAYER_SHIFT) ||
		    !(name = strdup(l->e[i].name)))
			continue;
		dir->refs++;
		p->q[(p->head + p->n++) % PREFETCH_MAX] = (struct prefetch_item){ dir, name };
	}
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

int union_counters(struct vfs *fs, char *buf, size_t size)
{
	struct union_fs *u = union_of(fs);
	unsigned long long hits = 0;
	size_t queued = 0;

	if (u->prefetch) {
		pthread_mutex_lock(&u->prefetch->lock);
		queued = u->prefetch->n;
		hits = u->prefetch->hits;
		pthread_mutex_unlock(&u->prefetch->lock);
	}
	return snprintf(buf, size, "union_prefetch_dirs %llu\nunion_prefetch_queued %zu\n"
			"union_prefetch_lookups_taken %llu\n",
			(unsigned long long)atomic_load(&u->prefetched), queued, hits);
}

/* Before the nodes are freed: the thread is joined, the queue dropped (the
 * nodes it holds go with all the others). */
void union_prefetch_stop(struct union_fs *u)
{
	struct union_prefetch *p = u->prefetch;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_cond_signal(&p->space);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	for (; p->n; p->n--, p->head = (p->head + 1) % PREFETCH_MAX)
		free(p->q[p->head].name);
	while (p->ring_n)
		ring_pop_locked(u, p);
	pthread_cond_destroy(&p->space);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	u->prefetch = NULL;
}
