/*
 * node.c - the union's inode table: nodes keyed by their stable st_ino (the
 * layer in the top bits, the origin's inode number below, as overlayfs's xino
 * does), so two names of one lower file are one node, before and after
 * copy-up. Also the attributes a node shows and the check that a lower has
 * not changed under the union.
 */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "pony/util.h"

uint64_t union_key(unsigned layer, uint64_t ino)
{
	/* An inode number that does not fit below the layer bits is hashed
	 * into them; collisions are then possible, as with overlayfs's xino
	 * overflow, and only cost a shared st_ino. */
	if (ino >> UNION_LAYER_SHIFT) {
		ino *= 0x9e3779b97f4a7c15ull;
		ino ^= ino >> 31;
		ino &= (1ull << UNION_LAYER_SHIFT) - 1;
	}
	return (uint64_t)layer << UNION_LAYER_SHIFT | ino;
}

struct union_node *union_node_get(struct union_fs *u, uint64_t id)
{
	return id == VFS_ROOT_INO ? u->root : (struct union_node *)(uintptr_t)id;
}

uint64_t union_node_id(struct union_fs *u, struct union_node *n)
{
	return n == u->root ? VFS_ROOT_INO : (uint64_t)(uintptr_t)n;
}

static size_t key_hash(const struct union_fs *u, uint64_t key)
{
	uint64_t x = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(x ^ x >> 32) & (u->nbuckets - 1);
}

struct union_node *union_node_find_locked(struct union_fs *u, uint64_t key)
{
	if (!u->nbuckets)
		return NULL;
	for (struct union_node *n = u->buckets[key_hash(u, key)]; n; n = n->hnext)
		if (n->key == key)
			return n;
	return NULL;
}

static int grow_locked(struct union_fs *u)
{
	size_t nb = u->nbuckets ? u->nbuckets * 2 : 1024, oldn = u->nbuckets;
	struct union_node **b = calloc(nb, sizeof(*b)), **old = u->buckets;

	if (!b)
		return -ENOMEM;
	u->buckets = b;
	u->nbuckets = nb;
	for (size_t i = 0; i < oldn; i++) {
		for (struct union_node *n = old[i], *next; n; n = next) {
			size_t h = key_hash(u, n->key);

			next = n->hnext;
			n->hnext = b[h];
			b[h] = n;
		}
	}
	free(old);
	return 0;
}

int union_node_new_locked(struct union_fs *u, uint64_t key, mode_t type, unsigned nlower,
			  struct union_node **ret)
{
	struct union_node *n;

	if (u->count >= u->nbuckets && grow_locked(u) < 0)
		return -ENOMEM;
	n = calloc(1, sizeof(*n) + nlower * sizeof(n->lower[0]));
	if (!n)
		return -ENOMEM;
	n->key = key;
	n->type = type & S_IFMT;
	n->refs = 1;
	size_t h = key_hash(u, key);
	n->hnext = u->buckets[h];
	u->buckets[h] = n;
	u->count++;
	*ret = n;
	return 0;
}

void union_node_set_parent_locked(struct union_node *n, struct union_node *parent,
				  const char *name)
{
	char *copy = strdup(name);

	/* Out of memory keeps the old name: copy-up then uses it, and fails
	 * with ENOENT rather than write to a wrong place. */
	if (!copy)
		return;
	if (parent)
		parent->refs++;
	free(n->name);
	n->name = copy;
	/* The old parent's ref is dropped by the caller (it may free it). */
	n->parent = parent;
}

static void node_free_locked(struct union_fs *u, struct union_node *n)
{
	struct union_node **p = &u->buckets[key_hash(u, n->key)];

	while (*p != n)
		p = &(*p)->hnext;
	*p = n->hnext;
	u->count--;
	if (n->upper)
		VFS_FORGET(u->upper, n->upper, 1);
	for (unsigned i = 0; i < n->nlower; i++)
		VFS_FORGET(u->lowers[n->lower[i].layer], n->lower[i].ino, 1);
	union_dir_free(n->dir_cache);
	free(n->name);
	free(n);
}

void union_node_unref_locked(struct union_fs *u, struct union_node *n, uint64_t count)
{
	while (n && n != u->root) {
		struct union_node *parent = n->parent;

		n->refs -= MIN(count, n->refs);
		if (n->refs)
			return;
		node_free_locked(u, n);
		n = parent;
		count = 1;
	}
}

void union_nodes_free(struct union_fs *u)
{
	for (size_t i = 0; i < u->nbuckets; i++) {
		for (struct union_node *n = u->buckets[i], *next; n; n = next) {
			next = n->hnext;
			if (n->upper)
				VFS_FORGET(u->upper, n->upper, 1);
			for (unsigned j = 0; j < n->nlower; j++)
				VFS_FORGET(u->lowers[n->lower[j].layer], n->lower[j].ino, 1);
			union_dir_free(n->dir_cache);
			free(n->name);
			free(n);
		}
	}
	free(u->buckets);
}

