/*
 * internal.h - what the files of src/ponyfs share: the mounted filesystem,
 * its cached inodes and their dirty blocks, the prepared statements, and
 * the transaction, allocation and writeback calls. Every call named
 * *_locked needs fs->lock held; one lock serialises the filesystem, so the
 * single SQLite connection and the open transaction need no more. The one
 * exception is a read's I/O and checksums (read.c): planned under the
 * lock, run without it, the blocks it reads kept from reuse by
 * fs->reuse_lock.
 *
 * The ordering rules the code cites by number (docs/ponyfs-format.md):
 *   1. data is written and flushed before the metadata that points at it
 *      commits; a file's size and extents change only at its writeback;
 *   2. rename-over, link and truncate-then-rewrite commit with the new data
 *      (all-old or all-new, no fsync; a renamed file's data is written at
 *      the commit, bound.c), and no write call is committed half copied;
 *   3. fsync writes back only its own file, then commits;
 *   4. fbarrier puts the file's data in the open transaction, not waiting;
 *   5. commits come from the timer, syncfs, fsync and unmount.
 */
#ifndef PONYFS_INTERNAL_H
#define PONYFS_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <syslog.h>

#include "pony/bdev.h"
#include "pony/crypt.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/vfs.h"

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
/* A file still open for writing with more than this cached is streaming:
 * the timer leaves its data cached (not in every 5-second commit) until
 * PONYFS_EXPIRE_NS after it was first dirtied, as the kernel's
 * dirty_expire_centisecs does. */
#define PONYFS_FILE_DIRTY_MAX (32u << 20)
/* A file with more than this cached is written back by its writer, as if
 * over the budget: that keeps the daemon's memory bounded (a 4 GiB dd had
 * 2.4 GB cached under the tenth-of-memory budget) and its pages warm (the
 * kernel zeroes fresh memory on first touch: 38% of the daemon's CPU over
 * that dd). Since data goes to the image past the host's cache
 * (bdev_pwrite_direct), nothing is gained by caching more before the
 * write: at 256 MiB, zeroing the slabs on first touch was still 30% of the
 * daemon's CPU over a 2 GiB dd; at 64 MiB, 15%. */
#define PONYFS_STREAM_MAX (64u << 20)
#define PONYFS_EXPIRE_NS (30ull * 1000000000ull)
#define PONYFS_DIRTY_MIN (64ull << 20)  /* the smallest default dirty_max */
/* A truncated file is held back from timer commits this long after its last truncation. */
#define PONYFS_HOLD_NS (2ull * 1000000000ull)
/* The overwrite reserve: a 64th of the data region, at most 8 MiB. */
#define PONYFS_OW_RESERVE_MAX 2048u
/* SQLite's page cache unless ponyfs_options.meta_cache says otherwise. */
#define PONYFS_META_CACHE_KIB "16384"
/* Slots of the statement cache: more than the SQL literals of src/ponyfs. */
#define PONYFS_STMT_CACHE 128

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
void ponyfs_destroy(struct vfs *v);

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

/* What a cached page will be written to, decided when it is made. */
enum ponyfs_page_kind {
	PONYFS_PAGE_NEW,                /* a new block, reserved in fs->reserved */
	PONYFS_PAGE_PREPAID,            /* a hole of a pending fallocate: its reservation pays */
	PONYFS_PAGE_INPLACE,            /* an unwritten block of the file, written in place */
	PONYFS_PAGE_OVERWRITE,          /* over a written block, its new one lent by the
					 * overwrite reserve (fs->ow_*) on a full filesystem */
};

/* A cached block of file data, newer than the disk. */
struct ponyfs_page {
	uint64_t index;                 /* file block */
	uint8_t *data;                  /* BS bytes */
	uint8_t kind;                   /* enum ponyfs_page_kind */
};

/* A fallocated range not yet in the database: [first, end) in file blocks. */
struct ponyfs_falloc { uint64_t first, end; };

/* An inode's encryption: inodes.crypt (docs/ponyfs-format.md), decoded. */
#define PONYFS_CRYPT_BYTES (CRYPT_POLICY_SIZE + CRYPT_NONCE_SIZE)
struct ponyfs_crypt {
	bool on;                        /* encrypted; the rest is valid */
	struct crypt_policy policy;
	uint8_t nonce[CRYPT_NONCE_SIZE];
};

/*
 * A cached inode: present while open or while it holds state the database
 * does not have yet (dirty blocks, a size or times to write back, a pending
 * truncation). Such state reaches the database only in writeback, together
 * with the data, which is what keeps a committed size from pointing past
 * committed data.
 */
struct ponyfs_inode {
	uint64_t ino;
	struct ponyfs_inode *hnext;     /* hash chain */
	struct ponyfs_inode *dnext, **dprev; /* dirty list; dprev NULL: not on it */
	unsigned opens, writers;
	uint64_t size;                  /* current size (the database may be behind) */
	struct ponyfs_page *pages;      /* sorted by index */
	size_t npages, cap;
	bool size_dirty;                /* size or times differ from the database */
	bool trunc_pending;             /* extents from trunc_to on must go at writeback */
	bool copying_in;                /* a write call is copying into its pages */
	bool orphan;                    /* its last name went while it was open */
	/* A rename or link moved a name to it while it had cached state: the
	 * open transaction must not commit without that state (rule 2), so
	 * the commit writes it back first (bound.c). Only while dirty. */
	bool bound;
	uint64_t trunc_to;
	uint64_t trunc_ns;              /* when it was last truncated */
	uint64_t dirty_ns;              /* when it went on the dirty list */
	int64_t mtime, ctime;           /* ns; valid when size_dirty */
	/* Access time (atime.c): cmtime is max(mtime, ctime), both valid when
	 * times_known; atime differs from the database when atime_dirty. */
	int64_t atime, cmtime;
	bool times_known, atime_dirty;
	/* Preallocation (falloc.c). fallocate reserves the holes of its range
	 * (falloc_res blocks, part of fs->reserved) and records the range;
	 * writeback turns the ranges' holes into unwritten extents, in the
	 * same transaction as the file's data, so a pending truncation is
	 * never committed ahead of the rewrite (rule 2). */
	struct ponyfs_falloc *falloc;   /* sorted, disjoint, not touching */
	size_t nfalloc;
	uint64_t falloc_res;            /* blocks reserved for the ranges' holes */
	uint64_t nnew, nprepaid;        /* pages of kind NEW and PREPAID */
	int8_t unwritten;               /* has unwritten extents: -1 unknown, 0 no, 1 maybe */
	/* Metadata space its writeback may need, held since the changes
	 * were acknowledged (space.c): WAL frames and database pages. */
	uint64_t res_wal, res_db;
	uint64_t trunc_rows;            /* extent rows the pending truncation removes */
	uint64_t page_runs;             /* runs of consecutive indexes in pages */
	/* Encryption (crypt_data.c): its policy and nonce, and while it has
	 * the key (from its first open on) its contents cipher, used under
	 * the lock (unlocked readers clone it). */
	struct ponyfs_crypt crypt;
	struct crypt_contents *cipher;
	/* Read-ahead (readahead.c): where the last read ended, and how far
	 * the image has been hinted (bytes of the file). */
	uint64_t ra_next, ra_until;
};

