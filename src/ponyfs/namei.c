/*
 * namei.c - ponyfs's namespace: lookup, creating and removing names,
 * rename and readdir, each a change in the open transaction. A rename
 * binds the file it moves, with its cached data, to the same transaction
 * (ordering rule 2, bound.c), so the new name never commits without the
 * data: replace-via-rename needs no fsync.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"

/* A row's attributes, and what the inode's cached state says instead (a
 * size or times not written back); st_blocks with what the cache adds
 * when blocks (the row's count valid). */
static void attr_of_row(struct ponyfs *fs, const struct ponyfs_row *row, bool blocks,
			struct statx *x)
{
	struct ponyfs_inode *in;

	*x = (struct statx){
		.stx_mode = (uint16_t)row->mode, .stx_uid = row->uid, .stx_gid = row->gid,
		.stx_nlink = row->nlink, .stx_size = row->size,
		.stx_atime = ponyfs_timestamp(row->atime),
		.stx_mtime = ponyfs_timestamp(row->mtime),
		.stx_ctime = ponyfs_timestamp(row->ctime),
		.stx_btime = ponyfs_timestamp(row->btime),
		.stx_rdev_major = major((dev_t)row->rdev), .stx_rdev_minor = minor((dev_t)row->rdev),
		.stx_ino = row->ino, .stx_blksize = BS,
		.stx_mask = (STATX_BASIC_STATS | STATX_BTIME) & ~STATX_BLOCKS,
	};
	in = ponyfs_inode_find(fs, row->ino);
	if (in) {
		x->stx_size = in->size;
		if (in->atime_dirty)
			x->stx_atime = ponyfs_timestamp(in->atime);
		if (in->size_dirty) {
			x->stx_mtime = ponyfs_timestamp(in->mtime);
			x->stx_ctime = ponyfs_timestamp(in->ctime);
		}
	}
	if (blocks) {
		x->stx_blocks = ponyfs_blocks_with_cached(fs, row->ino, row->blocks);
		x->stx_mask |= STATX_BLOCKS;
	}
}

/* The row of ino from a statement's columns (ST_INODE_GET's from at on,
 * the block count at col), cached on the way: a lookup or readdirplus
 * answers the getattr that comes after it. */
static void attr_from_stmt(struct ponyfs *fs, uint64_t ino, sqlite3_stmt *s, int at, int col,
			   struct statx *x)
{
	struct ponyfs_row row;

	ponyfs_row_read(s, at, ino, &row);
	ponyfs_row_blocks(fs, &row, (uint64_t)sqlite3_column_int64(s, col));
	fs->stats.extent_walks++;
	ponyfs_row_store(fs, &row);
	attr_of_row(fs, &row, true, x);
}

/*
 * The attributes of ino. Only STATX_BLOCKS costs more than the row (an
 * extent walk), so it is computed only when asked for: statx light.
 */
int ponyfs_fill_attr_locked(struct ponyfs *fs, uint64_t ino, unsigned mask, struct statx *ret)
{
	bool blocks = mask & STATX_BLOCKS;
	struct ponyfs_row row;
	int r = ponyfs_row_locked(fs, ino, blocks, &row);

	if (r >= 0)
		attr_of_row(fs, &row, blocks, ret);
	return r;
}

static int entry_fill(struct ponyfs *fs, uint64_t ino, struct vfs_entry *ret)
{
	ret->ino = ino;
	ret->generation = 0;    /* inode numbers are never reused */
	return ponyfs_fill_attr_locked(fs, ino, STATX_BASIC_STATS | STATX_BTIME, &ret->attr);
}

static int inode_mode(struct ponyfs *fs, uint64_t ino, mode_t *ret)
{
	struct ponyfs_row row;
	int r = ponyfs_row_locked(fs, ino, false, &row);

	if (r >= 0)
		*ret = (mode_t)row.mode;
	return r;
}

