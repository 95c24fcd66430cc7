/*
 * include/pony/ponyfs.h - ponyfs, pony's native filesystem: metadata in
 * SQLite on a metadata region, file data in copy-on-write extents with a
 * CRC32C per 4 KiB block on a data region (docs/ponyfs-format.md). A mounted
 * ponyfs is a vfs instance (include/pony/vfs.h).
 *
 * Its promises (the "ponies"): data reaches the data region, flushed, before
 * the metadata that points at it commits; a rename over a file and a
 * truncate-then-rewrite commit together with the new data, so after a crash
 * the name holds all-old or all-new content without fsync; fsync of a file
 * writes only that file's data; fbarrier orders a file's data before later
 * metadata without waiting.
 *
 * Inode ids are the database's inode numbers, never reused and valid without
 * a lookup reference, so ponyfs answers lookup(ino, ".") and (ino, "..")
 * for any id, as FUSE's export protocol asks (open_by_handle_at, NFS): a
 * file that is gone is -ENOENT, which the kernel turns into -ESTALE.
 */
#ifndef PONY_PONYFS_H
#define PONY_PONYFS_H

#include <stdbool.h>
#include <stdint.h>

#include "pony/bdev.h"
#include "pony/vfs.h"

#define PONYFS_BLOCK_SIZE 4096u

struct ponyfs_mkfs_options {
	const char *label;              /* NULL: none; at most 31 bytes */
	uint64_t wal_bytes;             /* 0: a quarter of the metadata region */
	/* The layout before metadata chunks: metadata never grows past the
	 * metadata region (for testing images made before them). */
	bool fixed_metadata;
};

/*
 * Writes an empty filesystem: superblock and database on meta, every block
 * of data free. Both bdevs stay the caller's. -ENOSPC when too small.
 */
int ponyfs_mkfs(struct bdev *meta, struct bdev *data, const struct ponyfs_mkfs_options *opts);

/* A line of news for a human: fsck's problems, and the events of a mounted
 * filesystem (a checksum repaired, a commit failed...), which also go to
 * util_log() (docs/ponyfs-mount.md). */
typedef void (*ponyfs_report_t)(void *data, const char *text);

/* When a read or readdir moves atime (mount -o relatime, strictatime, noatime). */
enum ponyfs_atime {
	PONYFS_ATIME_RELATIVE = 0,      /* relatime: not after mtime/ctime, or a day old */
	PONYFS_ATIME_ALWAYS,            /* strictatime */
	PONYFS_ATIME_NEVER,             /* noatime */
};

struct volume;
struct volume_set;

struct ponyfs_options {
	unsigned commit_ms;             /* the commit timer; 0: commit only on fsync/sync */
	enum ponyfs_atime atime;
	bool nodiratime;                /* mount -o nodiratime: a listing never moves a
					 * directory's atime (reads still do, as atime says) */
	bool read_only;
	ponyfs_report_t report;         /* NULL: repairs are only counted */
	void *report_arg;
	/* Bytes of cached file data above which a writer writes its own file
	 * back (0: a tenth of the machine's memory, as the kernel's
	 * dirty_background_ratio, and at least 64 MiB). Below it, cached
	 * data waits for its file's fsync, close, rename or the timer. */
	uint64_t dirty_max;
	/* Bytes of metadata (SQLite's page cache) the daemon keeps in memory:
	 * all it holds per inode and name, cached data aside. 0: 16 MiB. */
	uint64_t meta_cache;
	/* How long a layout lease holds (docs/layout.md "Leases"), in
	 * milliseconds; 0: 30 s. */
	uint64_t layout_lease_ms;
	/* The pony volume whose regions meta and data are (ponyfs_volume_region()):
	 * layouts name its members and their offsets. NULL: not on a volume.
	 * It must outlive the mount. */
	struct volume *volume;
};

/*
 * Mounts the filesystem on (meta, data). On 0, *ret is the caller's
 * (vfs_free() commits and unmounts); the bdevs must outlive it. A corrupt
 * or foreign superblock is -EUCLEAN / -EINVAL, a newer version
 * -EPROTONOSUPPORT.
 */
int ponyfs_mount(struct bdev *meta, struct bdev *data, const struct ponyfs_options *opts,
		 struct vfs **ret);

/*
 * One image, both regions: the metadata region is its first part (its size
 * is chosen by mkfs and kept in the superblock), the data region the rest.
 * dev stays the caller's and must outlive the mount.
 */
int ponyfs_mkfs_image(struct bdev *dev, const struct ponyfs_mkfs_options *opts);
int ponyfs_mount_image(struct bdev *dev, const struct ponyfs_options *opts, struct vfs **ret);

/*
 * A region of a pony volume (VOLUME_CLASS_METADATA or VOLUME_CLASS_DATA) as
 * a bdev for ponyfs_mkfs()/ponyfs_mount(). v stays the caller's and must
 * outlive the bdev. -ENOENT when the volume has no region of that class.
 */
int ponyfs_volume_region(struct volume *v, int cls, struct bdev **ret);