/* An open file; every one is on fs->handles, so unmount can free them. */
struct ponyfs_handle {
	struct ponyfs_inode *inode;
	int flags;
	struct vfs_ctx opener;          /* who opened it: whose writes drop set-ID bits */
	unsigned err_seq;               /* fs->err_seq when last reported to it */
	struct ponyfs_handle *next, **prev;
};

/*
 * What a change may cost the database file and the WAL, said before it is
 * made (space.c turns it into pages with the b-trees' depth bound).
 */
struct ponyfs_cost {
	uint32_t rows;                  /* cells changed at separate places of the b-trees */
	uint64_t run_bytes;             /* bytes of cells changed side by side (one file's rows) */
	uint64_t free_cells;            /* cells of the free table changed, anywhere in it */
	uint64_t big;                   /* overflow pages of values too big for a cell */
	bool frees;                     /* it frees space: may use half the emergency reserve */
};

/*
 * The metadata space's books (space.c), in pages of the database file and
 * frames of the WAL. Invariant, outside space.c's own calls: what is
 * measured plus what is reserved since (pending: by changes of the open
 * transaction; deferred: by dirty files for their writeback) fits the
 * files' room less the emergency reserve and the room a growth needs.
 */
struct ponyfs_space {
	unsigned depth;                 /* bound on the b-trees' depth for the database's size */
	uint64_t db_room, wal_room;     /* pages, frames the files' extents hold */
	uint64_t db_count, db_used;     /* page_count, and less the free list, when measured */
	uint64_t wal_frames;            /* frames in the WAL when measured */
	uint64_t wal_committed;         /* of them, committed (not yet checkpointed) */
	uint64_t db_pending, wal_pending;
	uint64_t db_deferred, wal_deferred;
	uint64_t emerg_db, emerg_wal;   /* the emergency reserve */
	uint64_t commits_seen;          /* fs->stats.commits when measured */
	uint64_t free_runs;             /* rows of the free table */
	bool stale;                     /* measure before trusting the numbers */
	bool full_logged;               /* ENOSPC logged, no reservation fitted since */
	bool emerg_logged;              /* the emergency reserve in use, logged */
};

enum ponyfs_stmt {
	ST_INODE_GET, ST_INODE_SIZE_TIMES, ST_DENTRY_GET,
	ST_EXT_PREV, ST_EXT_RANGE, ST_EXT_DEL, ST_EXT_INS,
	ST_FREE_FROM, ST_FREE_DEL, ST_FREE_INS, ST_FREE_PREV, ST_FREE_AT,
	ST_LOOKUP, ST_READDIR, ST_READDIR_PLUS, ST_INODE_GET_BLOCKS, ST_CREATE_CHECK,
	ST_COUNT
};

/* A master key added to the mount (crypt_keys.c), and who added it. */
#define PONYFS_KEY_USERS 16
struct ponyfs_key {
	struct crypt_master master;
	uid_t users[PONYFS_KEY_USERS];
	unsigned nusers;
	bool removing;                  /* incompletely removed: open files only */
	struct ponyfs_key *next;
};

/* A directory's encryption and names key, cached (crypt_policy.c). */
struct ponyfs_dircrypt {
	uint64_t ino;                   /* 0: an empty slot */
	struct ponyfs_crypt c;
	uint64_t key_gen;               /* fs->key_gen when name_key was derived */
	bool has_key;
	uint8_t name_key[32];
};
#define PONYFS_DIRCRYPT_SLOTS 256

/* A run of data blocks. */
struct ponyfs_run {
	uint64_t pblock, n;
};

/* An extent a direct writer sent for commit, not applied yet (dwrite.c). */
struct ponyfs_staged {
	uint64_t fblk, n, pblock;       /* file block, blocks, data-region block */
	uint32_t *csums;                /* n CRC32Cs */
};

/* A layout lease (lease.c): the data blocks its layouts named. */
struct ponyfs_lease {
	uint32_t id;
	bool recalled;                  /* blocks it names were freed, or members changed */
	uint64_t members_sig;           /* ponyfs_layout_members_sig() when given */
	uint64_t deadline_ns;           /* CLOCK_MONOTONIC */
	struct ponyfs_run *runs;
	size_t nruns, cap_runs;
	/* A write lease (dwrite.c): its file, the fresh stripes it was given
	 * (free in the table, held in memory: nothing records them, so a
	 * crash leaks nothing), and the extents sent for commit so far. */
	uint64_t write_ino;             /* 0: a read lease */
	struct ponyfs_run *wruns;
	size_t nwruns, cap_wruns;
	struct ponyfs_staged *staged;
	size_t nstaged, cap_staged;
};

/* Every lease of a mount, and the freed blocks they still name. */
struct ponyfs_leases {
	struct ponyfs_lease *l;
	size_t n, cap;
	uint32_t next_id;
	uint64_t ms;                    /* a lease's length */
	/* Freed blocks a live lease names: sorted, never touching; free in
	 * the table but not to be allocated until no lease names them. */
	struct ponyfs_run *held;
	size_t nheld, cap_held;
	uint64_t held_blocks;
	void (*recall_fn)(void *arg, uint32_t lease);   /* layout_recall_watch's */
	void *recall_arg;
};

/* An inodes row as the database holds it (rowcache.c); ino 0: an empty slot. */
struct ponyfs_row {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	uint64_t size, rdev;
	int64_t atime, mtime, ctime, btime;
	uint64_t blocks;                /* its extents' blocks, valid at blocks_epoch */
	uint64_t blocks_epoch;          /* fs->rows_epoch when counted; 0: not counted */
};
#define PONYFS_ROW_SLOTS 4096u          /* 384 KiB of cached rows */

