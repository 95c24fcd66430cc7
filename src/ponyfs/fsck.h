/*
 * fsck.h - what the files of ponyfs's fsck share: the state of one check,
 * reporting a problem with the path of the file it is about, the rule
 * that says whether a problem may be fixed in this run, and the passes
 * (fsck_names.c, fsck_blocks.c, fsck_mirror.c) and the in-memory write
 * overlay that keeps a read-only check read-only (fsck_overlay.c).
 */
#ifndef PONYFS_FSCK_H
#define PONYFS_FSCK_H

#include "internal.h"

struct fsck {
	sqlite3 *db;                    /* NULL until the database is open */
	struct bdev *meta, *data;
	struct ponyfs_sb sb;
	uint64_t data_have;             /* data blocks present (fewer when truncated) */
	const struct ponyfs_fsck_params *p;
	struct ponyfs_fsck_result *res;
	/* A bit per data block: referenced by an extent (used), or in a free run. */
	uint8_t *used, *free;
	uint64_t released;              /* blocks of extents this run deleted (now leaked) */
	int64_t version;                /* the database's schema (PRAGMA user_version) */
	uint64_t data_done, data_total; /* the data check's bytes, for p->progress */
};

/* What fixing a problem takes: nothing can, any repair run, or -y alone. */
enum fsck_fix {
	FSCK_FIX_NONE,
	FSCK_FIX_SAFE,                  /* no decision for a person: -p does it too */
	FSCK_FIX_ASK,                   /* drops or moves something: -y only */
};
bool fsck_may_fix(const struct fsck *f, enum fsck_fix how);
bool fsck_writable(const struct fsck *f);       /* REPAIR or PREEN */

/*
 * Counts and reports a problem about inode ino (0: none), named by its
 * path(s). fsck_problem_at() names it by path instead (an entry, whose
 * inode may not exist; NULL: the device).
 */
void fsck_problem(struct fsck *f, const char *check, uint64_t ino, bool fixed,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void fsck_problem_at(struct fsck *f, const char *check, uint64_t ino, const char *path,
		     bool fixed, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/*
 * The path(s) of ino, up to four joined by ", ", or what it is when no
 * path reaches the root: "inode N (unreachable)", "(orphan)", "(no
 * name)", "(missing)". Malloc'd; NULL only without memory.
 */
char *fsck_path(struct fsck *f, uint64_t ino);
/* "PARENT-PATH/NAME" for a directory entry, the name's control bytes escaped. */
char *fsck_entry_path(struct fsck *f, uint64_t parent, const void *name, size_t len);

/* Runs sql with int64 arguments (bound in order); -errno. */
int fsck_exec(struct fsck *f, const char *sql, int n, ...);
/* Steps a statement with no rows wanted, then resets it: 0 or -errno (fsck has
 * no mounted filesystem, so not ponyfs_step_done()). */
int fsck_step_done(sqlite3_stmt *s);

/* A row of a query, kept so the database can change while it is handled. */
struct fsck_row {
	int64_t v[4];                   /* the first four columns, as int64 */
	void *blob;                     /* the fifth column's bytes (malloc'd), if any */
	size_t blob_len;
};
/* Every row of sql (no arguments); *ret is the caller's: fsck_rows_free(). */
int fsck_rows(struct fsck *f, const char *sql, struct fsck_row **ret, size_t *ret_n);
void fsck_rows_free(struct fsck_row *rows, size_t n);
/* fn on every row of sql, all read before the first call; stops at fn's first -errno. */
int fsck_each(struct fsck *f, const char *sql,
	      int (*fn)(struct fsck *f, const struct fsck_row *row));

/* The passes, in the order they run. */
int fsck_mirror(struct fsck *f);        /* fsck_mirror.c */
int fsck_names(struct fsck *f);         /* fsck_names.c */
int fsck_extents(struct fsck *f);       /* fsck_blocks.c */
int fsck_crypt(struct fsck *f);         /* fsck_crypt.c */
int fsck_space(struct fsck *f);         /* fsck_blocks.c */

/*
 * A bdev of the given size over base whose writes stay in memory and are
 * read back from there (fsck_overlay.c): a read-only check opens SQLite
 * on it. base stays the caller's and must outlive it; reads past base's
 * end fail.
 */
int fsck_overlay_new(struct bdev *base, uint64_t size, struct bdev **ret);

/* The superblock of meta, read whatever meta's size (a truncated region too). */
int fsck_sb_read(struct bdev *meta, struct ponyfs_sb *ret);

#endif
