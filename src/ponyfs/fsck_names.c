/*
 * fsck_names.c - fsck's namespace pass: the root, directory entries that
 * name no inode or sit in what is not a directory, bad names, orphans
 * (files unlinked while open when the filesystem went down), xattrs of
 * deleted inodes, inodes no path reaches (linked into /lost+found by -y,
 * as e2fsck does), link counts, directories with several names and
 * readdir cookies. Each check is a query whose rows are the problems;
 * each fix is a statement per row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

#define IS_DIR(mode) "((" mode " & 61440) = 16384)"
#define LOST_FOUND "X'6c6f73742b666f756e64'"        /* "lost+found" */

/* What fixed says, or nothing: the tail of a problem's text. */
static const char *done(bool fixed, const char *what)
{
	return fixed ? what : "";
}

static int check_root(struct fsck *f, bool *ret_ok)
{
	struct fsck_row *rows = NULL;
	size_t n = 0;
	int r = fsck_rows(f, "SELECT " IS_DIR("mode") " FROM inodes WHERE ino = 1", &rows, &n);

	if (r < 0)
		return r;
	*ret_ok = n && rows[0].v[0];
	if (!*ret_ok)
		fsck_problem_at(f, "namespace", 1, "/", false, "%s", n ? "the root is not a directory"
								 : "the root directory is missing");
	fsck_rows_free(rows, n);
	return 0;
}

/* Row: parent, ino, cookie, flags: its inode exists (1), its parent exists (2). */
static int entry_fix(struct fsck *f, const struct fsck_row *row)
{
	bool named = row->v[3] & 1;
	/* Removing a name of nothing loses nothing; removing one from a
	 * non-directory may leave its inode with no name (lost+found then). */
	bool fix = fsck_may_fix(f, named ? FSCK_FIX_ASK : FSCK_FIX_SAFE);
	_cleanup_(freep) char *path = fsck_entry_path(f, (uint64_t)row->v[0], row->blob, row->blob_len);
	int r = fix ? fsck_exec(f, "DELETE FROM dentries WHERE parent = ?1 AND cookie = ?2", 2,
				row->v[0], row->v[2]) : 0;

	if (r < 0)
		return r;
	if (!named)
		fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, fix, "names inode %lld, "
				"which does not exist%s", (long long)row->v[1],
				done(fix, ": entry removed"));
	else
		fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, fix, "entry in inode %lld, "
				"which %s%s", (long long)row->v[0], row->v[3] & 2 ? "is not a directory"
				: "does not exist", done(fix, ": entry removed"));
	return 0;
}

static int bad_name(struct fsck *f, const struct fsck_row *row)
{
	_cleanup_(freep) char *path = fsck_entry_path(f, (uint64_t)row->v[0], row->blob, row->blob_len);

	if (!row->v[3])
		fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, false, "empty name");
	else if (row->v[3] > 255)
		fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, false,
				"name of %lld bytes, more than 255", (long long)row->v[3]);
	else
		fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, false,
				"name holds a '/' or a NUL byte");
	return 0;
}

static int check_entries(struct fsck *f)
{
	int r = fsck_each(f, "SELECT d.parent, d.ino, d.cookie, (c.ino IS NOT NULL) | "
			  "((p.ino IS NOT NULL) << 1) | (coalesce(" IS_DIR("p.mode") ", 0) << 2), "
			  "d.name FROM dentries d LEFT JOIN inodes p ON p.ino = d.parent "
			  "LEFT JOIN inodes c ON c.ino = d.ino "
			  "WHERE c.ino IS NULL OR p.ino IS NULL OR NOT " IS_DIR("p.mode"), entry_fix);

	/* An encrypted directory's names are ciphertext: any bytes (fsck_crypt.c). */
	if (r >= 0)
		r = fsck_each(f, f->version >= 4 ?
			      "SELECT parent, ino, cookie, length(name), name FROM dentries d "
			      "WHERE length(name) < 1 OR length(name) > 255 OR ((instr(name, X'2F') "
			      "OR instr(name, X'00')) AND NOT EXISTS (SELECT 1 FROM inodes p WHERE "
			      "p.ino = d.parent AND p.crypt IS NOT NULL))" :
			      "SELECT parent, ino, cookie, length(name), name FROM dentries "
			      "WHERE length(name) < 1 OR length(name) > 255 OR instr(name, X'2F') "
			      "OR instr(name, X'00')", bad_name);
	return r;
}