/* Counters of work done, for tests and benchmarks (statx light, fsync cost). */
struct ponyfs_stats {
	uint64_t commits;               /* metadata transactions committed */
	uint64_t extent_walks;          /* extent lookups for st_blocks */
	uint64_t data_blocks_written;   /* blocks written to the data region */
	uint64_t data_flushes;          /* flushes of the data region */
	uint64_t writebacks;            /* files whose cached data was written back */
	uint64_t csum_errors;           /* blocks that failed their checksum */
	uint64_t csum_repaired;         /* of those, rewritten from the volume's redundancy */
	uint64_t overwrite_loans;       /* overwrites on a full filesystem, lent a block */
	uint64_t meta_chunks;           /* chunks of the data region metadata grew into */
	uint64_t space_commits;         /* commits made to make room for metadata */
	uint64_t space_measures;        /* measures of the metadata space in use */
	uint64_t checkpoints;           /* WAL checkpoints into the database file */
	uint64_t cache_slab_bytes;      /* memory mapped for cached data (0 under ASan) */
	uint64_t row_hits;              /* inode rows served from memory (rowcache.c) */
	uint64_t row_misses;            /* inode rows read from the database for it */
	uint64_t blocks_cached;         /* st_blocks from memory, in place of an extent walk */
	uint64_t bound_writebacks;      /* renamed or linked files written back by a commit */
};
void ponyfs_get_stats(struct vfs *fs, struct ponyfs_stats *ret);

/* Bytes of cached (not yet written back) file data. */
uint64_t ponyfs_dirty_bytes(struct vfs *fs);

/*
 * fsck (docs/fsck.md): checks a filesystem that is not mounted. The
 * superblock and the regions' sizes (a truncated image is reported as
 * such, with how much is missing), the copies of a volume's metadata
 * mirror against each other, SQLite's integrity check, reachability of
 * every inode from the root, orphans, link counts, directory entries,
 * extents (no overlap, inside the data region, disjoint from free space,
 * every block accounted for) and, with PONYFS_FSCK_DATA, every block's
 * checksum.
 *
 * Without REPAIR or PREEN nothing is written (SQLite's own writes, such
 * as replaying the WAL, stay in memory). REPAIR fixes all that fsck can
 * fix; PREEN only what needs no decision by a person (which is which:
 * docs/fsck.md).
 */
enum {
	PONYFS_FSCK_DATA = 1,           /* verify every data block's checksum */
	PONYFS_FSCK_REPAIR = 2,         /* fix everything fixable (fsck -y) */
	PONYFS_FSCK_PREEN = 4,          /* fix what is safe without a person (fsck -p) */
};

/* One problem found; every pointer is valid only during the report call. */
struct ponyfs_fsck_problem {
	const char *check;              /* "superblock", "size", "mirror", "database",
					 * "namespace", "extents", "checksum", "space" */
	uint64_t ino;                   /* the inode it is about (an entry's: its
					 * directory's); 0: none */
	/* Where: the file's path(s) ("/a/b", "/a/b, /c" for hard links),
	 * "inode 12 (unreachable)", "inode 7 (orphan)", or NULL when the
	 * problem is not about a file (then the device is meant). */
	const char *path;
	const char *text;               /* what is wrong, then what was done */
	bool fixed;
};
typedef void (*ponyfs_fsck_report_t)(void *arg, const struct ponyfs_fsck_problem *p);

struct ponyfs_fsck_params {
	unsigned flags;                 /* PONYFS_FSCK_* */
	ponyfs_fsck_report_t report;    /* NULL: problems are only counted */
	void *report_arg;
	/* The pony volume whose regions meta and data are: its metadata
	 * mirror's copies are compared. NULL: not on a volume. */
	struct volume *volume;
	/* Its set, when assembled from members: where its copies differ in a
	 * region that a read-only assembly after an unclean close has yet to
	 * resync (volume_set_unsynced), writes were in flight, and the next
	 * writable open makes them agree: no problem. NULL: none. */
	const struct volume_set *set;
	/* The data check's progress (PONYFS_FSCK_DATA, the long part): bytes
	 * of file data read over all there are; a non-zero return stops the
	 * check (-ECANCELED). NULL: none. */
	int (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
};

struct ponyfs_fsck_result {
	unsigned found;                 /* problems found */
	unsigned fixed;                 /* of those, fixed */
	/* Bytes where the metadata mirror's copies differ in regions awaiting
	 * a resync after an unclean close (params' set): no problem. */
	uint64_t mirror_unsynced;
};

/*
 * Returns 0 when the check ran to the end, or -errno when it could not go
 * on: -EUCLEAN a corrupt superblock or database or a truncated metadata
 * region (a problem says which), -EPROTONOSUPPORT made by a newer pony,
 * -EIO and such. A short data region is a problem, and the rest is
 * checked. *res counts the problems found either way (it is zeroed
 * first). The bdevs (and the volume) stay the caller's.
 */
int ponyfs_fsck_run(struct bdev *meta, struct bdev *data, const struct ponyfs_fsck_params *p,
		    struct ponyfs_fsck_result *res);
/* The same on one image holding both regions (ponyfs_mkfs_image()). */
int ponyfs_fsck_run_image(struct bdev *dev, const struct ponyfs_fsck_params *p,
			  struct ponyfs_fsck_result *res);

/*
 * Shorthands for tests: the number of problems found, or -errno; a line
 * per problem ("path: text", or the text) goes to report(data, text).
 */
int ponyfs_fsck(struct bdev *meta, struct bdev *data, unsigned flags,
		ponyfs_report_t report, void *data_arg);
int ponyfs_fsck_image(struct bdev *dev, unsigned flags, ponyfs_report_t report, void *data_arg);

#endif