/* parent must be a directory; name a valid component. */
static int check_dir_name(struct ponyfs *fs, uint64_t parent, const char *name)
{
	mode_t m;
	int r = name ? vfs_check_name(name) : 0;

	if (r >= 0)
		r = inode_mode(fs, parent, &m);
	if (r >= 0 && !S_ISDIR(m))
		r = -ENOTDIR;
	return r;
}

/*
 * What the namespace changes cost the metadata (space.c): a name is an
 * entry's three cells (dentries and its two indexes) and its directory's
 * row; a new inode is its row and sqlite_sequence's, with a symlink's
 * target and inherited ACLs as values that may overflow; a rename moves
 * or replaces two names and touches both directories, the inodes' rows
 * and a whiteout's.
 */
enum { NAME_ROWS = 4, INODE_ROWS = 2, RENAME_ROWS = 20 };

static void create_cost(const char *target, const struct ponyfs_acl_inherit *acl,
			struct ponyfs_cost *ret)
{
	*ret = (struct ponyfs_cost){ .rows = NAME_ROWS + INODE_ROWS };
	if (target)     /* an encrypted one pads to 32 bytes more at most */
		ponyfs_cost_value(ret, strlen(target) + 32);
	if (acl && acl->access)
		ponyfs_cost_value(ret, acl->size);
	if (acl && acl->dflt)
		ponyfs_cost_value(ret, acl->dflt_size);
}

/* A new inode named name in parent; its id in *ret_ino, its attributes in
 * *ret_attr when given. cost, when not NULL, is reserved once the name is
 * known to be free (else the caller did). */
static int inode_create(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const struct ponyfs_name *name, mode_t mode, dev_t rdev, const char *target,
			const struct ponyfs_cost *cost, uint64_t *ret_ino, struct statx *ret_attr)
{
	sqlite3_stmt *s = NULL;
	int64_t now = ponyfs_now();
	struct ponyfs_row row;
	uint64_t ino;
	mode_t pmode = 0;
	gid_t gid, pgid = 0;
	struct ponyfs_crypt crypt = { 0 };
	uint8_t crypt_blob[PONYFS_CRYPT_BYTES], sealed[CRYPT_SYMLINK_MAX];
	size_t sealed_len = 0;
	int r = 0;

	/* What fscrypt encrypts inherits the directory's policy, with a nonce of its own. */
	if (S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode))
		r = ponyfs_crypt_inherit_locked(fs, &name->dir, &crypt);
	if (r >= 0 && crypt.on && target)
		r = ponyfs_symlink_seal_locked(fs, &crypt, target, sealed, &sealed_len);
	/* The parent and the name in one statement. */
	if (r >= 0) {
		s = ponyfs_name_stmt(fs, ST_CREATE_CHECK, parent, name);
		r = ponyfs_step_row(fs, s);
		if (r > 0) {
			pmode = (mode_t)sqlite3_column_int64(s, 0);
			pgid = (gid_t)sqlite3_column_int64(s, 1);
			r = !S_ISDIR(pmode) ? -ENOTDIR : sqlite3_column_int64(s, 2) ? -EEXIST : 0;
		} else if (r == 0) {
			r = -ENOENT;
		}
		sqlite3_reset(s);
		s = NULL;
	}
	if (r >= 0)
		ponyfs_new_owner(ctx, pmode, pgid, &mode, &gid);
	if (r >= 0 && cost)
		r = ponyfs_meta_reserve_locked(fs, cost, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_prepare(fs, "INSERT INTO inodes (mode, uid, gid, "
			"nlink, size, atime, mtime, ctime, btime, rdev, target, crypt) VALUES "
			"(?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6, ?6, ?7, ?8, ?9)", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, mode);
	sqlite3_bind_int64(s, 2, ctx->uid);
	sqlite3_bind_int64(s, 3, gid);
	sqlite3_bind_int64(s, 4, S_ISDIR(mode) ? 2 : 1);
	sqlite3_bind_int64(s, 5, target ? (int64_t)strlen(target) : 0);
	sqlite3_bind_int64(s, 6, now);
	sqlite3_bind_int64(s, 7, (int64_t)rdev);
	if (target && crypt.on)
		sqlite3_bind_blob(s, 8, sealed, (int)sealed_len, SQLITE_STATIC);
	else if (target)
		sqlite3_bind_blob(s, 8, target, (int)strlen(target), SQLITE_STATIC);
	if (crypt.on) {
		ponyfs_crypt_encode(&crypt, crypt_blob);
		sqlite3_bind_blob(s, 9, crypt_blob, sizeof(crypt_blob), SQLITE_STATIC);
	}
	r = ponyfs_step_done(fs, s);
	sqlite3_reset(s);
	ino = (uint64_t)sqlite3_last_insert_rowid(fs->db);
	/* What went into the row is its cached copy, and the create's answer. */
	row = (struct ponyfs_row){
		.ino = ino, .mode = mode, .uid = ctx->uid, .gid = gid,
		.nlink = S_ISDIR(mode) ? 2 : 1, .size = target ? strlen(target) : 0,
		.rdev = rdev, .atime = now, .mtime = now, .ctime = now, .btime = now,
		.no_xattrs = true,      /* a number never used before: no rows */
	};
	ponyfs_row_blocks(fs, &row, 0);
	if (r >= 0 && fs->ninodes != UINT64_MAX)
		fs->ninodes++;
	if (r >= 0)
		ponyfs_row_store(fs, &row);
	if (r >= 0)
		r = ponyfs_dentry_add(fs, parent, name, ino, S_ISDIR(mode) ? 1 : 0);
	if (r >= 0)
		*ret_ino = ino;
	if (r >= 0 && ret_attr)
		attr_of_row(fs, &row, true, ret_attr);
	return r;
}

