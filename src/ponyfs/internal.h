/*
 * internal.h - what the files of src/ponyfs share: the mounted filesystem,
 * its cached inodes and their dirty blocks, the prepared statements, and
 * the transaction, allocation and writeback calls. Every call named
 * *_locked needs fs->lock held; one lock serialises the filesystem, so the
 * single SQLite connection and the open transaction need no more. The one
 * exception is a read's I/O and checksums (read.c): planned under the
 * lock, run without it, the blocks it reads kept from reuse by
 * fs->reuse_lock. The on-disk format is in format.h, the calls of times,
 * set-ID rules, ACLs and xattrs in attr.h, encryption's in crypt_fs.h,
 * layouts', leases' and the scrub's in blockmap.h; this file includes all
 * four.
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

#include "format.h"

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

void ponyfs_destroy(struct vfs *v);

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
	struct ponyfs_stream *stream;   /* its buffers while read sequentially (stream.c) */
};

/* An open file; every one is on fs->handles, so unmount can free them. */
struct ponyfs_handle {
	struct ponyfs_inode *inode;
	int flags;
	struct vfs_ctx opener;          /* who opened it: whose writes drop set-ID bits */
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

/* Blocks of small writes waiting to go out as one (gather.c): n blocks for
 * [start, start+n) in buf, while depth (begins not yet ended) is not 0. */
struct ponyfs_gather {
	uint8_t *buf;                   /* PONYFS_IO_BLOCKS blocks, allocated on first begin */
	uint64_t start, n;
	unsigned depth;
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
	ST_DENTRY_ADD, ST_EXT_LAST,
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

/* A directory's encryption and names key, cached (crypt_policy.c): the
 * key as its ready CTS contexts, which go (cleansed) with the slot. */
struct ponyfs_dircrypt {
	uint64_t ino;                   /* 0: an empty slot */
	struct ponyfs_crypt c;
	uint64_t key_gen;               /* fs->key_gen when names was made */
	struct crypt_names *names;      /* NULL: not made, or no key */
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
	bool no_xattrs;                 /* the xattrs table holds none of its rows (a new inode) */
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
	char name[40];                  /* label or UUID, for log lines */
	bool read_only;
	enum ponyfs_atime atime_mode;
	bool nodiratime;
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
	struct ponyfs_gather gather;    /* small writes of a writeback (gather.c) */
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
	struct crypt_random nonces;             /* new encrypted inodes', under lock */
	/* The data path's second thread (helper.c), set under lock, loaded
	 * atomically by readers; and the writeback's encrypted megabytes in
	 * flight on it (crypt_data.c), under lock. */
	struct ponyfs_helper *helper;
	bool helper_failed;
	uint64_t helper_jobs;           /* atomic: jobs handed to the helper (tests) */
	uint64_t reads_redone;          /* under lock: unlocked reads the locked path redid (tests) */
	uint64_t reads_direct;          /* atomic: chunks read around the host's cache
					 * by a READ itself, not a stream's buffers (tests) */
	bool crypt_direct;              /* atomic: the last such read went around it (read.c) */
	/* Sequential readers' buffers (stream.c): all below under stream_lock
	 * (taken inside fs->lock, never around it), but the ring (set under
	 * fs->lock) and stream_hits and stream_refs (atomic). */
	pthread_mutex_t stream_lock;
	pthread_cond_t stream_cond;     /* a buffer's read completed */
	struct acall_ring *stream_ring;
	bool stream_failed;
	unsigned streams;
	uint64_t stream_bytes, stream_bytes_peak;
	uint64_t stream_gen;            /* commits that made freed blocks allocatable */
	uint64_t stream_hits;           /* blocks READs took from the buffers */
	uint64_t stream_refs;           /* ... of them answered from there, no copy */
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
/* Stores before (a copy of the cached row taken before the statement;
 * ino 0: it was not cached) back with the change that statement made: its
 * mtime and ctime set to now when times, nlink_delta added to its links. */
void ponyfs_row_touched(struct ponyfs *fs, const struct ponyfs_row *before, bool times,
			int64_t now, int nlink_delta);
/* A copy of ino's cached row for ponyfs_row_touched() (ino 0 when not cached). */
struct ponyfs_row ponyfs_row_before(struct ponyfs *fs, uint64_t ino);
/* ST_INODE_GET's columns from column at of s on, for ino (no block count). */
void ponyfs_row_read(sqlite3_stmt *s, int at, uint64_t ino, struct ponyfs_row *ret);
/* Sets row's block count, valid from now until extents change. */
void ponyfs_row_blocks(struct ponyfs *fs, struct ponyfs_row *row, uint64_t blocks);
/* ino's row from memory or the database (cached then); -ENOENT: no such inode. */
int ponyfs_row_locked(struct ponyfs *fs, uint64_t ino, bool blocks, struct ponyfs_row *ret);
/* Whether ino is known to have no xattrs (its cached row says so), and the
 * call that forgets it, made by the one statement that adds xattrs rows
 * (ponyfs_xattr_row_put()). */
bool ponyfs_row_no_xattrs(struct ponyfs *fs, uint64_t ino);
void ponyfs_row_xattrs_added(struct ponyfs *fs, uint64_t ino);

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
/* PONYFS_SLAB_BYTES at a PONYFS_SLAB_BYTES boundary, asking for a huge
 * page; NULL when out of memory. Release it with ponyfs_slab_unmap(). */
#define PONYFS_SLAB_BYTES (2u << 20)
void *ponyfs_slab_map(void);
void ponyfs_slab_unmap(void *slab);     /* NULL: does nothing */

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
/* Reads (read.c): takes the lock itself, drops it for the I/O. With hold
 * (vfs read_iov), whole chunks of a plain file's stream may be left in its
 * buffers, pinned and checked, instead of copied into buf: release them
 * with ponyfs_read_release() once the answer (ponyfs_read_hold_iov()) has
 * been written. */
#define PONYFS_READ_REFS_MAX 8u
struct ponyfs_stream_ref {              /* a pin on a stream's buffer (ponyfs_stream_refs_take()) */
	void *buf;                      /* stream.c's */
	const uint8_t *data;            /* the first block's bytes */
	uint64_t n;                     /* blocks */
};
struct ponyfs_read_hold {
	struct ponyfs_stream *stream;   /* a reference, while refs pin its buffers */
	unsigned nref;
	struct {
		size_t at;              /* where in the answer */
		struct ponyfs_stream_ref sref;
	} ref[PONYFS_READ_REFS_MAX];
};
ssize_t ponyfs_read(struct ponyfs *fs, struct ponyfs_inode *in, void *buf, size_t size,
		    uint64_t off, struct ponyfs_read_hold *hold);
unsigned ponyfs_read_hold_iov(const struct ponyfs_read_hold *hold, void *buf, size_t n,
			      struct iovec *iov);
void ponyfs_read_release(struct ponyfs *fs, struct ponyfs_read_hold *hold);
/*
 * Read-ahead of the image (readahead.c). Under the lock, a read of [off,
 * off+size) that follows the file's last one plans the volume blocks of
 * the file ahead of it into ra (ra->n 0: nothing to do now) and marks ra
 * a stream; unlocked, issue hands them to bdev_advise(), and once a
 * stream's read has checked its blocks, drop lets the host's cache forget
 * them. Hints only: nothing is cached.
 */
#define PONYFS_RA_RUNS 64u
struct ponyfs_ra_run { uint64_t pblock, n; };
struct ponyfs_readahead {
	bool stream;                    /* the read follows the last: drop behind it */
	bool buffered;                  /* ... and its stream's buffers answer it (stream.c) */
	unsigned n;
	struct ponyfs_ra_run run[PONYFS_RA_RUNS];
};
void ponyfs_readahead_plan_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off,
				  size_t size, struct ponyfs_readahead *ra);
void ponyfs_readahead_issue(struct ponyfs *fs, const struct ponyfs_readahead *ra);
void ponyfs_readahead_drop(struct ponyfs *fs, const struct ponyfs_readahead *ra, uint64_t pblock,
			   uint64_t n);
/*
 * A plain file read sequentially (stream.c): its next blocks read into
 * buffers ahead of its READs, around the host's cache, several at once.
 * ahead (under the lock, from the read-ahead plan of a read that follows
 * the last one at off) makes the stream and fills its spent buffers,
 * false when the file gets none (encrypted, PONYFS_STREAM_BYTES_MAX in
 * use); get and put pin it for an unlocked READ, whose copy fills its
 * plan's runs into to (chunk from file block first) from the buffers and
 * reads the rest around the cache, to be checked as any read's; stop (a
 * read that does not follow, the last close, the inode's end) lets its
 * buffers go; gen_bump (a commit) makes every buffer filled before it
 * unusable, since blocks freed may now be reused.
 */
#define PONYFS_STREAM_BYTES_MAX (64ull << 20)   /* all streams' buffers (docs/ponyfs-format.md) */
#define PONYFS_STREAM_MIN_READ (128u << 10)     /* smaller reads get no buffers */
/* n volume blocks at pblock, for file blocks from fblk on. */
struct ponyfs_read_run { uint64_t fblk, pblock, n; };
struct ponyfs_stream;
bool ponyfs_stream_ahead_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off);
struct ponyfs_stream *ponyfs_stream_get_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_stream_put(struct ponyfs *fs, struct ponyfs_stream *s);
/* copy: 1 when every block came from a buffer whose CRC32C (computed as
 * it filled) is the one csum (the plan's, from first) gives, 0 when some
 * were read here (the caller checks them all), -EBADMSG when a buffer's
 * CRC of a block is not the plan's, or -errno. */
int ponyfs_stream_copy(struct ponyfs *fs, struct ponyfs_stream *s,
		       const struct ponyfs_read_run *run, unsigned nrun, uint64_t first,
		       const uint32_t *csum, uint8_t *to);
/* refs_take pins the filled buffers of s holding the n runs of a chunk
 * (from file block first, at offset at of the answer) into hold, each
 * block's CRC32C (computed as its buffer filled) the one csum (the plan's,
 * from first) gives; false, with none of them pinned, when a block is in
 * no filled buffer, hold is full, or a CRC differs. refs_release unpins
 * them all, their blocks gone into an answer. */
bool ponyfs_stream_refs_take(struct ponyfs *fs, struct ponyfs_stream *s,
			     const struct ponyfs_read_run *run, unsigned nrun, uint64_t first,
			     const uint32_t *csum, size_t at, struct ponyfs_read_hold *hold);
void ponyfs_stream_refs_release(struct ponyfs *fs, struct ponyfs_read_hold *hold);
void ponyfs_stream_stop_locked(struct ponyfs *fs, struct ponyfs_inode *in);
void ponyfs_stream_gen_bump_locked(struct ponyfs *fs);
void ponyfs_streams_done(struct ponyfs *fs);
/* The file's blocks [first, first+n) as on disk, checked (holes and cut-off blocks are zeros). */
int ponyfs_disk_read_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t first, uint64_t n,
			    uint8_t *buf);