/* An inode with no name and nlink 0: what a mount deletes, fsck too. */
static int orphan(struct fsck *f, const struct fsck_row *row)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_SAFE);
	char path[64];
	int r = 0;

	snprintf(path, sizeof(path), "inode %lld (orphan)", (long long)row->v[0]);
	if (fix)
		r = fsck_exec(f, "DELETE FROM extents WHERE ino = ?1", 1, row->v[0]);
	if (fix && r >= 0)
		r = fsck_exec(f, "DELETE FROM xattrs WHERE ino = ?1", 1, row->v[0]);
	if (fix && r >= 0)
		r = fsck_exec(f, "DELETE FROM inodes WHERE ino = ?1", 1, row->v[0]);
	if (r < 0)
		return r;
	if (fix)
		f->released += (uint64_t)row->v[2];
	fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, fix, "unlinked while open when "
			"the filesystem went down (%lld bytes)%s", (long long)row->v[1],
			done(fix, ": deleted, its blocks freed"));
	return 0;
}

/* Xattrs of an inode that is gone: its delete left them behind (the
 * inode's number is never used again, so nothing reads them; they only
 * hold space). */
static int stray_xattrs(struct fsck *f, const struct fsck_row *row)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_SAFE);
	char path[64];
	int r = fix ? fsck_exec(f, "DELETE FROM xattrs WHERE ino = ?1", 1, row->v[0]) : 0;

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "inode %lld (gone)", (long long)row->v[0]);
	fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, fix,
			"%lld xattrs of a deleted inode%s", (long long)row->v[1],
			done(fix, ": deleted"));
	return 0;
}

/* -- unreachable inodes and /lost+found -------------------------------------- */

/* The inode of /lost+found, made when missing; -EEXIST when the name is not a directory. */
static int lost_found(struct fsck *f, int64_t *ret)
{
	struct fsck_row *rows = NULL;
	int64_t now = ponyfs_now();
	size_t n = 0;
	int r = fsck_rows(f, "SELECT d.ino, coalesce(" IS_DIR("i.mode") ", 0) FROM dentries d "
			  "LEFT JOIN inodes i ON i.ino = d.ino WHERE d.parent = 1 AND d.name = "
			  LOST_FOUND, &rows, &n);

	if (r < 0)
		return r;
	if (n) {
		*ret = rows[0].v[0];
		r = rows[0].v[1] ? 0 : -EEXIST;
		fsck_rows_free(rows, n);
		return r;
	}
	fsck_rows_free(rows, n);
	r = fsck_exec(f, "INSERT INTO inodes (mode, uid, gid, nlink, size, atime, mtime, ctime, "
		      "btime) VALUES (16832, 0, 0, 2, 0, ?1, ?1, ?1, ?1)", 1, now);  /* 040700 */
	*ret = sqlite3_last_insert_rowid(f->db);
	if (r >= 0)
		r = fsck_exec(f, "INSERT INTO dentries (parent, name, ino, cookie) SELECT 1, "
			      LOST_FOUND ", ?1, next_cookie FROM inodes WHERE ino = 1", 1, *ret);
	if (r >= 0)
		r = fsck_exec(f, "UPDATE inodes SET next_cookie = next_cookie + 1, nlink = nlink + 1, "
			      "mtime = ?1, ctime = ?1 WHERE ino = 1", 1, now);
	return r;
}

/* Names ino "#INO" in directory lf. -EEXIST: the name is taken. */
static int link_lost(struct fsck *f, int64_t lf, int64_t ino, bool dir)
{
	int r = fsck_exec(f, "INSERT INTO dentries (parent, name, ino, cookie) SELECT ?1, "
			  "CAST('#' || ?2 AS BLOB), ?2, next_cookie FROM inodes WHERE ino = ?1",
			  2, lf, ino);

	if (r >= 0)
		r = fsck_exec(f, "UPDATE inodes SET next_cookie = next_cookie + 1, nlink = nlink + ?2, "
			      "mtime = ?3, ctime = ?3 WHERE ino = ?1", 3, lf, (int64_t)dir, ponyfs_now());
	return r;
}