int ponyfs_create_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, mode_t mode, dev_t rdev, const char *target,
			 struct vfs_entry *ret)
{
	struct ponyfs_acl_inherit acl;
	struct ponyfs_name dn;
	struct ponyfs_cost cost;
	uint64_t ino = 0;
	int r = ponyfs_name_locked(fs, parent, name, PONYFS_NAME_CREATE, &dn);

	if (r < 0)
		return r;
	r = ponyfs_acl_create_locked(fs, ctx, parent, &mode, &acl);
	create_cost(target, &acl, &cost);
	if (r >= 0)
		r = inode_create(fs, ctx, parent, &dn, mode, rdev, target, &cost, &ino, &ret->attr);
	if (r >= 0)
		r = ponyfs_acl_inherit_locked(fs, ino, &acl);
	ponyfs_acl_inherit_done(&acl);
	ret->ino = ino;
	ret->generation = 0;
	return r;
}

/* The directory above dir (the root is its own), for lookup(dir, ".."). */
static int dir_parent(struct ponyfs *fs, uint64_t dir, uint64_t *ret)
{
	int64_t up = (int64_t)dir;
	int r = dir == VFS_ROOT_INO ? 0 :
		ponyfs_sql_int(fs, &up, "SELECT parent FROM dentries WHERE ino = ?1 LIMIT 1", 1,
			       (int64_t)dir);

	if (r >= 0)
		*ret = (uint64_t)up;
	return r;
}

int ponyfs_lookup_locked(struct ponyfs *fs, uint64_t parent, const char *name,
			 struct vfs_entry *ret)
{
	struct ponyfs_name dn;
	sqlite3_stmt *s;
	uint64_t ino;
	int r;

