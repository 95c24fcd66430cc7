/*
 * dentry.c - the rows of the dentries table: finding, adding, moving and
 * removing one name (as dentries.name holds it: the component, or its
 * ciphertext in an encrypted directory, see crypt_names.c), with what a
 * name's change does to its directory's times and link count. namei.c
 * builds the namespace calls from these.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "internal.h"

/* Binds name (as dentries.name holds it) to parameter i of s. */
void ponyfs_bind_name(sqlite3_stmt *s, int i, const struct ponyfs_name *name)
{
	sqlite3_bind_blob(s, i, name->bytes, (int)name->len, SQLITE_STATIC);
}

/* A statement of which whose ?1 is a directory and ?2 a name in it, bound. */
sqlite3_stmt *ponyfs_name_stmt(struct ponyfs *fs, enum ponyfs_stmt which, uint64_t parent,
			       const struct ponyfs_name *name)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, which);

	sqlite3_bind_int64(s, 1, (int64_t)parent);
	ponyfs_bind_name(s, 2, name);
	return s;
}

/* The inode name names in parent, with its mode and link count: one
 * statement (a join), where an unlink would otherwise read the inode's row
 * again, or UPDATE it ... RETURNING to learn what it has left. */
int ponyfs_dentry_get(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      struct ponyfs_dentry_target *ret)
{
	sqlite3_stmt *s = ponyfs_name_stmt(fs, ST_DENTRY_GET, parent, name);
	int r = ponyfs_step_row(fs, s);

	if (r > 0)
		*ret = (struct ponyfs_dentry_target){
			.ino = (uint64_t)sqlite3_column_int64(s, 0),
			.mode = (mode_t)sqlite3_column_int64(s, 1),
			.nlink = (uint32_t)sqlite3_column_int64(s, 2),
		};
	sqlite3_reset(s);
	return r > 0 ? 0 : r == 0 ? -ENOENT : r;
}

int ponyfs_dentry_ino(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      uint64_t *ret)
{
	struct ponyfs_dentry_target t;
	int r = ponyfs_dentry_get(fs, parent, name, &t);

	if (r >= 0)
		*ret = t.ino;
	return r;
}

/* 0 when parent has no entry name, -EEXIST when it has, -errno when unknown. */
int ponyfs_dentry_absent(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name)
{
	uint64_t ino;
	int r = ponyfs_dentry_ino(fs, parent, name, &ino);

	return r == -ENOENT ? 0 : r < 0 ? r : -EEXIST;
}

int ponyfs_touch_dir(struct ponyfs *fs, uint64_t dir, int nlink_delta)
{
	struct ponyfs_row before = ponyfs_row_before(fs, dir);
	int64_t now = ponyfs_now();
	int r;

	ponyfs_times_changed(fs, dir, now);
	r = ponyfs_sql(fs, "UPDATE inodes SET mtime = ?2, ctime = ?2, nlink = nlink + ?3 "
		       "WHERE ino = ?1", 3, (int64_t)dir, now, (int64_t)nlink_delta);
	if (r >= 0)     /* the row the update hook dropped, with the same change */
		ponyfs_row_touched(fs, &before, true, now, nlink_delta);
	return r;
}


/*
 * Adds name -> ino to parent under the parent's next cookie; unless touch
 * is PONYFS_NO_TOUCH, the statement that moves the cookie on also sets the
 * parent's times to now and adds touch to its link count (ponyfs_touch_dir's
 * work, folded in: a create is one statement shorter). The row takes the
 * cookie from the parent's row in the INSERT itself (ST_DENTRY_ADD), and
 * the UPDATE moves it on after.
 */
int ponyfs_dentry_add(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		      uint64_t ino, int touch)
{
	struct ponyfs_row before = ponyfs_row_before(fs, parent);
	int64_t now = ponyfs_now();
	sqlite3_stmt *s = ponyfs_name_stmt(fs, ST_DENTRY_ADD, parent, name);
	int r;

	sqlite3_bind_int64(s, 3, (int64_t)ino);
	r = ponyfs_step_done(fs, s);
	/* No such parent: no next cookie for the row's NOT NULL cookie. */
	if (r == -EEXIST && sqlite3_extended_errcode(fs->db) == SQLITE_CONSTRAINT_NOTNULL)
		r = -ENOENT;
	if (r >= 0)
		r = ponyfs_prepare(fs, "UPDATE inodes SET next_cookie = next_cookie + 1, "
				   "mtime = coalesce(?2, mtime), ctime = coalesce(?2, ctime), "
				   "nlink = nlink + ?3 WHERE ino = ?1", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)parent);
	if (touch != PONYFS_NO_TOUCH)
		sqlite3_bind_int64(s, 2, now);
	sqlite3_bind_int64(s, 3, touch == PONYFS_NO_TOUCH ? 0 : touch);
	r = ponyfs_step_done(fs, s);
	if (r >= 0 && touch != PONYFS_NO_TOUCH)
		ponyfs_times_changed(fs, parent, now);
	/* The parent's row the update hook dropped, with the same change
	 * (next_cookie is no column of a cached row). */
	if (r >= 0)
		ponyfs_row_touched(fs, &before, touch != PONYFS_NO_TOUCH, now,
				   touch == PONYFS_NO_TOUCH ? 0 : touch);
	return r;
}

int ponyfs_dentry_del(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name)
{
	sqlite3_stmt *s = NULL;
	int r = ponyfs_prepare(fs,
		"DELETE FROM dentries WHERE parent = ?1 AND name = ?2", &s);

	if (r >= 0) {
		sqlite3_bind_int64(s, 1, (int64_t)parent);
		ponyfs_bind_name(s, 2, name);
		r = ponyfs_step_done(fs, s);
	}
	sqlite3_reset(s);
	return r;
}

/*
 * Moves an entry to a new name. Within one directory it keeps its cookie,
 * so a reader between two readdir calls sees it once, under one name or
 * the other: generic/736 renames every entry as it reads it, and with a new
 * cookie each one came back at the end, again and again.
 */
int ponyfs_dentry_move(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
		       uint64_t newparent, const struct ponyfs_name *newname, uint64_t ino)
{
	sqlite3_stmt *s = NULL;
	int r;

	if (parent != newparent) {
		r = ponyfs_dentry_del(fs, parent, name);
		return r < 0 ? r : ponyfs_dentry_add(fs, newparent, newname, ino, PONYFS_NO_TOUCH);
	}
	r = ponyfs_prepare(fs, "UPDATE dentries SET name = ?3 WHERE parent = ?1 AND name = ?2", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)parent);
	ponyfs_bind_name(s, 2, name);
	ponyfs_bind_name(s, 3, newname);
	return ponyfs_step_done(fs, s);
}

/* Points an existing entry at another inode; it keeps its name and cookie. */
int ponyfs_dentry_set_ino(struct ponyfs *fs, uint64_t parent, const struct ponyfs_name *name,
			  uint64_t ino)
{
	sqlite3_stmt *s = NULL;
	int r = ponyfs_prepare(fs, "UPDATE dentries SET ino = ?3 WHERE parent = ?1 AND name = ?2", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)parent);
	ponyfs_bind_name(s, 2, name);
	sqlite3_bind_int64(s, 3, (int64_t)ino);
	return ponyfs_step_done(fs, s);
}