struct ponyfs {
	struct vfs vfs;                 /* first: the instance header */
	pthread_mutex_t lock;
	/* Held for reading by reads doing I/O without the lock, for writing
	 * by a commit before the blocks it freed can be allocated (read.c). */
	pthread_rwlock_t reuse_lock;
	struct bdev *meta, *data;
	struct volume *volume;          /* the regions' volume (layouts); NULL: none */
	struct bdev *owned[3];          /* slices and such, freed at unmount */
	struct bdev *gates[2];          /* meta and data as the filesystem sees them (shutdown.c) */
	bool shut_down;                 /* the power was cut: every call is -EIO */
	struct ponyfs_sb sb;
	struct ponyfs_chunks chunks;    /* as in the chunk table */
	struct ponyfs_space space;
	uint64_t ninodes;               /* rows of inodes; UINT64_MAX: not counted yet */
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct ponyfs_row *rows;        /* PONYFS_ROW_SLOTS (rowcache.c) */
	uint64_t rows_epoch;            /* moves with every change of an extents row */
	/* Statements of one-off SQL, prepared once: keyed by the literal's address. */
	struct { const char *sql; sqlite3_stmt *st; } sc[PONYFS_STMT_CACHE];
	bool in_txn;                    /* BEGIN issued, COMMIT not yet */
	unsigned txn_ops;               /* names created in it (bounds its WAL use) */
	bool data_unflushed;            /* data written since the last data flush */
	int broken;                     /* a failed commit: every change fails with it */
	unsigned err_seq;               /* failures so far (errseq, for close) */
	char name[40];                  /* label or UUID, for log lines */
	bool read_only;
	enum ponyfs_atime atime_mode;
	/* Space, in blocks: free in the database, promised to dirty pages,
	 * and freed in the open transaction (reusable after it commits). */
	uint64_t free_blocks, reserved, pending_free_blocks;
	/* The overwrite reserve: blocks kept out of free space so that an
	 * overwrite (copy-on-write needs a new block until the commit frees
	 * the old one) never fails with ENOSPC. ow_dirty are lent to
	 * OVERWRITE pages, ow_written were allocated for them since the last
	 * commit, which frees as many old blocks and so returns them all. */
	uint64_t ow_reserve, ow_dirty, ow_written;
	struct ponyfs_run *pending;
	size_t npending, cap_pending;
	struct ponyfs_leases leases;    /* layout leases (lease.c) */
	struct ponyfs_inode *hash[256];
	struct ponyfs_inode *dirty;
	unsigned nbound;                /* of the dirty inodes, those bound to the open transaction */
	struct ponyfs_handle *handles;
	uint64_t dirty_bytes;
	uint64_t dirty_max;             /* see ponyfs_options.dirty_max */
	/* The pages' slabs (pages.c); free pages are linked through their first bytes. */
	void **slabs;
	size_t nslabs, cap_slabs;
	void *free_pages;
	uint64_t pages_used;
	struct ponyfs_stats stats;
	/* the commit timer */
	pthread_t timer;
	pthread_cond_t timer_cond;
	bool timer_running, stopping;
	unsigned commit_ms;
	ponyfs_report_t report;
	void *report_arg;
	/* Encryption: the keys added, bumped key_gen at every change of
	 * them; crypt_any: some inode is encrypted (else no name needs a look
	 * at its directory's policy). */
	struct ponyfs_key *keys;
	uint64_t key_gen;
	bool crypt_any;
	struct ponyfs_dircrypt *dircrypt;       /* PONYFS_DIRCRYPT_SLOTS */
	/* The data path's second thread (helper.c), set under lock, loaded
	 * atomically by readers; and the writeback's encrypted megabytes in
	 * flight on it (crypt_data.c), under lock. */
	struct ponyfs_helper *helper;
	bool helper_failed;
	uint64_t helper_jobs;           /* atomic: jobs handed to the helper (tests) */
	uint64_t reads_redone;          /* under lock: unlocked reads the locked path redid (tests) */
	struct ponyfs_crypt_out *crypt_out;
	/* Errors seen (badblocks.c), under lock; the scrub pass (scrub.c). */
	struct ponyfs_bad *bad;
	size_t nbad, cap_bad;
	struct ponyfs_scrub *scrub;
	unsigned reads_in_flight;       /* atomic: scrub yields while reads are under way */
	uint64_t read_end_ns;           /* atomic: when the last read ended (util_now_ns) */
};

static inline struct ponyfs *ponyfs_of(struct vfs *v) { return (struct ponyfs *)v; }

/* Runs expr with the filesystem locked; its value is the hook's. After a
 * shutdown (shutdown.c) nothing runs: -EIO. */
#define PONYFS_LOCKED(fs, expr) ({ \
	pthread_mutex_lock(&(fs)->lock); \
	__typeof__(expr) _r = (fs)->shut_down ? -EIO : (expr); \
	pthread_mutex_unlock(&(fs)->lock); \
	_r; })
/* A change: once a commit failed (ponyfs_fail_locked()), it fails with
 * that error before it reads anything. */
#define PONYFS_CHANGE(fs, expr) PONYFS_LOCKED(fs, (fs)->broken ? (fs)->broken : (expr))

/* Shutdown (shutdown.c): fs->meta and fs->data become gates over meta and data. */
int ponyfs_gates_open(struct ponyfs *fs, struct bdev *meta, struct bdev *data);
void ponyfs_gates_close(struct ponyfs *fs);
int ponyfs_shutdown(struct vfs *v, unsigned flags);
int ponyfs_counters(struct vfs *v, char *buf, size_t size);      /* counters.c */

/* Events (events.c): one line each, "ponyfs NAME: ...", to util_log() and
 * the report callback. prio is a syslog priority. */