	/* FUSE's export protocol: "." names the id itself, any file, even one
	 * whose last name is gone but is still open; ".." a directory's parent. */
	if (!strcmp(name, "."))
		return entry_fill(fs, parent, ret);
	if (!strcmp(name, "..")) {
		r = check_dir_name(fs, parent, NULL);
		if (r >= 0)
			r = dir_parent(fs, parent, &ino);
		return r < 0 ? r : entry_fill(fs, ino, ret);
	}
	r = ponyfs_name_locked(fs, parent, name, PONYFS_NAME_FIND, &dn);
	if (r == -ENOENT) {     /* a no-key name of nothing there */
		int p = check_dir_name(fs, parent, NULL);

		return p < 0 ? p : r;
	}
	if (r < 0)
		return r;
	/* One statement when the name is there; when not, the parent says
	 * whether that is ENOENT or ENOTDIR. */
	s = ponyfs_name_stmt(fs, ST_LOOKUP, parent, &dn);
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		ino = (uint64_t)sqlite3_column_int64(s, 0);
		*ret = (struct vfs_entry){ .ino = ino };
		attr_from_stmt(fs, ino, s, 2, 1, &ret->attr);
	}
	sqlite3_reset(s);
	if (r == 0)
		r = check_dir_name(fs, parent, NULL);
	return r < 0 ? r : r > 0 ? 0 : -ENOENT;
}

/*
 * fscrypt's rule for a name made in dir for an existing inode (link,
 * rename): in an encrypted directory only an inode of the same policy
 * (or one with nothing to encrypt), else -EXDEV.
 */
static int crypt_permits(struct ponyfs *fs, const struct ponyfs_name *dir, uint64_t ino, mode_t mode)
{
	struct ponyfs_crypt c;
	int r;

	if (!dir->dir.on || !(S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode)))
		return 0;
	r = ponyfs_inode_crypt_locked(fs, ino, &c);
	if (r < 0)
		return r;
	return c.on && crypt_policy_equal(&c.policy, &dir->dir.policy) ? 0 : -EXDEV;
}

int ponyfs_link_locked(struct ponyfs *fs, uint64_t ino, uint64_t newparent, const char *newname,
		       struct vfs_entry *ret)
{
	struct ponyfs_name dn;
	mode_t m;
	int r = check_dir_name(fs, newparent, newname);

	if (r >= 0)
		r = ponyfs_name_locked(fs, newparent, newname, PONYFS_NAME_CREATE, &dn);
	if (r >= 0)
		r = inode_mode(fs, ino, &m);
	if (r >= 0 && S_ISDIR(m))
		r = -EPERM;
	if (r >= 0)
		r = crypt_permits(fs, &dn, ino, m);
	if (r >= 0)
		r = ponyfs_dentry_absent(fs, newparent, &dn);
	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = NAME_ROWS + 2 },
					       NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_dentry_add(fs, newparent, &dn, ino, 0);
	if (r >= 0)     /* rule 2: a new name, or it could show content it never had */
		ponyfs_inode_bind_locked(fs, ino);
	if (r >= 0)
		r = ponyfs_sql(fs, "UPDATE inodes SET nlink = nlink + 1 WHERE ino = ?1", 1, (int64_t)ino);
	if (r >= 0)
		r = ponyfs_ctime_locked(fs, ino, ponyfs_now());
	return r < 0 ? r : entry_fill(fs, ino, ret);
}

/* Extent rows deleted per transaction when an inode goes (each frees a run). */
#define DELETE_BATCH 512

/*
 * Reserves c for a step of ino's delete. A reservation may commit the open
 * transaction, and what commits then must say nlink 0 (an orphan, which
 * the next mount finishes deleting), never a file without a name that
 * still counts one. While *linked (the row still holds the count of the
 * name just removed: an unlink leaves it so, the row being deleted in the
 * same transaction), the reservation takes only what fits without a
 * commit; when that is short, the count is written first and the
 * reservation goes on as any other.
 */
static int delete_reserve(struct ponyfs *fs, uint64_t ino, const struct ponyfs_cost *c,
			  bool *linked)
{
	int r = *linked ? ponyfs_space_reserve_locked(fs, c, SPACE_MEASURE) : -ENOSPC;

	if (r != -ENOSPC)
		return r;
	if (*linked) {
		r = ponyfs_sql(fs, "UPDATE inodes SET nlink = 0, ctime = ?2 WHERE ino = ?1", 2,
			       (int64_t)ino, ponyfs_now());
		if (r < 0)
			return r;
		*linked = false;
	}
	return ponyfs_meta_reserve_locked(fs, c, NULL);
}

