/*
 * internal.h - what the database files of devdb share: the open database
 * with its prepared statements (db.c), a path's identity (ident.c), storing
 * a probe result (db.c) and probing many paths at once (scan.c).
 */
#ifndef DEVDB_INTERNAL_H
#define DEVDB_INTERNAL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pony/devdb.h"

/*
 * What says "this is still the device we probed": for a block device its
 * dev_t, size and diskseq (a new medium or a reused loop device bumps it);
 * for an image file its st_dev/st_ino, size and mtime. Any change means the
 * stored tags may be stale and the path is probed again.
 */
struct devdb_ident {
	bool block;
	uint64_t dev, ino, size, diskseq;
	int64_t mtime_ns;
	char key[160];          /* device identity: "f:dev:ino", "b:wwid", "b:maj:min" */
};

/* One stat (plus sysfs size/diskseq/wwid for block devices). 0 or -errno. */
int devdb_ident_get(const char *path, struct devdb_ident *ret);
/* The same from a stat already made; -ENOTBLK for neither file nor device. */
int devdb_ident_from_stat(const struct stat *st, struct devdb_ident *ret);
/*
 * Opens path once and probes it; its identity comes from the same open
 * file's fstat, so the tags stored are those of exactly that identity.
 */
int devdb_probe_ident(const char *path, struct devdb_ident *ret_id,
		      struct devdb_probe_result **ret);
/*
 * The partition-table entry of [start, ...) (512-byte sectors; number if
 * several start there) on the open disk fd of size bytes, as PART_ENTRY_*,
 * PARTUUID and PARTLABEL added to tags: 1 found, 0 no table or no entry.
 */
int devdb_probe_pt_entry(int fd, uint64_t size, uint64_t start, unsigned number,
			 struct devdb_tags *tags);
/*
 * For a kernel partition device (st of /dev/sda1), its entry in the parent
 * disk's table plus PART_ENTRY_DISK, added to tags, as libblkid does: 1
 * added, 0 not a partition (or its disk has no node), -errno.
 */
int devdb_part_entry_tags(const struct stat *st, struct devdb_tags *tags);
/* Probes size bytes of an open fd (probe.c: no sysfs, no database). */
int devdb_probe_fd_size(int fd, uint64_t size, const struct devdb_probe_opts *opts,
			struct devdb_probe_result **ret);
/* Probes an open file or block device whose fstat is st (and, for a kernel
 * partition device, its entry in the parent's table). */
int devdb_probe_fd(int fd, const struct stat *st, const struct devdb_probe_opts *opts,
		   struct devdb_probe_result **ret);
bool devdb_ident_equal(const struct devdb_ident *a, const struct devdb_ident *b);
/* A block device the kernel made partition devices for (sda -> sda1, ...). */
bool devdb_block_has_partitions(const struct devdb_ident *id);

enum {
	STMT_PATH_GET,          /* identity stored for a path */
	STMT_FIND1,             /* device ids with one tag */
	STMT_DEV_GET,
	STMT_DEV_TAGS,
	STMT_DEV_PATHS,
	STMT_PATH_PARENT,       /* the image a partition path lives in */
	STMT_BEGIN,             /* a (deferred) transaction around a lookup's reads */
	STMT_COMMIT,
	STMT__MAX,
};

#define DEVDB_STMT_CACHE 32

struct devdb {
	sqlite3 *sql;
	char *path;
	unsigned flags;
	sqlite3_stmt *stmt[STMT__MAX];
	/* db_run()'s statements, keyed by the SQL literal's address */
	struct {
		const char *sql;
		sqlite3_stmt *stmt;
	} cache[DEVDB_STMT_CACHE];
};

/* A prepared statement, reset and ready to bind. */
sqlite3_stmt *devdb_stmt(struct devdb *db, int which);
/* Runs a statement without results (STMT_BEGIN, STMT_COMMIT); 0 or -errno. */
int devdb_exec_stmt(struct devdb *db, int which);
/* sqlite3_exec() with the result turned into -errno. */
int devdb_exec(struct devdb *db, const char *sql);
/* An SQLite result code as -errno. */
int devdb_sql_errno(int rc);

/*
 * Stores what was found at path (identity id): the device (found or made by
 * id->key), the path row and the tags; partitions of an image become
 * devices of their own ("path:pN"). Inside the caller's transaction.
 */
int devdb_store(struct devdb *db, const char *path, const struct devdb_ident *id,
		const struct devdb_probe_result *res);
/* The identity stored for path: 1 found (*ret set), 0 unknown, -errno. */
int devdb_stored_ident(struct devdb *db, const char *path, struct devdb_ident *ret,
		       bool *ret_present);

/*
 * Probes paths[0..n) in parallel (through acall): ids[i] and res[i], or
 * err[i], per path. done(ctx, first, count) runs on the calling thread as
 * each batch of paths is finished (scan stores them while the rest are
 * probed); a negative return stops and is returned.
 */
int devdb_probe_many(char *const *paths, size_t n, struct devdb_ident *ids,
		     struct devdb_probe_result **res, int *err,
		     int (*done)(void *ctx, size_t first, size_t count), void *ctx);

#endif