void ponyfs_name_init(struct ponyfs *fs);
void ponyfs_log(struct ponyfs *fs, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *ponyfs_errno_name(int err);         /* -ENODEV -> "ENODEV" */

int64_t ponyfs_now(void);

/* SQL (txn.c). stmt() hands back a reset statement with its bindings cleared. */
sqlite3_stmt *ponyfs_stmt(struct ponyfs *fs, enum ponyfs_stmt which);
int ponyfs_exec(struct ponyfs *fs, const char *sql);
/* The cached statement of sql, a string literal (its address is the key),
 * reset with its bindings cleared; reset it after use, never finalize it. */
int ponyfs_prepare(struct ponyfs *fs, const char *sql, sqlite3_stmt **ret);
/* SQLite's rc as -errno (ponyfs_sqlite_errno(), the bdev's own errno for
 * an I/O error); when SQLite dropped the open transaction with it, the
 * filesystem is broken (ponyfs_fail_locked()). Every SQLite result of a
 * mounted filesystem goes through it. */
int ponyfs_sql_err(struct ponyfs *fs, int rc);
/* Steps s: 1 a row, 0 done, -errno (the statement is reset then). A failed
 * read is its error: never "no row", so never ENOENT or ENODATA. */
int ponyfs_step_row(struct ponyfs *fs, sqlite3_stmt *s);
/* Steps a statement that returns no row (or ignores them), then resets it; -errno. */
int ponyfs_step_done(struct ponyfs *fs, sqlite3_stmt *s);
/* The row a one-off query (sql, a literal) gives for ?1 = ino: 0 with *ret
 * on it (reset it after use), -ENOENT when none, -errno. */
int ponyfs_row_of(struct ponyfs *fs, const char *sql, uint64_t ino, sqlite3_stmt **ret);
/* Runs a one-off statement with int64 arguments (bound in order). */
int ponyfs_sql(struct ponyfs *fs, const char *sql, int n, ...);
/* Runs a one-off query returning one int64 in *ret; -ENOENT when no row. */
int ponyfs_sql_int(struct ponyfs *fs, int64_t *ret, const char *sql, int n, ...);
int ponyfs_txn_begin_locked(struct ponyfs *fs);
/* COMMIT of the open transaction, after the data flush (rule 1); the
 * files bound to it must have been written back (ponyfs_commit_locked). */
int ponyfs_txn_commit_locked(struct ponyfs *fs);
/* The filesystem goes read-only until remounted, err (the first) the
 * answer to every later change; logged once, with what failed. */
void ponyfs_fail_locked(struct ponyfs *fs, int err, const char *what);
int ponyfs_prepare_all(struct ponyfs *fs);
void ponyfs_finalize_all(struct ponyfs *fs);
int ponyfs_timer_start(struct ponyfs *fs);
void ponyfs_timer_stop(struct ponyfs *fs);

/*
 * The inodes rows, cached (rowcache.c). SQLite's hooks drop a row any
 * statement changes, and every row at a rollback; the block counts go
 * stale at every change of extents (ponyfs_rows_extents_changed()).
 */
int ponyfs_rows_init(struct ponyfs *fs);        /* after the database is open */
void ponyfs_rows_done(struct ponyfs *fs);
void ponyfs_rows_clear(struct ponyfs *fs);
void ponyfs_rows_extents_changed(struct ponyfs *fs);
/* The cached row of ino (with a valid block count when blocks); NULL: not cached. */
const struct ponyfs_row *ponyfs_row_cached(struct ponyfs *fs, uint64_t ino, bool blocks);
/* Caches row: what the database now holds for row->ino (after the statement that changed it). */
void ponyfs_row_store(struct ponyfs *fs, const struct ponyfs_row *row);
/* ST_INODE_GET's columns from column at of s on, for ino (no block count). */
void ponyfs_row_read(sqlite3_stmt *s, int at, uint64_t ino, struct ponyfs_row *ret);
/* Sets row's block count, valid from now until extents change. */
void ponyfs_row_blocks(struct ponyfs *fs, struct ponyfs_row *row, uint64_t blocks);
/* ino's row from memory or the database (cached then); -ENOENT: no such inode. */
int ponyfs_row_locked(struct ponyfs *fs, uint64_t ino, bool blocks, struct ponyfs_row *ret);

/* Metadata space (space.c): stages of ponyfs_space_reserve_locked(). */
enum { SPACE_MEASURE = 1, SPACE_COMMIT, SPACE_GROW };
/* Adds a value of len bytes to c: a cell, and its overflow pages. */
void ponyfs_cost_value(struct ponyfs_cost *c, uint64_t len);
/* Measures what the files use (after a commit, or when asked). */
void ponyfs_space_init_locked(struct ponyfs *fs);
/*
 * Reserves what c may cost before the change is made: when it does not fit,
 * measures; from SPACE_COMMIT on, commits and checkpoints; at SPACE_GROW,
 * grows the short file by chunks. -ENOSPC (logged) when it still does not
 * fit: nothing has changed then. Released at the next commit.
 */
int ponyfs_space_reserve_locked(struct ponyfs *fs, const struct ponyfs_cost *c, int stage);
/* The same for what in's writeback may cost (c, all of it): held until
 * ponyfs_space_release_locked(), across commits. */
int ponyfs_space_defer_locked(struct ponyfs *fs, struct ponyfs_inode *in,
			      const struct ponyfs_cost *c, int stage);
/* in's writeback reached the open transaction (written) or was dropped. */
void ponyfs_space_release_locked(struct ponyfs *fs, struct ponyfs_inode *in, bool written);
/* Data and metadata blocks, and inodes estimated from the room names have left. */
int ponyfs_statfs_locked(struct ponyfs *fs, struct statvfs *ret);
/* Grows the database (PONYFS_SQLITE_DB) or the WAL by a chunk (chunks.c). */
int ponyfs_chunk_grow_locked(struct ponyfs *fs, int which);
/* Mount: meta_chunks and the chunk table agree, chunks only meta_chunks has added. */
int ponyfs_chunks_reconcile_locked(struct ponyfs *fs);
/* Checkpoints the WAL into the database (no transaction may be open). */
int ponyfs_checkpoint_locked(struct ponyfs *fs);

/* Space (alloc.c). */
int ponyfs_alloc_locked(struct ponyfs *fs, uint64_t want, uint64_t *ret_start, uint64_t *ret_n);
int ponyfs_free_locked(struct ponyfs *fs, uint64_t pblock, uint64_t n);
int ponyfs_free_apply_locked(struct ponyfs *fs);   /* in the transaction, before COMMIT */
void ponyfs_free_committed_locked(struct ponyfs *fs);
int ponyfs_reserve_locked(struct ponyfs *fs, uint64_t n);
bool ponyfs_reserve_fits(const struct ponyfs *fs, uint64_t n);   /* n more blocks fit */

/* Pages of the cache (pages.c): BS bytes each, uninitialised; free NULL: nothing. */
uint8_t *ponyfs_page_alloc(struct ponyfs *fs);
void ponyfs_page_free(struct ponyfs *fs, uint8_t *page);
/* Gives the slabs back but one when no page is in use (the timer's tick). */
void ponyfs_pages_trim(struct ponyfs *fs);
uint64_t ponyfs_pages_mapped(const struct ponyfs *fs);     /* bytes of slabs */
void ponyfs_pages_done(struct ponyfs *fs);

/* Cached inodes and data (data.c). */
struct ponyfs_inode *ponyfs_inode_find(struct ponyfs *fs, uint64_t ino);
int ponyfs_inode_get_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_inode **ret);
void ponyfs_inode_put_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_inode_drop_locked(struct ponyfs *fs, struct ponyfs_inode *in);
ssize_t ponyfs_write_locked(struct ponyfs *fs, struct ponyfs_inode *in, const void *buf,
			    size_t size, uint64_t off);
