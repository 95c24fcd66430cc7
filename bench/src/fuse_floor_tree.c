/*
 * fuse_floor_tree.c - the FUSE floor's namespace: nodes (an array by inode
 * number) and an open-addressed hash of (parent, name) -> inode, with
 * tombstones for removed names. Kept apart from the request handlers in
 * fuse_floor.c so each reads in one pass; this is all the "storage" the
 * floor does, and it should cost next to nothing against a round trip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuse_floor.h"

struct node *nodes;
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

struct slot *slot_find(uint64_t parent, const char *name, bool for_insert)
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

/* Names ino as (parent, name), which must be free: in the hash and in the
 * parent's kids. Removed slots count as used until the next grow. */
void name_add(uint64_t parent, const char *name, uint64_t ino)
{
	struct node *p = &nodes[parent], *n = &nodes[ino];

	if ((slots_used + 1) * 2 > nslots)
		slots_grow();
	n->parent = parent;
	n->name = strdup(name);
	if (!n->name)
		abort();
	*slot_find(parent, name, true) = (struct slot){ .parent = parent, .ino = ino,
							 .name = n->name };
	slots_used++;
	if (p->nkids == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->kids = realloc(p->kids, p->cap * sizeof(*p->kids));
		if (!p->kids)
			abort();
	}
	n->kidx = p->nkids;
	p->kids[p->nkids++] = ino;
	p->nlive++;
	if (S_ISDIR(n->st.st_mode))
		p->st.st_nlink++;
}

/* Takes away the name s of a node (the node stays: the kernel may still
 * hold it, open or cached). */
void name_drop(struct slot *s)
{
	struct node *n = &nodes[s->ino], *p = &nodes[s->parent];

	p->kids[n->kidx] = 0;
	p->nlive--;
	if (S_ISDIR(n->st.st_mode))
		p->st.st_nlink--;
	s->ino = UINT64_MAX;
	free(n->name);
	n->name = NULL;
}

uint64_t node_new(uint64_t parent, const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	struct timespec now;
	uint64_t ino;

	if (nnodes == nodes_cap) {
		nodes_cap = nodes_cap ? nodes_cap * 2 : 1 << 16;
		nodes = realloc(nodes, nodes_cap * sizeof(*nodes));
		if (!nodes)
			abort();
	}
	ino = nnodes++;
	clock_gettime(CLOCK_REALTIME, &now);
	nodes[ino] = (struct node){ 0 };
	nodes[ino].st = (struct stat){ .st_ino = ino, .st_mode = mode,
				       .st_nlink = S_ISDIR(mode) ? 2 : 1, .st_uid = uid,
				       .st_gid = gid, .st_blksize = 4096, .st_atim = now,
				       .st_mtim = now, .st_ctim = now };
	if (parent)
		name_add(parent, name, ino);
	return ino;
}

/* The root, and unless empty (--ponyfs) bench/union's lower. */
void populate(bool empty, int dirs, int per, int rm, long big_mb)
{
	uint64_t tree, rmme, sub = 0;
	char name[32];

	slots_grow();                                   /* lookups need a table */
	node_new(0, "", 0, 0, 0);                       /* ino 0: unused */
	node_new(0, "", S_IFDIR | 0755, 0, 0);          /* ino 1: the root */
	if (empty)
		return;
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