void union_node_set_upper_locked(struct union_fs *u, struct union_node *n, uint64_t upper)
{
	n->upper = upper;
	if (S_ISDIR(n->type))
		return;         /* a directory keeps its lowers to merge */
	for (unsigned i = 0; i < n->nlower; i++)
		VFS_FORGET(u->lowers[n->lower[i].layer], n->lower[i].ino, 1);
	n->nlower = 0;
	/* After n->upper: an open file that sees the flag finds the upper. */
	atomic_store_explicit(&n->copied_up, true, memory_order_release);
}

bool union_is_whiteout(const struct statx *x)
{
	return S_ISCHR(x->stx_mode) && x->stx_rdev_major == 0 && x->stx_rdev_minor == 0;
}

int union_check_lower_locked(struct union_fs *u, struct union_lower *l, const struct statx *x)
{
	if (l->ctime.tv_sec != x->stx_ctime.tv_sec || l->ctime.tv_nsec != x->stx_ctime.tv_nsec)
		u->stale = true;
	return u->stale ? -ESTALE : 0;
}

void union_fix_attr(struct union_fs *u, struct union_node *n, struct statx *x)
{
	x->stx_ino = n->key;
	/* One st_dev for the whole union: the upper's. */
	x->stx_dev_major = major(u->upper_dev);
	x->stx_dev_minor = minor(u->upper_dev);
	/* A merged directory's link count is unknowable without reading every
	 * layer; overlayfs says 1 ("unknown", find and fts accept it). */
	if (S_ISDIR(x->stx_mode) &&
	    ((n->nlower && !n->opaque) || (u->flags & UNION_STATIC_NLINK)))
		x->stx_nlink = 1;
	union_idmap_show(u, x);
}

int union_node_statx_locked(struct union_fs *u, struct union_node *n, unsigned flags,
			    unsigned mask, struct statx *ret)
{
	int r;

	if (n->upper) {
		r = VFS_CALL(u->upper, statx, &u->root_ctx, n->upper, VFS_NO_FH, flags, mask, ret);
		/* A copied-up hard link: the index's link is no name, and lower
		 * names not linked up yet still count. */
		if (r == 0 && n->lower_links > 1 && ret->stx_nlink > 0) {
			int linked = union_linked_get(u, n->upper);

			ret->stx_nlink = ret->stx_nlink - 1 + n->lower_links -
					 (uint32_t)MIN((uint32_t)MAX(linked, 0), n->lower_links);
		}
	} else {
		struct union_lower *l = &n->lower[0];

		r = VFS_CALL(u->lowers[l->layer], statx, &u->root_ctx, l->ino, VFS_NO_FH, flags,
			     mask | STATX_CTIME, ret);
		if (r == 0)
			r = union_check_lower_locked(u, l, ret);
	}
	if (r == 0)
		union_fix_attr(u, n, ret);
	return r;
}

/* One lower inode seen: its ctime then. Nodes come and go; this stays. */
struct union_seen {
	struct union_seen *next;
	uint64_t key;
	struct statx_timestamp ctime;
};

static int seen_grow_locked(struct union_fs *u)
{
	size_t nb = u->nseen ? u->nseen * 2 : 4096, oldn = u->nseen;
	struct union_seen **b = calloc(nb, sizeof(*b)), **old = u->seen;

	if (!b)
		return -ENOMEM;
	u->seen = b;
	u->nseen = nb;
	for (size_t i = 0; i < oldn; i++) {
		for (struct union_seen *s = old[i], *next; s; s = next) {
			size_t h = (size_t)(s->key * 0x9e3779b97f4a7c15ull >> 20) & (nb - 1);

			next = s->next;
			s->next = b[h];
			b[h] = s;
		}
	}
	free(old);
	return 0;
}

int union_seen_check_locked(struct union_fs *u, unsigned layer, const struct statx *x)
{
	uint64_t key = union_key(layer, x->stx_ino);
	struct union_seen *s;
	size_t h;

	if (u->stale)
		return -ESTALE;
	if (u->seen_count >= u->nseen && seen_grow_locked(u) < 0)
		return -ENOMEM;
	h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (u->nseen - 1);
	for (s = u->seen[h]; s; s = s->next) {
		if (s->key != key)
			continue;
		if (s->ctime.tv_sec != x->stx_ctime.tv_sec ||
		    s->ctime.tv_nsec != x->stx_ctime.tv_nsec)
			u->stale = true;
		return u->stale ? -ESTALE : 0;
	}
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct union_seen){ .next = u->seen[h], .key = key, .ctime = x->stx_ctime };
	u->seen[h] = s;
	u->seen_count++;
	return 0;
}

void union_seen_free(struct union_fs *u)
{
	for (size_t i = 0; i < u->nseen; i++)
		for (struct union_seen *s = u->seen[i], *next; s; s = next) {
			next = s->next;
			free(s);
		}
	free(u->seen);
}
