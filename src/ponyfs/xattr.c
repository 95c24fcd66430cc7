/*
 * xattr.c - extended attributes: a row of the xattrs table each (name with
 * its namespace prefix, value up to 64 KiB), changed in the open
 * transaction with the inode's ctime. POSIX ACLs are xattrs too, with
 * rules of their own (acl.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "internal.h"

#define XATTR_NAME_MAX_LEN 255
#define XATTR_VALUE_MAX 65536

static int xattr_check(struct ponyfs *fs, uint64_t ino, const char *name)
{
	struct statx x;
	size_t n = strlen(name);

	if (!n)
		return -EINVAL;
	if (n > XATTR_NAME_MAX_LEN)
		return -ERANGE;
	return ponyfs_fill_attr_locked(fs, ino, 0, &x);
}

int ponyfs_getxattr_locked(struct ponyfs *fs, uint64_t ino, const char *name, void *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	int r = xattr_check(fs, ino, name);

	if (r >= 0 && ponyfs_row_no_xattrs(fs, ino))
		return -ENODATA;        /* a new inode's, known without a SELECT (rowcache.c) */
	if (r >= 0)
		r = ponyfs_prepare(fs,
			"SELECT value FROM xattrs WHERE ino = ?1 AND name = ?2", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, name, (int)strlen(name), SQLITE_STATIC);
	r = ponyfs_step_row(fs, s);
	if (r <= 0) {
		r = r < 0 ? r : -ENODATA;
	} else {
		r = sqlite3_column_bytes(s, 0);
		if (size && (size_t)r > size)
			r = -ERANGE;
		else if (size && r)
			memcpy(buf, sqlite3_column_blob(s, 0), (size_t)r);
	}
	sqlite3_reset(s);
	return r;
}

int ponyfs_getxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    void *buf, size_t size)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_getxattr_locked(ponyfs_of(v), ino, name, buf, size));
}

int ponyfs_xattr_row_put(struct ponyfs *fs, uint64_t ino, const char *name, const void *value,
			 size_t size)
{
	sqlite3_stmt *s = NULL;
	int r = ponyfs_prepare(fs, "INSERT OR REPLACE INTO xattrs (ino, name, value) "
			       "VALUES (?1, ?2, ?3)", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, name, (int)strlen(name), SQLITE_STATIC);
	sqlite3_bind_blob(s, 3, size ? value : "", (int)size, SQLITE_STATIC);
	/* Before the statement: whatever it does, the row may be there now. */
	ponyfs_row_xattrs_added(fs, ino);
	return ponyfs_step_done(fs, s);
}

static int setxattr_locked(struct ponyfs *fs, uint64_t ino, const char *name, const void *value,
			   size_t size, int flags)
{
	struct ponyfs_cost c = { .rows = 1 };
	int exists = ponyfs_getxattr_locked(fs, ino, name, NULL, 0);
	int r = exists == -ENODATA ? 0 : exists;

	if (size > XATTR_VALUE_MAX)
		return -E2BIG;
	if (r >= 0 && (flags & XATTR_CREATE) && exists >= 0)
		r = -EEXIST;
	if (r >= 0 && (flags & XATTR_REPLACE) && exists == -ENODATA)
		r = -ENODATA;
	ponyfs_cost_value(&c, size + strlen(name));     /* and the ctime */
	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &c, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_xattr_row_put(fs, ino, name, value, size);
	return r < 0 ? r : ponyfs_ctime_locked(fs, ino, ponyfs_now());
}

int ponyfs_setxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    const void *value, size_t size, int flags)
{
	if (ponyfs_acl_name(name))
		return PONYFS_CHANGE(ponyfs_of(v), ponyfs_acl_set_locked(ponyfs_of(v), ctx, ino, name, value,
								  size, flags));
	return PONYFS_CHANGE(ponyfs_of(v), setxattr_locked(ponyfs_of(v), ino, name, value, size, flags));
}

static int listxattr_locked(struct ponyfs *fs, uint64_t ino, char *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	size_t total = 0;
	struct statx x;
	int r = ponyfs_fill_attr_locked(fs, ino, 0, &x);

	if (r >= 0)
		r = ponyfs_prepare(fs,
			"SELECT name FROM xattrs WHERE ino = ?1 ORDER BY name", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	while ((r = ponyfs_step_row(fs, s)) > 0) {
		size_t n = (size_t)sqlite3_column_bytes(s, 0);

		if (size && total + n + 1 > size) {
			total = 0;
			r = -ERANGE;
			break;
		}
		if (size) {
			memcpy(buf + total, sqlite3_column_blob(s, 0), n);
			buf[total + n] = 0;
		}
		total += n + 1;
	}
	sqlite3_reset(s);
	return r < 0 ? r : (int)total;
}

int ponyfs_listxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, char *buf, size_t size)
{
	return PONYFS_LOCKED(ponyfs_of(v), listxattr_locked(ponyfs_of(v), ino, buf, size));
}

static int removexattr_locked(struct ponyfs *fs, uint64_t ino, const char *name)
{
	sqlite3_stmt *s = NULL;
	int r = ponyfs_getxattr_locked(fs, ino, name, NULL, 0);

	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = 2, .frees = true },
					       NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_prepare(fs,
			"DELETE FROM xattrs WHERE ino = ?1 AND name = ?2", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, name, (int)strlen(name), SQLITE_STATIC);
	r = ponyfs_step_done(fs, s);
	sqlite3_reset(s);
	return r < 0 ? r : ponyfs_ctime_locked(fs, ino, ponyfs_now());
}

int ponyfs_removexattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name)
{
	return PONYFS_CHANGE(ponyfs_of(v), removexattr_locked(ponyfs_of(v), ino, name));
}