int ponyfs_truncate_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t size);
int ponyfs_writeback_locked(struct ponyfs *fs, struct ponyfs_inode *in);
int ponyfs_writeback_all_locked(struct ponyfs *fs, bool skip_held);
/* Reads (read.c): takes the lock itself, drops it for the I/O. */
ssize_t ponyfs_read(struct ponyfs *fs, struct ponyfs_inode *in, void *buf, size_t size,
		    uint64_t off);
/*
 * Read-ahead of the image (readahead.c). Under the lock, a read of [off,
 * off+size) that follows the file's last one plans the volume blocks of
 * the file ahead of it into ra (ra->n 0: nothing to do now); unlocked,
 * issue hands them to bdev_readahead(). Hints only: nothing is cached.
 */
#define PONYFS_RA_RUNS 64u
struct ponyfs_ra_run { uint64_t pblock, n; };
struct ponyfs_readahead {
	unsigned n;
	struct ponyfs_ra_run run[PONYFS_RA_RUNS];
};
void ponyfs_readahead_plan_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off,
				  size_t size, struct ponyfs_readahead *ra);
void ponyfs_readahead_issue(struct ponyfs *fs, const struct ponyfs_readahead *ra);
/* The file's blocks [first, first+n) as on disk, checked (holes and cut-off blocks are zeros). */
int ponyfs_disk_read_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t first, uint64_t n,
			    uint8_t *buf);
int ponyfs_extents_remove_locked(struct ponyfs *fs, uint64_t ino, uint64_t first, uint64_t end);
/* Index in in->pages of the first page >= index. */
size_t ponyfs_page_pos(const struct ponyfs_inode *in, uint64_t index);
/* Writes k cached pages to blocks [p, p+k); *buf is scratch, allocated on first need. */
int ponyfs_pages_write(struct ponyfs *fs, const struct ponyfs_page *pg, uint64_t k, uint64_t p,
		       uint8_t **buf);
/*
 * What the database says about block blk of ino: *ret_flags (-1: a hole)
 * and how many blocks from blk, up to end, are the same (the rest of the
 * extent, or the hole up to the next extent); where they are, and (for a
 * written extent, ret_csums not NULL) their checksums, and for a sealed
 * one (ret_seals not NULL) each block's GCM nonce and tag
 * (PONYFS_SEAL_BYTES - 4 bytes). -EUCLEAN for an extent row whose
 * checksums do not fit it.
 */
int ponyfs_ext_at(struct ponyfs *fs, uint64_t ino, uint64_t blk, uint64_t end, int *ret_flags,
		  uint64_t *ret_run, uint64_t *ret_pblock, uint32_t *ret_csums, uint8_t *ret_seals);
/* Writes k cached pages of in to blocks [p, p+k), their checksums into
 * csums (ponyfs_csum_stride() bytes each); an encrypted file's go out
 * encrypted, checksummed as on disk (so fsck and scrub need no key), and
 * maybe only by ponyfs_crypt_out_drain_locked(), which the writeback calls. */
int ponyfs_pages_out(struct ponyfs *fs, struct ponyfs_inode *in, const struct ponyfs_page *pg,
		     uint64_t k, uint64_t p, uint8_t **buf, uint8_t *csums);
/* The flags of extents in's pages are written to: PONYFS_EXT_SEALED for GCM. */
static inline unsigned ponyfs_ext_written_flags(const struct ponyfs_inode *in)
{
	return in->crypt.on && in->crypt.policy.contents_mode == CRYPT_MODE_AES_256_GCM ?
	       PONYFS_EXT_SEALED : 0;
}
/* Extent rows: csums NULL for an unwritten extent. */
int ponyfs_ext_insert(struct ponyfs *fs, uint64_t ino, uint64_t foff, uint64_t nb,
		      uint64_t pblock, const uint8_t *csums, unsigned flags);
void ponyfs_dirty_add(struct ponyfs *fs, struct ponyfs_inode *in);

/*
 * Files bound to the open transaction (bound.c): rule 2 without a write at
 * the rename. A rename or link binds its file's cached state to the
 * transaction that holds the new name; every commit writes the bound
 * files back first, and a file bound and then changed (write, truncation,
 * fallocate, punch) is written back before the change, so what commits
 * with the name is the content the file had at the rename, or later
 * whole write calls, never less.
 */
void ponyfs_inode_bind_locked(struct ponyfs *fs, uint64_t ino);
/* Before in changes: writes it back if bound (-errno: the writeback's). */
int ponyfs_inode_unbind_locked(struct ponyfs *fs, struct ponyfs_inode *in);
/* Writes back the bound files, then commits (txn.c); the one way to commit. */
int ponyfs_commit_locked(struct ponyfs *fs);

/* Access times (atime.c). */
/* A read or readdir of in: atime moves as the mount says, written behind. */
int ponyfs_atime_access_locked(struct ponyfs *fs, struct ponyfs_inode *in);
/* ino's mtime or ctime became now (a cached inode's rule must see it). */
void ponyfs_times_changed(struct ponyfs *fs, uint64_t ino, int64_t now);
/* ino's atime was set in the database (utimensat): the cached one is stale. */
void ponyfs_atime_set(struct ponyfs *fs, uint64_t ino);

/* Reservations of file and namespace changes (reserve.c). */
/*
 * Metadata reservations that may make room by writing dirty files back
 * first (pin, if any, stays cached), then as ponyfs_space_reserve_locked()
 * does up to SPACE_GROW. -ENOSPC: nothing changed.
 */
int ponyfs_meta_reserve_locked(struct ponyfs *fs, const struct ponyfs_cost *c,
			       struct ponyfs_inode *pin);
/* in's writeback, with pages more cached pages, trunc_rows extent rows past
 * its cut (UINT64_MAX: as now) and falloc more fallocated blocks. */
int ponyfs_inode_reserve_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t pages,
				uint64_t trunc_rows, uint64_t falloc);
/* Holds what in's writeback costs now (less than reserved: the rest goes back). */
void ponyfs_inode_settle_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_inode_touch(struct ponyfs *fs, struct ponyfs_inode *in);

/* Preallocation, punch and block counts (falloc.c). */
int ponyfs_falloc_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off, uint64_t len);
/* Before a write call of n new pages on a full data region: returns the
 * overwrite reserve's loans (writeback and commit) if too few are left. */
int ponyfs_loans_prepare_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t n);
/* The kind a new page at index gets; reserves its block when NEW. */
int ponyfs_page_kind_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t index,
			    enum ponyfs_page_kind *ret);
/* Truncation to keep blocks: ranges from keep on are dropped (their
 * reservation stays until writeback, which releases all of it). */
void ponyfs_falloc_trim(struct ponyfs_inode *in, uint64_t keep);
/* Writeback, after the pending truncation: the ranges' holes become
 * unwritten extents, PREPAID pages INPLACE, the reservation is released. */
