/*
 * format.h - ponyfs's on-disk format as the code sees it: the block size,
 * the superblock and its feature bits, the flags of extent rows, and the
 * store under SQLite (sqlite_vfs.c: the database and WAL as extents of
 * the two regions; chunks.c: the chunk table they grow by). Every field
 * is documented in docs/ponyfs-format.md. Included by internal.h.
 */
#ifndef PONYFS_FORMAT_H
#define PONYFS_FORMAT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "pony/bdev.h"
#include "pony/crypt.h"
#include "pony/ponyfs.h"
#include "pony/util.h"

#define BS PONYFS_BLOCK_SIZE
#define PONYFS_IO_BLOCKS 256u   /* blocks per data-region I/O, and most per extent row: 1 MiB */
#define PONYFS_EXT_ROW_BYTES 48u /* an extent row in its cell, less its checksums (space.c) */
#define PONYFS_MAGIC "PONYFS1"
#define PONYFS_VERSION 1
/* PRAGMA user_version: 2 added extents.flags, 3 meta_chunks, 4 inodes.crypt
 * (docs/ponyfs-format.md). */
#define PONYFS_SCHEMA_VERSION 5
/* extents.flags: the blocks are allocated but were never written; they read
 * as zeros, have no checksums, and the first write goes into them in place. */
#define PONYFS_EXT_UNWRITTEN 1
/* extents.flags: an aes-256-gcm file's blocks; each block's csums entry is
 * PONYFS_SEAL_BYTES (its CRC32C, then the GCM nonce and tag) */
#define PONYFS_EXT_SEALED 2
#define PONYFS_SEAL_BYTES (4 + CRYPT_GCM_NONCE_SIZE + CRYPT_GCM_TAG_SIZE)
#define PONYFS_SB_SIZE 4096u

/* Superblock flags: incompatible features; a reader refuses bits it does not know. */
#define PONYFS_FEAT_META_CHUNKS 1u      /* chunk table at ctab_off: metadata grows into data */
#define PONYFS_FEATURES PONYFS_FEAT_META_CHUNKS
#define PONYFS_CTAB_SIZE 4096u          /* a chunk table copy; two, one after the other */
#define PONYFS_CHUNKS_MAX 252           /* entries of a chunk table */

/* Superblock v1, little-endian (docs/ponyfs-format.md). Never reorder. */
struct ponyfs_sb_disk {
/*00*/	uint8_t magic[8];
/*08*/	le32 version;
/*0c*/	le32 crc32c;
/*10*/	uint8_t uuid[16];
/*20*/	le32 block_size;
/*24*/	le32 flags;
/*28*/	le64 meta_bytes;
/*30*/	le64 db_bytes;
/*38*/	le64 wal_bytes;
/*40*/	le64 data_blocks;
/*48*/	le64 mkfs_time;
/*50*/	char label[32];
/*70*/	le64 ctab_off;                  /* FEAT_META_CHUNKS: the chunk table's first copy */
/*78*/	le64 db_off;                    /* FEAT_META_CHUNKS: the database (else 4096) */
/*80*/	uint8_t reserved[3968];
};
_Static_assert(sizeof(struct ponyfs_sb_disk) == PONYFS_SB_SIZE, "on-disk size");

struct ponyfs_sb {
	uint8_t uuid[16];
	uint32_t flags;
	uint64_t meta_bytes, db_off, db_bytes, wal_bytes, data_blocks, ctab_off;
	char label[32];
};

int ponyfs_sb_read(struct bdev *meta, struct ponyfs_sb *ret);
/* CRC32C of len bytes whose 4-byte checksum field at off counts as zero. */
uint32_t ponyfs_block_crc(const void *buf, size_t len, size_t off);
/* Both regions of a one-image ponyfs, as slices of dev (the caller frees them). */
int ponyfs_image_regions(struct bdev *dev, struct bdev **ret_meta, struct bdev **ret_data);

/*
 * The SQLite side (sqlite_vfs.c). The database file and its WAL are each
 * a list of extents on the metadata region (dev PONYFS_SQLITE_META) or the
 * data region (PONYFS_SQLITE_DATA), whole sectors, in file order.
 */
enum { PONYFS_SQLITE_META, PONYFS_SQLITE_DATA };
enum { PONYFS_SQLITE_DB, PONYFS_SQLITE_WAL };
#define PONYFS_SQLITE_EXTENTS (1 + PONYFS_CHUNKS_MAX)
struct ponyfs_sqlite_extent { uint64_t off, len; uint8_t dev; };
struct ponyfs_sqlite_map { unsigned n; struct ponyfs_sqlite_extent e[PONYFS_SQLITE_EXTENTS]; };
/* devs[] and the maps' extents are the caller's; -EINVAL for an extent off its region. */
int ponyfs_sqlite_open(struct bdev *const devs[2], const struct ponyfs_sqlite_map *db,
		       const struct ponyfs_sqlite_map *wal, sqlite3 **ret);
void ponyfs_sqlite_close(sqlite3 *db);      /* NULL: nothing */
/* File which (PONYFS_SQLITE_DB or _WAL) gets e as its next extent, open or not. */
int ponyfs_sqlite_extend(sqlite3 *db, int which, const struct ponyfs_sqlite_extent *e);
uint64_t ponyfs_sqlite_room(sqlite3 *db, int which);   /* bytes the file's extents hold */
/* WAL frames in use: to the last one written since SQLite last started it
 * over; 0 after ponyfs_sqlite_wal_recycled() (a complete checkpoint: the
 * next transaction starts it over) until the next write. room: those its
 * extents hold. */
uint64_t ponyfs_sqlite_wal_frames(sqlite3 *db, bool room);
void ponyfs_sqlite_wal_recycled(sqlite3 *db);
/* SQLite's result codes as -errno: the one table (see ponyfs_sql_err()). */
int ponyfs_sqlite_errno(int rc);
/* The errno of the bdev call that failed last, then forgotten; 0: none. */
int ponyfs_sqlite_io_errno(sqlite3 *db);
/* The database of the filesystem on meta and data, through its chunk table. */
int ponyfs_sqlite_open_sb(struct bdev *meta, struct bdev *data, const struct ponyfs_sb *sb,
			  sqlite3 **ret);

/* Metadata chunks (chunks.c): extents of the data region the database or WAL grew into. */
struct ponyfs_chunk { uint64_t pblock, nblocks; uint8_t file; };
struct ponyfs_chunks {
	uint64_t gen;                   /* of the chunk table copy it came from */
	unsigned n;
	struct ponyfs_chunk c[PONYFS_CHUNKS_MAX];
};
/* The newer valid copy; no chunks for an image without FEAT_META_CHUNKS. */
int ponyfs_chunks_read(struct bdev *meta, const struct ponyfs_sb *sb, struct ponyfs_chunks *ret);
int ponyfs_chunks_write(struct bdev *meta, const struct ponyfs_sb *sb, struct ponyfs_chunks *c);
int ponyfs_chunks_init(struct bdev *meta, const struct ponyfs_sb *sb);       /* mkfs */
/* Opens the database where the chunk table says it lives; the chunks in *ret_chunks. */
int ponyfs_meta_open(struct bdev *meta, struct bdev *data, const struct ponyfs_sb *sb,
		     struct ponyfs_chunks *ret_chunks, sqlite3 **ret);

#endif