/*
 * Deletes an inode whose last name is gone: nlink 0, or linked (its row
 * still counts the name its caller removed in the open transaction).
 * Its extents go in batches, the last first, each reserved on its own,
 * so a file of any size can go on a full filesystem: a commit between
 * two batches leaves an orphan, which the next mount finishes deleting.
 */
int ponyfs_inode_delete_locked(struct ponyfs *fs, uint64_t ino, bool linked)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);
	struct ponyfs_cost c = { .run_bytes = DELETE_BATCH * PONYFS_EXT_ROW_BYTES,
				 .free_cells = 3 * DELETE_BATCH,
				 .frees = true };
	struct ponyfs_ext_span *batch = malloc(DELETE_BATCH * sizeof(*batch));
	int64_t bytes = 0;
	int n = DELETE_BATCH, r = batch ? 0 : -ENOMEM;

	if (in)
		ponyfs_inode_drop_locked(fs, in);
	/* A batch read in one statement, then reserved (a file without
	 * extents, as many are, reserves nothing for them); one short of
	 * DELETE_BATCH was the last. */
	while (r >= 0 && n == DELETE_BATCH) {
		r = n = ponyfs_extents_last(fs, ino, batch, DELETE_BATCH);
		if (n > 0)
			r = delete_reserve(fs, ino, &c, &linked);
		if (n > 0 && r >= 0)
			r = ponyfs_txn_begin_locked(fs);
		if (n > 0 && r >= 0)
			r = ponyfs_extents_drop_locked(fs, ino, batch, (size_t)n);
	}
	free(batch);
	/* Its xattrs, side by side: their bytes and a cell's header each. */
	if (r >= 0)
		r = ponyfs_sql_int(fs, &bytes, "SELECT coalesce(sum(length(name) + length(value) + 16), 0) "
				   "FROM xattrs WHERE ino = ?1", 1, (int64_t)ino);
	c = (struct ponyfs_cost){ .rows = INODE_ROWS, .run_bytes = (uint64_t)bytes, .frees = true };
	if (r >= 0)
		r = delete_reserve(fs, ino, &c, &linked);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0 && bytes)    /* none (most files): nothing to look for again */
		r = ponyfs_sql(fs, "DELETE FROM xattrs WHERE ino = ?1", 1, (int64_t)ino);
	if (r >= 0)
		r = ponyfs_sql(fs, "DELETE FROM inodes WHERE ino = ?1", 1, (int64_t)ino);
	if (r >= 0 && fs->ninodes != UINT64_MAX)
		fs->ninodes--;
	return r;
}

/*
 * ino, whose row counts nlink links, lost a name. *ret_delete: it had no
 * other and is not open, so the caller deletes it once its own change is
 * complete, the row as it is (ponyfs_inode_delete_locked(), linked): an
 * UPDATE of a row about to go saved, one an unlink. Otherwise the row
 * takes the count it is left with; a file still open whose last name went
 * is an orphan until its last close, or the next mount.
 */
static int inode_unref(struct ponyfs *fs, uint64_t ino, bool dir, uint32_t nlink,
		       bool *ret_delete)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);
	int64_t drop = dir ? 2 : 1, now;
	bool last = (int64_t)nlink - drop <= 0;
	int r;

	*ret_delete = last && !(in && in->opens);
	if (*ret_delete)
		return 0;
	now = ponyfs_now();
	r = ponyfs_sql(fs, "UPDATE inodes SET nlink = nlink - ?2, ctime = ?3 WHERE ino = ?1",
		       3, (int64_t)ino, drop, now);
	if (r >= 0)
		ponyfs_ctime_note(fs, ino, now);
	/* Still open: its last release deletes it (and only such a release
	 * needs to read the link count). */
	if (r >= 0 && last)
		in->orphan = true;
	return r;
}