int ponyfs_falloc_apply_locked(struct ponyfs *fs, struct ponyfs_inode *in);
/* Writes k INPLACE pages (consecutive indexes) into their unwritten blocks. */
int ponyfs_write_inplace_locked(struct ponyfs *fs, struct ponyfs_inode *in,
				const struct ponyfs_page *pg, uint64_t k, uint8_t **buf);
int ponyfs_punch_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off, uint64_t len);
/* st_blocks (512-byte units) of ino with `extent_blocks` in its extents,
 * and what its cached pages and fallocated holes will take. */
uint64_t ponyfs_blocks_with_cached(struct ponyfs *fs, uint64_t ino, uint64_t extent_blocks);

/* Rows of dentries (dentry.c): name as dentries.name holds it (crypt_names.c). */
struct ponyfs_name;
void ponyfs_bind_name(sqlite3_stmt *s, int i, const struct ponyfs_name *name);
/* A statement of which whose ?1 is a directory and ?2 a name in it, bound. */
sqlite3_stmt *ponyfs_name_stmt(struct ponyfs *fs, enum ponyfs_stmt which, uint64_t parent,
			       const struct ponyfs_name *name);
/* The inode name names in parent (-ENOENT), and its mode when ret_mode is given. */
int ponyfs_dentry_ino_mode(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
			   uint64_t *ret, mode_t *ret_mode);
int ponyfs_dentry_ino(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      uint64_t *ret);
/* 0 when parent has no entry name, -EEXIST when it has, -errno when unknown. */
int ponyfs_dentry_absent(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name);
/* dir's mtime and ctime to now, nlink_delta added to its link count. */
int ponyfs_touch_dir(struct ponyfs *fs, uint64_t dir, int nlink_delta);
#define PONYFS_NO_TOUCH INT_MIN /* ponyfs_dentry_add: the parent's times stay */
int ponyfs_dentry_add(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      uint64_t ino, int touch);
int ponyfs_dentry_del(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name);
int ponyfs_dentry_move(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		       uint64_t newparent, const struct ponyfs_name *newname, uint64_t ino);
int ponyfs_dentry_set_ino(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
			  uint64_t ino);

/* Namespace helpers (namei.c). */
int ponyfs_inode_delete_locked(struct ponyfs *fs, uint64_t ino);
int ponyfs_fill_attr_locked(struct ponyfs *fs, uint64_t ino, unsigned mask, struct statx *ret);
int ponyfs_create_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, mode_t mode, dev_t rdev, const char *target,
			 struct vfs_entry *ret);
int ponyfs_lookup_locked(struct ponyfs *fs, uint64_t parent, const char *name,
			 struct vfs_entry *ret);
int ponyfs_link_locked(struct ponyfs *fs, uint64_t ino, uint64_t newparent, const char *newname,
		       struct vfs_entry *ret);
int ponyfs_remove_locked(struct ponyfs *fs, uint64_t parent, const char *name, bool dir);
int ponyfs_rename_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, uint64_t newparent, const char *newname, unsigned flags);
/* An entry of a listing; attr only with plus (readdirplus). */
struct ponyfs_dirent { char *name; uint64_t ino; unsigned type; uint64_t cookie; struct statx attr; };
int ponyfs_readdir_locked(struct ponyfs *fs, uint64_t ino, uint64_t cookie,
			  struct ponyfs_dirent *ret, size_t max, bool plus);
int ponyfs_readlink_locked(struct ponyfs *fs, uint64_t ino, char *buf, size_t size);

/* A time as the database keeps it (nanoseconds since the epoch), for statx. */
static inline struct statx_timestamp ponyfs_timestamp(int64_t ns)
{
	return (struct statx_timestamp){ .tv_sec = ns / 1000000000,
					 .tv_nsec = (uint32_t)(ns % 1000000000) };
}

/* Attribute rules the VFS applies for kernel filesystems (attr.c). */
/* Sets ino's ctime to now, in the database and in its cached times. */
int ponyfs_ctime_locked(struct ponyfs *fs, uint64_t ino, int64_t now);
/* The same for the cached times only: the caller writes the row's ctime. */
void ponyfs_ctime_note(struct ponyfs *fs, uint64_t ino, int64_t now);
/* The set-ID bits a change by ctx removes from a file of mode and group gid. */
mode_t ponyfs_setid_kill_bits(const struct vfs_ctx *ctx, mode_t mode, gid_t gid, bool chown);
/* The group and mode of a name ctx makes in a directory of mode pmode and
 * group pgid (set-group-ID inheritance). */
void ponyfs_new_owner(const struct vfs_ctx *ctx, mode_t pmode, gid_t pgid, mode_t *mode,
		      gid_t *ret_gid);
/* A write, truncation or fallocate (chown false) or a chown by ctx: drops
 * ino's set-ID bits as the kernel's setattr_should_drop_suidgid() says;
 * reserve: its metadata cost is not the caller's (see space.c). */
int ponyfs_setid_kill_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			     bool chown, bool reserve);
/* An access ACL set by ctx: S_ISGID goes unless ctx is in the group or capable. */
int ponyfs_acl_sgid_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino);

/* POSIX ACLs (acl.c). */
struct ponyfs_acl_inherit {
	uint8_t *access, *dflt;         /* NULL: none to store */
	size_t size, dflt_size;
};
/* An xattr's value into buf (size 0: only its length); -ENODATA when absent (ops.c). */
int ponyfs_getxattr_locked(struct ponyfs *fs, uint64_t ino, const char *name, void *buf, size_t size);
bool ponyfs_acl_name(const char *name);
int ponyfs_acl_set_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const char *name, const void *value, size_t size, int flags);
int ponyfs_acl_chmod_locked(struct ponyfs *fs, uint64_t ino, mode_t mode);
int ponyfs_acl_create_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			     mode_t *mode, struct ponyfs_acl_inherit *ret);
int ponyfs_acl_inherit_locked(struct ponyfs *fs, uint64_t ino, const struct ponyfs_acl_inherit *a);
void ponyfs_acl_inherit_done(struct ponyfs_acl_inherit *a);

/* Encryption: keys (crypt_keys.c). */
/* The key id names, if added (removing ones only when open_ok). */
struct ponyfs_key *ponyfs_key_find(struct ponyfs *fs, const uint8_t id[CRYPT_KEY_ID_SIZE],
				   bool open_ok);
/* c's per-file key for mode (its length: crypt_mode_key_size()); -ENOKEY. */
int ponyfs_crypt_key_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, enum crypt_mode mode,
			    bool open_ok, uint8_t *key);