/* Unreachable inodes that are not under another one: no name in any directory. */
#define TOP "NOT EXISTS (SELECT 1 FROM dentries d JOIN inodes p ON p.ino = d.parent " \
	"WHERE d.ino = u.ino AND " IS_DIR("p.mode") ")"

/* Row: ino, is a directory, size, inodes below it. */
static int unreachable_top(struct fsck *f, const struct fsck_row *row)
{
	bool dir = row->v[1], fix = fsck_may_fix(f, FSCK_FIX_ASK);
	char path[64], linked[64], what[64];
	int64_t lf = 0;
	int r = fix ? lost_found(f, &lf) : 0;

	if (r >= 0 && fix)
		r = link_lost(f, lf, row->v[0], dir);
	if (r == -EEXIST) {
		fix = false;            /* the name to take is taken: leave it to a person */
		r = 0;
	}
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "inode %lld (unreachable)", (long long)row->v[0]);
	snprintf(linked, sizeof(linked), ": linked as /lost+found/#%lld", (long long)row->v[0]);
	if (dir)
		snprintf(what, sizeof(what), "directory, %lld inode%s below it", (long long)row->v[3],
			 row->v[3] == 1 ? "" : "s");
	else
		snprintf(what, sizeof(what), "%lld bytes", (long long)row->v[2]);
	fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, fix, "not reachable from the "
			"root (%s)%s", what, done(fix, linked));
	return 0;
}

static int in_loop(struct fsck *f, const struct fsck_row *row)
{
	char path[64];

	snprintf(path, sizeof(path), "inode %lld (unreachable)", (long long)row->v[0]);
	fsck_problem_at(f, "namespace", (uint64_t)row->v[0], path, false,
			"in a loop of directories that the root does not reach");
	return 0;
}

static int check_reachable(struct fsck *f)
{
	int r = fsck_exec(f, "CREATE TEMP TABLE fsck_unreach AS WITH RECURSIVE r(ino) AS "
			  "(SELECT 1 UNION SELECT d.ino FROM dentries d JOIN r ON d.parent = r.ino) "
			  "SELECT ino FROM inodes i WHERE ino NOT IN r AND NOT (nlink = 0 AND NOT "
			  "EXISTS (SELECT 1 FROM dentries d WHERE d.ino = i.ino))", 0);

	if (r >= 0)
		r = fsck_each(f, "WITH RECURSIVE below(top, ino) AS (SELECT ino, ino FROM "
			      "fsck_unreach u WHERE " TOP " UNION SELECT below.top, d.ino FROM "
			      "dentries d JOIN below ON d.parent = below.ino) "
			      "SELECT u.ino, " IS_DIR("i.mode") ", i.size, (SELECT count(*) - 1 FROM "
			      "below b WHERE b.top = u.ino) FROM fsck_unreach u JOIN inodes i "
			      "ON i.ino = u.ino WHERE " TOP, unreachable_top);
	/* What is left is reached from no top: directories naming each other. */
	if (r >= 0)
		r = fsck_each(f, "WITH RECURSIVE r(ino) AS (SELECT 1 UNION SELECT d.ino FROM "
			      "dentries d JOIN r ON d.parent = r.ino) SELECT ino FROM fsck_unreach "
			      "WHERE ino NOT IN r AND ino NOT IN (WITH RECURSIVE below(ino) AS "
			      "(SELECT ino FROM fsck_unreach u WHERE " TOP " UNION SELECT d.ino FROM "
			      "dentries d JOIN below ON d.parent = below.ino) SELECT ino FROM below)",
			      in_loop);
	if (r >= 0)
		r = fsck_exec(f, "DROP TABLE fsck_unreach", 0);
	return r;
}

/* -- link counts and cookies ------------------------------------------------- */

static int set_nlink(struct fsck *f, const struct fsck_row *row, bool dir)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_SAFE);
	char set[48];
	int r = fix ? fsck_exec(f, "UPDATE inodes SET nlink = ?2 WHERE ino = ?1", 2, row->v[0],
				row->v[2]) : 0;

	if (r < 0)
		return r;
	snprintf(set, sizeof(set), ": set to %lld", (long long)row->v[2]);
	if (dir)
		fsck_problem(f, "namespace", (uint64_t)row->v[0], fix, "directory has nlink %lld, "
			     "should be %lld (2 + its subdirectories)%s", (long long)row->v[1],
			     (long long)row->v[2], done(fix, set));
	else
		fsck_problem(f, "namespace", (uint64_t)row->v[0], fix, "has nlink %lld but %lld "
			     "name%s%s", (long long)row->v[1], (long long)row->v[2],
			     row->v[2] == 1 ? "" : "s", done(fix, set));
	return 0;
}