static int dir_empty(struct ponyfs *fs, uint64_t dir)
{
	int64_t one;
	int r = ponyfs_sql_int(fs, &one, "SELECT 1 FROM dentries WHERE parent = ?1 LIMIT 1", 1,
			       (int64_t)dir);

	return r == -ENOENT ? 0 : r < 0 ? r : -ENOTEMPTY;
}

int ponyfs_remove_locked(struct ponyfs *fs, uint64_t parent, const char *name, bool dir)
{
	struct ponyfs_dentry_target t;
	struct ponyfs_name dn;
	bool del;
	int r = ponyfs_name_locked(fs, parent, name, PONYFS_NAME_FIND, &dn);

	/* The name, its inode's mode and link count in one statement; only
	 * when it is missing does the parent say whether that is ENOENT or
	 * ENOTDIR. */
	if (r >= 0)
		r = ponyfs_dentry_get(fs, parent, &dn, &t);
	if (r == -ENOENT) {
		int p = check_dir_name(fs, parent, NULL);

		r = p < 0 ? p : -ENOENT;
	}
	if (r >= 0 && dir != !!S_ISDIR(t.mode))
		r = dir ? -ENOTDIR : -EISDIR;
	if (r >= 0 && dir)
		r = dir_empty(fs, t.ino);
	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = NAME_ROWS + 2,
							.frees = true }, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_dentry_del(fs, parent, &dn);
	if (r >= 0)
		r = ponyfs_touch_dir(fs, parent, dir ? -1 : 0);
	if (r >= 0)
		r = inode_unref(fs, t.ino, dir, t.nlink, &del);
	return r >= 0 && del ? ponyfs_inode_delete_locked(fs, t.ino, true) : r;
}

/* -EINVAL when dir is src or below it: a directory cannot move into itself. */
static int check_not_below(struct ponyfs *fs, uint64_t src, uint64_t dir)
{
	while (dir != VFS_ROOT_INO) {
		int64_t up;

		int r;

		if (dir == src)
			return -EINVAL;
		r = ponyfs_sql_int(fs, &up, "SELECT parent FROM dentries WHERE ino = ?1 LIMIT 1", 1,
				   (int64_t)dir);
		if (r < 0)
			return r;
		dir = (uint64_t)up;
	}
	return 0;
}

static int rename_exchange(struct ponyfs *fs, uint64_t p1, const struct ponyfs_name *n1,
			   uint64_t i1, uint64_t p2, const struct ponyfs_name *n2, uint64_t i2)
{
	mode_t m1, m2;
	int r = inode_mode(fs, i1, &m1);

	if (r >= 0)
		r = inode_mode(fs, i2, &m2);
	if (r >= 0)
		r = crypt_permits(fs, n2, i1, m1);
	if (r >= 0)
		r = crypt_permits(fs, n1, i2, m2);
	if (r >= 0 && p1 != p2 && S_ISDIR(m1))
		r = check_not_below(fs, i1, p2);
	if (r >= 0 && p1 != p2 && S_ISDIR(m2))
		r = check_not_below(fs, i2, p1);
	if (r >= 0) {   /* rule 2: both names commit with their files' data */
		ponyfs_inode_bind_locked(fs, i1);
		ponyfs_inode_bind_locked(fs, i2);
	}
	/* Both names stay where they are in their directories' cookie order. */
	if (r >= 0)
		r = ponyfs_dentry_set_ino(fs, p1, n1, i2);
	if (r >= 0)
		r = ponyfs_dentry_set_ino(fs, p2, n2, i1);
	if (r >= 0 && p1 != p2) {
		int d = !!S_ISDIR(m2) - !!S_ISDIR(m1);

		r = ponyfs_touch_dir(fs, p1, d);
		if (r >= 0)
			r = ponyfs_touch_dir(fs, p2, -d);
	} else if (r >= 0) {
		r = ponyfs_touch_dir(fs, p1, 0);
	}
	return r;
}