void ponyfs_keys_free(struct ponyfs *fs);
/* An encrypted inode closed: an incompletely removed key may go now. */
void ponyfs_keys_closed_locked(struct ponyfs *fs);
int ponyfs_add_key(struct vfs *v, const struct vfs_ctx *ctx, const void *key, size_t len,
		   uint8_t id[16], const struct vfs_inval *inval);
int ponyfs_remove_key(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      unsigned flags, const struct vfs_inval *inval, unsigned *ret_flags);
int ponyfs_key_status(struct vfs *v, const struct vfs_ctx *ctx, const uint8_t id[16],
		      struct vfs_key_status *ret);
int ponyfs_crypt_salt(struct vfs *v, uint8_t salt[16]);

/* Encryption: policies (crypt_policy.c). */
/* inodes.crypt's value (NULL: none) into c; -EUCLEAN when it is not one. */
int ponyfs_crypt_decode(const void *blob, size_t len, struct ponyfs_crypt *c);
void ponyfs_crypt_encode(const struct ponyfs_crypt *c, uint8_t out[PONYFS_CRYPT_BYTES]);
/* ino's encryption (off: none), from its cached inode or its row. */
int ponyfs_inode_crypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_crypt *c);
/* The cached encryption of directory ino (read on a miss); NULL when no
 * inode of the filesystem is encrypted. */
int ponyfs_dircrypt_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_dircrypt **ret);
/* Its names key; -ENOKEY without the key. */
int ponyfs_dircrypt_key_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d);
void ponyfs_dircrypt_forget(struct ponyfs *fs, uint64_t ino);
int ponyfs_crypt_init_locked(struct ponyfs *fs);        /* mount: crypt_any, the cache */
void ponyfs_crypt_done(struct ponyfs *fs);
int ponyfs_set_policy(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const void *policy,
		      size_t len);
int ponyfs_get_policy(struct vfs *v, uint64_t ino, void *buf, size_t size);
int ponyfs_get_nonce(struct vfs *v, uint64_t ino, uint8_t nonce[16]);

/* Encryption: names (crypt_names.c). */
/*
 * A name as dentries.name holds it: the component itself, or in an
 * encrypted directory its ciphertext. FIND accepts a no-key name without
 * the key (and finds a long one's ciphertext); CREATE needs the key
 * (-ENOKEY). The directory's encryption comes with it: a new inode
 * inherits it.
 */
enum ponyfs_name_use { PONYFS_NAME_FIND, PONYFS_NAME_CREATE };
struct ponyfs_name {
	const uint8_t *bytes;
	size_t len;
	struct ponyfs_crypt dir;        /* the directory's */
	uint8_t buf[CRYPT_NAME_MAX];
};
int ponyfs_name_locked(struct ponyfs *fs, uint64_t parent, const char *name,
		       enum ponyfs_name_use use, struct ponyfs_name *ret);
/* An entry's name as a listing shows it, malloc'd: the plaintext with the
 * key, the no-key name without. */
char *ponyfs_name_show_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d, const uint8_t *bytes,
			      size_t len);
/* A new inode's encryption under a directory's (fresh nonce); off: none. */
int ponyfs_crypt_inherit(const struct ponyfs_crypt *dir, struct ponyfs_crypt *ret);
/* A symlink's target as stored (in buf, PATH_MAX bytes) and back. */
int ponyfs_symlink_seal_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const char *target,
			       uint8_t *buf, size_t *ret_len);
int ponyfs_symlink_show_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const uint8_t *stored,
			       size_t len, char *buf, size_t size);

/* Encryption: contents (crypt_data.c). */
/* The cipher of in for an open (regular files): -ENOKEY without the key. */
int ponyfs_crypt_open_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_crypt_close(struct ponyfs_inode *in);   /* wipes */
/* -ENOKEY when in is encrypted and its key was removed by force. */
static inline int ponyfs_crypt_usable(const struct ponyfs_inode *in)
{
	return in->crypt.on && !in->cipher ? -ENOKEY : 0;
}
/* k pages of in (consecutive indexes from pg[0]) encrypted into out; for
 * a GCM file each block's seal (PONYFS_SEAL_BYTES, CRC first) into seals,
 * else its CRC32C (4 bytes) of the ciphertext. */
int ponyfs_crypt_pages(struct ponyfs_inode *in, const struct ponyfs_page *pg, uint64_t k,
		       uint8_t *out, uint8_t *csums);
/* n blocks read for file blocks fblk.. in place back to plaintext (seals:
 * GCM's nonce and tag per block, NULL for XTS); cipher NULL: in's own. */
int ponyfs_crypt_blocks(struct ponyfs_inode *in, struct crypt_contents *cipher, uint64_t fblk,
			uint64_t n, const uint8_t *seals, uint8_t *buf);
/* A cipher for one unlocked read (a clone of in's); NULL for a file not
 * encrypted. -ENOKEY: the key was removed. */
int ponyfs_crypt_reader_locked(struct ponyfs_inode *in, struct crypt_contents **ret);
/* Bytes a block takes in extents.csums for flags. */
static inline size_t ponyfs_csum_stride(unsigned flags)
{
	return flags & PONYFS_EXT_SEALED ? PONYFS_SEAL_BYTES : 4;
}

/*
 * Encrypted writeback (crypt_data.c): k pages of in encrypted and
 * checksummed into csums as ponyfs_crypt_pages() does, and written to
 * blocks [p, p+k) by the helper while the caller goes on to the next run
 * (a run under PONYFS_HELPER_MIN_BLOCKS: in line, its error returned).
 * A write's error comes back from the next call or from
 * ponyfs_crypt_out_drain_locked(), which a writeback calls before it ends:
 * until then the blocks may not be on the disk yet.
 */
int ponyfs_crypt_out_locked(struct ponyfs *fs, struct ponyfs_inode *in,
			    const struct ponyfs_page *pg, uint64_t k, uint64_t p, uint8_t *csums);
int ponyfs_crypt_out_drain_locked(struct ponyfs *fs);
void ponyfs_crypt_out_free(struct ponyfs *fs);         /* at unmount, drained */

/*
 * The helper (helper.c): a job runs fn(arg) on the mount's second thread
 * (an acall worker) from ponyfs_job_start() on, or, when the helper is
 * busy or absent, on the caller inside ponyfs_job_wait(), which returns
 * fn's value. Every started job must be waited for; its memory stays the
 * caller's till then.
 */
struct acall_op;
struct ponyfs_job {
	int (*fn)(void *arg);
	void *arg;
	struct acall_op *op;            /* on the helper; NULL: runs in line */
};
void ponyfs_helper_start_locked(struct ponyfs *fs);    /* at an encrypted open */
void ponyfs_helper_stop(struct ponyfs *fs);             /* at unmount */
/* A job of fewer blocks runs in line: its hand-off (a wake-up on another
 * CPU and the wait for it) costs more than the cipher it would hide. */