int ponyfs_extents_remove_locked(struct ponyfs *fs, uint64_t ino, uint64_t first, uint64_t end);
/* Where one extent lies: file blocks [foff, foff + nb) at volume block pblock. */
struct ponyfs_ext_span { uint64_t foff, nb, pblock; };
/* The last (highest) up to max extents of ino, into ret[]: how many, or -errno. */
int ponyfs_extents_last(struct ponyfs *fs, uint64_t ino, struct ponyfs_ext_span *ret, size_t max);
/* Removes those n extents of ino whole, their blocks freed at the commit. */
int ponyfs_extents_drop_locked(struct ponyfs *fs, uint64_t ino, const struct ponyfs_ext_span *v,
			       size_t n);
/* Index in in->pages of the first page >= index. */
size_t ponyfs_page_pos(const struct ponyfs_inode *in, uint64_t index);
/* Writes k cached pages to blocks [p, p+k); *buf is scratch, allocated on first need
 * (gather.c; while a gather is on, a few blocks may wait for its end). */
int ponyfs_pages_write(struct ponyfs *fs, const struct ponyfs_page *pg, uint64_t k, uint64_t p,
		       uint8_t **buf);
/* From begin to end (nested: the outermost), under fs->lock throughout, a
 * write of a few blocks after the last one joins it in one write; end
 * writes what is left, and on an error fails the filesystem (the open
 * transaction points at blocks never written) and returns it. */
void ponyfs_gather_begin(struct ponyfs *fs);
int ponyfs_gather_end(struct ponyfs *fs);
/* Where k blocks for [p, p+k) go in the gather, after what it holds (which
 * is written first when they do not follow it or would not fit), for the
 * caller to fill before its next call here; NULL when no gather is on or
 * the run is too long to gather (the caller writes it), or when writing
 * what was gathered failed (*err, else 0). */
uint8_t *ponyfs_gather_room(struct ponyfs *fs, uint64_t k, uint64_t p, int *err);
void ponyfs_gather_done(struct ponyfs *fs);        /* at unmount: frees the buffer */
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
/* What a name in parent names (-ENOENT: no such name), from its row and its inode's. */
struct ponyfs_dentry_target {
	uint64_t ino;
	mode_t mode;
	uint32_t nlink;
};
int ponyfs_dentry_get(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      struct ponyfs_dentry_target *ret);
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
/* linked: the row still counts the name just removed (namei.c). */
int ponyfs_inode_delete_locked(struct ponyfs *fs, uint64_t ino, bool linked);
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

#include "attr.h"
#include "crypt_fs.h"
#include "blockmap.h"

#endif