int ponyfs_rename_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, uint64_t newparent, const char *newname, unsigned flags)
{
	struct ponyfs_cost cost = { .rows = RENAME_ROWS };
	struct ponyfs_dentry_target dt = { 0 };
	struct ponyfs_name dn, newdn;
	uint64_t src, dst;
	mode_t ms, md;
	bool replace, del = false;
	int r = check_dir_name(fs, parent, name);

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) ||
	    ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))))
		return -EINVAL;
	if (r >= 0)
		r = check_dir_name(fs, newparent, newname);
	/* fscrypt: a rename in or out of an encrypted directory needs its key. */
	if (r >= 0)
		r = ponyfs_name_locked(fs, parent, name, PONYFS_NAME_CREATE, &dn);
	if (r >= 0)
		r = ponyfs_name_locked(fs, newparent, newname, PONYFS_NAME_CREATE, &newdn);
	if (r >= 0)
		r = ponyfs_dentry_ino(fs, parent, &dn, &src);
	if (r < 0)
		return r;
	r = ponyfs_dentry_get(fs, newparent, &newdn, &dt);
	if (r < 0 && r != -ENOENT)
		return r;
	replace = r >= 0;
	dst = dt.ino;
	md = dt.mode;
	if ((flags & RENAME_NOREPLACE) && replace)
		return -EEXIST;
	if ((flags & RENAME_EXCHANGE) && !replace)
		return -ENOENT;
	if (replace && dst == src)
		return 0;       /* two names of one file: rename(2) does nothing */
	if (flags & RENAME_WHITEOUT)
		cost.rows += NAME_ROWS + INODE_ROWS;
	/* Before anything changes: the rename and the writeback of the file
	 * it moves commit together (rule 2), nothing may commit between. */
	r = ponyfs_meta_reserve_locked(fs, &cost, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0 && (flags & RENAME_EXCHANGE))
		return rename_exchange(fs, parent, &dn, src, newparent, &newdn, dst);
	if (r >= 0)
		r = inode_mode(fs, src, &ms);
	if (r >= 0)
		r = crypt_permits(fs, &newdn, src, ms);
	if (r >= 0 && replace && S_ISDIR(ms) && !S_ISDIR(md))
		r = -ENOTDIR;
	if (r >= 0 && replace && !S_ISDIR(ms) && S_ISDIR(md))
		r = -EISDIR;
	if (r >= 0 && replace && S_ISDIR(md))
		r = dir_empty(fs, dst);
	if (r >= 0 && S_ISDIR(ms) && parent != newparent)
		r = check_not_below(fs, src, newparent);
	/* Rule 2: the file moves with its data, in one transaction: the
	 * commit writes it back (bound.c), not this call. */
	if (r >= 0)
		ponyfs_inode_bind_locked(fs, src);
	if (r >= 0 && replace)
		r = ponyfs_dentry_del(fs, newparent, &newdn);
	if (r >= 0 && replace)
		r = inode_unref(fs, dst, S_ISDIR(md), dt.nlink, &del);
	if (r >= 0)
		r = ponyfs_dentry_move(fs, parent, &dn, newparent, &newdn, src);
	if (r >= 0 && parent != newparent)
		r = ponyfs_touch_dir(fs, parent, S_ISDIR(ms) ? -1 : 0);
	if (r >= 0)
		r = ponyfs_touch_dir(fs, newparent, (parent != newparent && S_ISDIR(ms) ? 1 : 0) -
			      (replace && S_ISDIR(md) ? 1 : 0));
	if (r >= 0)
		r = ponyfs_ctime_locked(fs, src, ponyfs_now());
	if (r >= 0 && (flags & RENAME_WHITEOUT)) {
		uint64_t wh;

		r = inode_create(fs, ctx, parent, &dn, S_IFCHR, makedev(0, 0), NULL, NULL, &wh,
				 NULL);
	}
	/* The replaced file, its name gone in the rename's transaction, goes after it. */
	return r >= 0 && del ? ponyfs_inode_delete_locked(fs, dst, true) : r;
}

/*
 * Collects up to max entries after cookie into ret (names malloc'd). The
 * caller hands them to the filler without the lock held: a filler may call
 * back into the filesystem (FUSE's readdirplus looks every entry up).
 */