#define PONYFS_HELPER_MIN_BLOCKS 64u
void ponyfs_job_start(struct ponyfs *fs, struct ponyfs_job *j);
int ponyfs_job_wait(struct ponyfs *fs, struct ponyfs_job *j);

/* Extended attributes, the vfs hooks (xattr.c). */
int ponyfs_getxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    void *buf, size_t size);
int ponyfs_setxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    const void *value, size_t size, int flags);
int ponyfs_listxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, char *buf, size_t size);
int ponyfs_removexattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name);

/* Layouts (layout.c): where a file's bytes live, for the vfs layout_map hook. */
int ponyfs_layout_map(struct vfs *v, uint64_t ino, struct vfs_layout *l);
int ponyfs_layout_lease(struct vfs *v, uint32_t lease, unsigned op, uint32_t *ret_state,
			uint64_t *ret_ms);
void ponyfs_layout_recall_watch(struct vfs *v, void (*fn)(void *arg, uint32_t lease), void *arg);

uint64_t ponyfs_layout_members_sig(const struct ponyfs *fs);

/* Layout leases (lease.c). */
int ponyfs_lease_grant_locked(struct ponyfs *fs, struct vfs_layout *l);
void ponyfs_lease_freed_locked(struct ponyfs *fs, uint64_t pblock, uint64_t n);
void ponyfs_lease_unheld(const struct ponyfs *fs, uint64_t *start, uint64_t *end);
/* Ends expired leases, or every lease (revoke: holders see EXPIRED and read again). */
void ponyfs_lease_expire_locked(struct ponyfs *fs, bool all);
void ponyfs_lease_fini(struct ponyfs *fs);
/* A new lease, its deadline set (the one nearest its end revoked past the limit). */
struct ponyfs_lease *ponyfs_lease_new_locked(struct ponyfs *fs);
/* The live lease id, expired ones ended first; NULL: gone. Valid until a lease ends. */
struct ponyfs_lease *ponyfs_lease_find_locked(struct ponyfs *fs, uint32_t id);
/* Its deadline a lease's length from now; the milliseconds that is. */
uint64_t ponyfs_lease_renew(struct ponyfs *fs, struct ponyfs_lease *e);
/* Free blocks [p, p + n) given to write lease e: held until it ends. */
int ponyfs_lease_hold_locked(struct ponyfs *fs, struct ponyfs_lease *e, uint64_t p, uint64_t n);
/* Ends lease e now (a return): what only it held is free to allocate. */
void ponyfs_lease_end_locked(struct ponyfs *fs, struct ponyfs_lease *e);
/* Direct writes (dwrite.c), the vfs hooks. */
int ponyfs_layout_write(struct vfs *v, uint64_t ino, uint64_t fh, struct vfs_layout_write *w);
int ponyfs_layout_commit(struct vfs *v, uint64_t ino, uint64_t fh,
			 const struct vfs_layout_commit *c);
/* Whole free stripes of sblk blocks, held by no lease (alloc.c): found, not taken. */
int ponyfs_alloc_stripes_find_locked(struct ponyfs *fs, uint64_t sblk, uint64_t want,
				     uint64_t *ret_start, uint64_t *ret_n);
/* Takes exactly [p, p + n) from the free table; -ESTALE when not all free. */
int ponyfs_alloc_at_locked(struct ponyfs *fs, uint64_t p, uint64_t n);
/* The member pieces of nblocks data blocks from pblock holding file bytes
 * from file_offset, into out (up to max): how many there are, or -errno. */
int64_t ponyfs_layout_pieces_locked(struct ponyfs *fs, uint64_t region, uint64_t pblock,
				    uint64_t nblocks, uint64_t file_offset,
				    struct vfs_layout_piece *out, size_t max);
int ponyfs_layout_topology(struct vfs *v, struct vfs_layout_topology *ret);
struct volume_segment_info;
/* The first segment of fs->volume of class cls (enum volume_region_class). -ENODEV: none. */
int ponyfs_region_segment(const struct ponyfs *fs, int cls, unsigned *ret_seg,
			  struct volume_segment_info *ret_info);

/* An error the daemon saw (badblocks.c): a region and what became of it. */
struct ponyfs_bad {
	uint32_t source;                /* enum vfs_bad_source */
	bool repaired;
	unsigned member;                /* VFS_NO_MEMBER: not known */
	uint64_t member_offset;         /* device byte on it */
	uint64_t vol_off, len;
	bool row;                       /* a stripe row (or copies) that disagree, no member
					 * to blame: [vol_off, +len) is the row */
	uint64_t count;                 /* times seen */
};
/* Records b once per (source, vol_off): true when new (the caller logs it). */
bool ponyfs_bad_add_locked(struct ponyfs *fs, const struct ponyfs_bad *b);
/* Data block pblock (ino's file block fblk) failed its checksum; m: the
 * member repaired, or -errno (lost). Recorded, and logged once with the paths. */
void ponyfs_bad_block_locked(struct ponyfs *fs, uint32_t source, uint64_t ino, uint64_t fblk,
			     uint64_t pblock, int m);
int ponyfs_badblock(struct vfs *v, uint32_t index, struct vfs_badblock *ret);
/* What b's first byte holds, for a log line: "file /a, /b offset N", "metadata (...)". */
void ponyfs_bad_describe_locked(struct ponyfs *fs, const struct ponyfs_bad *b, char *buf,
				size_t size);
/* The volume byte of data block block (one image: its byte past the metadata region). */
uint64_t ponyfs_volume_byte(const struct ponyfs *fs, uint64_t block);

/* The passive scrub (scrub.c): a thread of the mount, stopped at unmount. */
int ponyfs_scrub(struct vfs *v, struct vfs_scrub *s);
void ponyfs_scrub_stop(struct ponyfs *fs);

/* What lives at an address (resolve.c, docs/scrub.md). */
int ponyfs_resolve(struct vfs *v, struct vfs_resolve *r);
int ponyfs_resolve_locked(struct ponyfs *fs, struct vfs_resolve *r);
/* Byte in of data block b: a file's, metadata or free. */
int ponyfs_resolve_block_locked(struct ponyfs *fs, uint64_t b, uint64_t in, struct vfs_resolve *r);
/* The paths of ?1 up to the root, at most ?2 (one BLOB column); fsck uses it too. */
extern const char ponyfs_paths_sql[];
/* A name's bytes, control characters and backslashes as \xNN. */
void ponyfs_name_put(FILE *out, const uint8_t *name, size_t len);

extern const struct vfs_ops ponyfs_ops;

#endif