static int file_nlink(struct fsck *f, const struct fsck_row *row)
{
	return set_nlink(f, row, false);
}

static int dir_nlink(struct fsck *f, const struct fsck_row *row)
{
	return set_nlink(f, row, true);
}

static int dir_names(struct fsck *f, const struct fsck_row *row)
{
	fsck_problem(f, "namespace", (uint64_t)row->v[0], false, "directory has %lld names",
		     (long long)row->v[1]);
	return 0;
}

static int cookie(struct fsck *f, const struct fsck_row *row)
{
	bool fix = fsck_may_fix(f, FSCK_FIX_SAFE);
	char set[48];
	int r = fix ? fsck_exec(f, "UPDATE inodes SET next_cookie = ?2 + 1 WHERE ino = ?1", 2,
				row->v[0], row->v[1]) : 0;

	if (r < 0)
		return r;
	snprintf(set, sizeof(set), ": counter set to %lld", (long long)row->v[1] + 1);
	fsck_problem(f, "namespace", (uint64_t)row->v[0], fix, "readdir cookie %lld is not below "
		     "the directory's counter %lld%s", (long long)row->v[1], (long long)row->v[2],
		     done(fix, set));
	return 0;
}

static int check_counts(struct fsck *f)
{
	int r = fsck_each(f, "SELECT ino, nlink, n FROM (SELECT ino, nlink, mode, (SELECT count(*) "
			  "FROM dentries d WHERE d.ino = i.ino) AS n FROM inodes i) "
			  "WHERE NOT " IS_DIR("mode") " AND n > 0 AND nlink != n", file_nlink);

	if (r >= 0)
		r = fsck_each(f, "SELECT ino, nlink, n FROM (SELECT ino, nlink, mode, 2 + (SELECT "
			      "count(*) FROM dentries d JOIN inodes c ON c.ino = d.ino WHERE "
			      "d.parent = i.ino AND " IS_DIR("c.mode") ") AS n, EXISTS (SELECT 1 FROM "
			      "dentries d WHERE d.ino = i.ino) AS named FROM inodes i) WHERE "
			      IS_DIR("mode") " AND NOT (nlink = 0 AND NOT named AND ino != 1) "
			      "AND nlink != n", dir_nlink);
	if (r >= 0)
		r = fsck_each(f, "SELECT d.ino, count(*) FROM dentries d JOIN inodes c ON c.ino = d.ino "
			      "WHERE " IS_DIR("c.mode") " GROUP BY d.ino HAVING count(*) > 1", dir_names);
	if (r >= 0)
		r = fsck_each(f, "SELECT d.parent, max(d.cookie), p.next_cookie FROM dentries d JOIN "
			      "inodes p ON p.ino = d.parent GROUP BY d.parent "
			      "HAVING max(d.cookie) >= p.next_cookie", cookie);
	return r;
}

int fsck_names(struct fsck *f)
{
	bool root_ok = false;
	int r = check_root(f, &root_ok);

	if (r >= 0)
		r = check_entries(f);
	if (r >= 0)
		r = fsck_each(f, "SELECT ino, size, (SELECT coalesce(sum(nblocks), 0) FROM extents e "
			      "WHERE e.ino = i.ino) FROM inodes i WHERE nlink = 0 AND ino != 1 AND NOT "
			      "EXISTS (SELECT 1 FROM dentries d WHERE d.ino = i.ino)", orphan);
	if (r >= 0)
		r = fsck_each(f, "SELECT x.ino, count(*) FROM xattrs x WHERE NOT EXISTS (SELECT 1 "
			      "FROM inodes i WHERE i.ino = x.ino) GROUP BY x.ino", stray_xattrs);
	if (r >= 0 && root_ok)          /* without a root, nothing is reachable: one problem is enough */
		r = check_reachable(f);
	if (r >= 0)
		r = check_counts(f);
	return r;
}