int ponyfs_readdir_locked(struct ponyfs *fs, uint64_t ino, uint64_t cookie,
			  struct ponyfs_dirent *ret, size_t max, bool plus)
{
	struct ponyfs_dircrypt *d = NULL;
	sqlite3_stmt *s = NULL;
	uint64_t up = ino;
	size_t n = 0;
	int r = check_dir_name(fs, ino, NULL);

	if (r >= 0)
		r = ponyfs_dircrypt_locked(fs, ino, &d);
	/* ".." only in the first batch: the parent's query on every batch was
	 * 4% of a find+stat's samples (BENCHMARKS.md, session 40, floor6). */
	if (r >= 0 && cookie < 2)
		r = dir_parent(fs, ino, &up);
	if (r == -ENOENT)
		r = 0;          /* an open directory already removed: ".." is itself */
	if (r < 0)
		return r;
	if (cookie < 1) {
		struct ponyfs_inode *in;

		/* A listing from its start is the directory's access. */
		if (ponyfs_inode_get_locked(fs, ino, &in) >= 0) {
			ponyfs_atime_dir_access_locked(fs, in);
			ponyfs_inode_put_locked(fs, in);
		}
		ret[n++] = (struct ponyfs_dirent){ strdup("."), ino, DT_DIR, 1 };
	}
	if (cookie < 2)
		ret[n++] = (struct ponyfs_dirent){ strdup(".."), up, DT_DIR, 2 };
	/* readdirplus: each entry's row and block count in the same pass, in
	 * place of a lookup per entry. */
	s = ponyfs_stmt(fs, plus ? ST_READDIR_PLUS : ST_READDIR);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)cookie);
	sqlite3_bind_int64(s, 3, (int64_t)(max - n));
	while (n < max && (r = ponyfs_step_row(fs, s)) > 0) {
		int len = sqlite3_column_bytes(s, 0);
		char *name;

		if (len <= 0 || len > NAME_MAX) {
			r = -EUCLEAN;
			break;
		}
		name = ponyfs_name_show_locked(fs, d, sqlite3_column_blob(s, 0), (size_t)len);
		ret[n] = (struct ponyfs_dirent){ name, (uint64_t)sqlite3_column_int64(s, 1),
			vfs_mode_to_dt((mode_t)sqlite3_column_int64(s, 2)),
			(uint64_t)sqlite3_column_int64(s, 3) };
		if (plus) {
			struct statx *x = &ret[n].attr;

			attr_from_stmt(fs, ret[n].ino, s, 5, 4, x);
		}
		n++;
	}
	sqlite3_reset(s);
	for (size_t i = 0; i < n; i++) {
		if (!ret[i].name && r >= 0)
			r = -ENOMEM;
	}
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(ret[i].name);
		return r;
	}
	return (int)n;
}

int ponyfs_readlink_locked(struct ponyfs *fs, uint64_t ino, char *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	struct ponyfs_crypt c;
	int r = ponyfs_row_of(fs, "SELECT target, mode, crypt FROM inodes WHERE ino = ?1", ino, &s);

	if (r < 0)
		return r;
	if (!S_ISLNK((mode_t)sqlite3_column_int64(s, 1)))
		r = -EINVAL;
	if (r == 0)
		r = ponyfs_crypt_decode(sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2),
					&c);
	if (r == 0 && c.on) {   /* an encrypted target: shown with the key, or no-key */
		r = ponyfs_symlink_show_locked(fs, &c, sqlite3_column_blob(s, 0),
					       (size_t)sqlite3_column_bytes(s, 0), buf, size);
	} else if (r == 0) {
		r = MIN(sqlite3_column_bytes(s, 0), (int)MIN(size, (size_t)INT32_MAX));
		if (r > 0)
			memcpy(buf, sqlite3_column_blob(s, 0), (size_t)r);
	}
	sqlite3_reset(s);
	return r;
}
