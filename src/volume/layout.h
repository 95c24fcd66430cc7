/*
 * layout.h - where Linux md puts data and parity: raid0, raid1, raid4/5/6 in
 * every md algorithm, raid10 near/far/offset. Pure arithmetic, bit for bit
 * md's (drivers/md/raid5.c raid5_compute_sector, raid10.c raid10_find_phys),
 * so an array written through these maps is the array md would have written.
 */
#ifndef PONY_VOLUME_LAYOUT_H
#define PONY_VOLUME_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "parity.h"

/* md's algorithm numbers (the superblock's layout field for levels 4/5/6). */
enum {
	MD_LEFT_ASYMMETRIC = 0,
	MD_RIGHT_ASYMMETRIC = 1,
	MD_LEFT_SYMMETRIC = 2,
	MD_RIGHT_SYMMETRIC = 3,
	MD_PARITY_0 = 4,
	MD_PARITY_N = 5,
	MD_ROTATING_ZERO_RESTART = 8,   /* DDF */
	MD_ROTATING_N_RESTART = 9,      /* DDF */
	MD_ROTATING_N_CONTINUE = 10,    /* DDF */
	MD_LEFT_ASYMMETRIC_6 = 16,
	MD_RIGHT_ASYMMETRIC_6 = 17,
	MD_LEFT_SYMMETRIC_6 = 18,
	MD_RIGHT_SYMMETRIC_6 = 19,
	MD_PARITY_0_6 = 20,
};

#define LAYOUT_MAX_DISKS (PARITY_MAX_DATA + 2)

/* An array's geometry. Sizes in bytes, all multiples of chunk. */
struct layout_geom {
	unsigned level;                 /* 0, 1, 4, 5, 6, 10 */
	unsigned layout;                /* md algorithm, or raid10's nc | fc << 8 | offset << 16 */
	unsigned ndisks;
	uint64_t chunk;                 /* bytes; raid1: unused */
	uint64_t dev_size;              /* bytes of each member the array uses */
};

/* One raid4/5/6 stripe: which disk holds data block i, P and Q. */
struct layout_stripe {
	int pd, qd;                     /* qd -1 without Q */
	unsigned ndata;
	unsigned disk[PARITY_MAX_DATA]; /* data block i -> disk */
	uint8_t qexp[PARITY_MAX_DATA];  /* Q exponent of data block i (md's slot) */
};

/* 0 when md would accept the geometry, else -EINVAL (-EOPNOTSUPP: valid but not done). */
int layout_geom_check(const struct layout_geom *g);
/* Data disks per stripe: ndisks minus parity (raid0: ndisks; raid1, raid10: see size). */
unsigned layout_ndata(const struct layout_geom *g);
/* The array's size in bytes, as md computes it. */
uint64_t layout_array_size(const struct layout_geom *g);
/* Parity members a stripe can lose and still be read (raid10: near copies - 1 guaranteed). */
unsigned layout_redundancy(const struct layout_geom *g);

/* raid4/5/6: the stripe (row of chunks) number s. */
void layout_raid456_stripe(const struct layout_geom *g, uint64_t s, struct layout_stripe *ret);

/*
 * raid10: the copies of array chunk c. Writes up to near*far (disk, byte
 * offset of the chunk on that disk) pairs, returns their number.
 */
unsigned layout_raid10_copies(const struct layout_geom *g, uint64_t c, unsigned *disk,
			      uint64_t *dev_off);

/*
 * raid10, the reverse: the array chunk whose copy number *ret_copy (0: the
 * first, the one reads use) member disk holds at byte dev_off (rounded
 * down to its chunk). -ENOENT when no chunk of the array is there.
 */
int layout_raid10_chunk_at(const struct layout_geom *g, unsigned disk, uint64_t dev_off,
			   uint64_t *ret_chunk, unsigned *ret_copy);

/* raid10 layout word pieces. */
static inline unsigned layout_raid10_near(unsigned layout) { return layout & 0xff; }
static inline unsigned layout_raid10_far(unsigned layout) { return (layout >> 8) & 0xff; }
static inline bool layout_raid10_offset(unsigned layout) { return layout >> 16 & 1; }

/* mdadm/dm names <-> md algorithm numbers ("left-symmetric", "ls", "raid5_ls" ...). */
int layout_from_name(unsigned level, const char *name, unsigned *ret_layout);
const char *layout_name(unsigned level, unsigned layout);

#endif
