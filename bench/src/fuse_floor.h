/*
 * fuse_floor.h - the FUSE floor's in-memory namespace (fuse_floor_tree.c),
 * shared with its request handlers (fuse_floor.c): nodes by inode number
 * and a hash of (parent, name). One request at a time holds it (fuse_floor.c's
 * COUNT), so nothing here locks.
 */
#ifndef PONY_BENCH_FUSE_FLOOR_H
#define PONY_BENCH_FUSE_FLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct node {
	struct stat st;
	uint64_t parent;
	char *name;                     /* NULL once removed */
	size_t kidx;                    /* its index in the parent's kids */
	uint64_t *kids;                 /* directories: child inos, 0 = removed */
	size_t nkids, cap, nlive;       /* nlive: kids not removed */
};

struct slot {                           /* the (parent, name) -> ino hash */
	uint64_t parent, ino;           /* ino 0: empty; UINT64_MAX: removed */
	const char *name;
};


extern struct node *nodes;              /* by inode number; 0 unused, 1 the root */

struct slot *slot_find(uint64_t parent, const char *name, bool for_insert);
void name_add(uint64_t parent, const char *name, uint64_t ino);
void name_drop(struct slot *s);
uint64_t node_new(uint64_t parent, const char *name, mode_t mode, uid_t uid, gid_t gid);
void populate(bool empty, int dirs, int per, int rm, long big_mb);

#endif
