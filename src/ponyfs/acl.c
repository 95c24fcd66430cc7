/*
 * acl.c - POSIX ACLs in ponyfs. system.posix_acl_access and
 * system.posix_acl_default live in the xattrs table in the kernel's xattr
 * format (little-endian: le32 version 2, then entries of le16 tag, le16
 * perm, le32 id). With FUSE_CAP_POSIX_ACL the kernel enforces them in its
 * permission checks, but leaves to the filesystem what a disk filesystem
 * does in the kernel (fs/fuse/acl.c: "userspace is responsible for
 * updating access permissions"): keeping the mode in step with the access
 * ACL on setfacl and chmod, and inheriting a directory's default ACL when
 * a name is created in it (the umask does not apply then).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "internal.h"

#define ACL_VERSION 2
#define ACL_HDR 4u
#define ACL_ENT 8u
#define ACL_MAX_SIZE 4096u              /* the kernel's limit: one page */
enum {
	ACL_TAG_USER_OBJ = 0x01, ACL_TAG_USER = 0x02, ACL_TAG_GROUP_OBJ = 0x04,
	ACL_TAG_GROUP = 0x08, ACL_TAG_MASK = 0x10, ACL_TAG_OTHER = 0x20,
};

static const char acl_access[] = "system.posix_acl_access";
static const char acl_default[] = "system.posix_acl_default";

bool ponyfs_acl_name(const char *name)
{
	return !strcmp(name, acl_access) || !strcmp(name, acl_default);
}

static uint16_t ent_tag(const uint8_t *a, size_t i) { return util_get_le16(a + ACL_HDR + i * ACL_ENT); }
static uint16_t ent_perm(const uint8_t *a, size_t i) { return util_get_le16(a + ACL_HDR + i * ACL_ENT + 2); }
static uint32_t ent_id(const uint8_t *a, size_t i) { return util_get_le32(a + ACL_HDR + i * ACL_ENT + 4); }

static void ent_set_perm(uint8_t *a, size_t i, unsigned perm)
{
	le16 p = cpu_to_le16((uint16_t)perm);

	memcpy(a + ACL_HDR + i * ACL_ENT + 2, &p, 2);
}

/*
 * The number of entries of a well-formed ACL (as posix_acl_valid() wants
 * it: base entries once each, named entries in id order without repeats,
 * tags in canonical order, a mask when there are named entries), or
 * -EINVAL.
 */
static int acl_check(const uint8_t *a, size_t size)
{
	unsigned seen = 0, prev_tag = 0;
	uint32_t prev_id = 0;
	size_t n;

	if (size < ACL_HDR || (size - ACL_HDR) % ACL_ENT || size > ACL_MAX_SIZE ||
	    util_get_le32(a) != ACL_VERSION)
		return -EINVAL;
	n = (size - ACL_HDR) / ACL_ENT;
	for (size_t i = 0; i < n; i++) {
		unsigned tag = ent_tag(a, i);
		bool named = tag == ACL_TAG_USER || tag == ACL_TAG_GROUP;

		if (ent_perm(a, i) & ~7u || !tag || tag & (tag - 1) || tag > ACL_TAG_OTHER ||
		    tag < prev_tag || (tag == prev_tag && (!named || ent_id(a, i) <= prev_id)))
			return -EINVAL;
		seen |= tag;
		prev_tag = tag;
		prev_id = ent_id(a, i);
	}
	if ((seen & (ACL_TAG_USER_OBJ | ACL_TAG_GROUP_OBJ | ACL_TAG_OTHER)) !=
	    (ACL_TAG_USER_OBJ | ACL_TAG_GROUP_OBJ | ACL_TAG_OTHER))
		return -EINVAL;
	if ((seen & (ACL_TAG_USER | ACL_TAG_GROUP)) && !(seen & ACL_TAG_MASK))
		return -EINVAL;
	return (int)n;
}

/* The permission bits an access ACL stands for (the group class is the mask's). */
static mode_t acl_mode(const uint8_t *a, size_t n)
{
	mode_t m = 0, group = 0;
	bool mask = false;

	for (size_t i = 0; i < n; i++) {
		unsigned p = ent_perm(a, i);

		switch (ent_tag(a, i)) {
		case ACL_TAG_USER_OBJ: m |= p << 6; break;
		case ACL_TAG_GROUP_OBJ: if (!mask) group = p << 3; break;
		case ACL_TAG_MASK: group = p << 3; mask = true; break;
		case ACL_TAG_OTHER: m |= p; break;
		}
	}
	return m | group;
}

/* Sets the ACL's base entries from mode (chmod's rewrite of the access ACL). */
static void acl_chmod(uint8_t *a, size_t n, mode_t mode)
{
	ssize_t group_obj = -1, mask = -1;

	for (size_t i = 0; i < n; i++) {
		switch (ent_tag(a, i)) {
		case ACL_TAG_USER_OBJ: ent_set_perm(a, i, (mode >> 6) & 7); break;
		case ACL_TAG_GROUP_OBJ: group_obj = (ssize_t)i; break;
		case ACL_TAG_MASK: mask = (ssize_t)i; break;
		case ACL_TAG_OTHER: ent_set_perm(a, i, mode & 7); break;
		}
	}
	ent_set_perm(a, (size_t)(mask >= 0 ? mask : group_obj), (mode >> 3) & 7);
}

static int xattr_get(struct ponyfs *fs, uint64_t ino, const char *name, uint8_t **ret, size_t *ret_size)
{
	int n = ponyfs_getxattr_locked(fs, ino, name, NULL, 0);

	if (n < 0)
		return n;
	*ret = malloc(MAX((size_t)n, (size_t)1));
	if (!*ret)
		return -ENOMEM;
	*ret_size = (size_t)n;
	n = ponyfs_getxattr_locked(fs, ino, name, *ret, *ret_size);
	if (n < 0) {
		free(*ret);
		*ret = NULL;
	}
	return n < 0 ? n : 0;
}

static int xattr_put(struct ponyfs *fs, uint64_t ino, const char *name, const void *v, size_t size)
{
	sqlite3_stmt *s;
	int r;

	if (v)
		return ponyfs_xattr_row_put(fs, ino, name, v, size);
	r = ponyfs_prepare(fs, "DELETE FROM xattrs WHERE ino = ?1 AND name = ?2", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, name, (int)strlen(name), SQLITE_STATIC);
	return ponyfs_step_done(fs, s);
}

static int mode_get(struct ponyfs *fs, uint64_t ino, mode_t *ret)
{
	int64_t m;
	int r = ponyfs_sql_int(fs, &m, "SELECT mode FROM inodes WHERE ino = ?1", 1, (int64_t)ino);

	if (r >= 0)
		*ret = (mode_t)m;
	return r;
}

/*
 * setxattr of an ACL name. An access ACL sets the mode's permission bits;
 * one that says no more than the mode is not kept (as ext4 does). A
 * default ACL belongs to directories only.
 */
int ponyfs_acl_set_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const char *name, const void *value, size_t size, int flags)
{
	bool access = !strcmp(name, acl_access);
	_cleanup_(freep) uint8_t *old = NULL;
	struct ponyfs_cost c;
	size_t old_size;
	mode_t mode;
	int n, r = mode_get(fs, ino, &mode);
	int exists = r < 0 ? r : xattr_get(fs, ino, name, &old, &old_size);

	if (exists < 0 && exists != -ENODATA)
		return exists;
	if ((flags & XATTR_CREATE) && exists >= 0)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && exists == -ENODATA)
		return -ENODATA;
	n = size == ACL_HDR && util_get_le32(value) == ACL_VERSION ? 0 : acl_check(value, size);
	if (n < 0)
		return n;
	if (!access && !S_ISDIR(mode))
		return n ? -EACCES : 0;
	/* The mode, the set-group-ID bit, the ACL and the ctime. */
	c = (struct ponyfs_cost){ .rows = 3 };
	ponyfs_cost_value(&c, size);
	r = ponyfs_meta_reserve_locked(fs, &c, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0 && access && n)
		r = ponyfs_sql(fs, "UPDATE inodes SET mode = (mode & ~511) | ?2 WHERE ino = ?1", 2,
			       (int64_t)ino, (int64_t)acl_mode(value, (size_t)n));
	if (r >= 0 && access && n)
		r = ponyfs_acl_sgid_locked(fs, ctx, ino);
	if (r >= 0)
		r = xattr_put(fs, ino, name, n && (!access || n > 3) ? value : NULL, size);
	return r < 0 ? r : ponyfs_ctime_locked(fs, ino, ponyfs_now());
}

/* chmod: the access ACL's base entries follow the new mode. */
int ponyfs_acl_chmod_locked(struct ponyfs *fs, uint64_t ino, mode_t mode)
{
	_cleanup_(freep) uint8_t *a = NULL;
	size_t size;
	int n, r = xattr_get(fs, ino, acl_access, &a, &size);

	if (r == -ENODATA)
		return 0;
	if (r < 0)
		return r;
	n = acl_check(a, size);
	if (n < 0)
		return 0;       /* not ours to repair here; fsck reports it */
	acl_chmod(a, (size_t)n, mode);
	return xattr_put(fs, ino, acl_access, a, size);
}

/*
 * Before a create in parent: the new inode's mode. Without a default ACL
 * on parent that is the umask's; with one, the default ACL masked by the
 * requested mode (posix_acl_create_masq()) decides, and *ret_acl (the
 * caller frees it) holds the access ACL to store when it says more than
 * the mode, *ret_default the default ACL a new directory inherits.
 */
int ponyfs_acl_create_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			     mode_t *mode, struct ponyfs_acl_inherit *ret)
{
	uint8_t *d = NULL;
	size_t size;
	mode_t m = *mode;
	ssize_t group_obj = -1, mask = -1;
	bool equiv = true;
	int n = 0, r = S_ISLNK(m) ? -ENODATA : xattr_get(fs, parent, acl_default, &d, &size);

	memset(ret, 0, sizeof(*ret));
	if (r == -ENODATA || (r >= 0 && (n = acl_check(d, size)) < 0)) {
		free(d);
		if (!S_ISLNK(m))
			*mode = (m & S_IFMT) | (m & 07777 & ~ctx->umask);
		return 0;
	}
	if (r < 0)
		return r;
	if (S_ISDIR(m)) {
		ret->dflt = malloc(size);
		if (!ret->dflt) {
			free(d);
			return -ENOMEM;
		}
		memcpy(ret->dflt, d, size);
	}
	for (size_t i = 0; i < (size_t)n; i++) {
		unsigned p = ent_perm(d, i);

		switch (ent_tag(d, i)) {
		case ACL_TAG_USER_OBJ:
			p &= (m >> 6) & 7;
			m = (m & ~(mode_t)S_IRWXU) | (mode_t)(p << 6);
			ent_set_perm(d, i, p);
			break;
		case ACL_TAG_OTHER:
			p &= m & 7;
			m = (m & ~(mode_t)S_IRWXO) | p;
			ent_set_perm(d, i, p);
			break;
		case ACL_TAG_GROUP_OBJ: group_obj = (ssize_t)i; break;
		case ACL_TAG_MASK: mask = (ssize_t)i; equiv = false; break;
		default: equiv = false; break;
		}
	}
	{
		size_t g = (size_t)(mask >= 0 ? mask : group_obj);
		unsigned p = ent_perm(d, g) & ((m >> 3) & 7);

		ent_set_perm(d, g, p);
		m = (m & ~(mode_t)S_IRWXG) | (mode_t)(p << 3);
	}
	*mode = m;
	ret->size = size;
	ret->dflt_size = S_ISDIR(m) ? size : 0;
	if (equiv)
		free(d);
	else
		ret->access = d;
	return 0;
}

/* After the create: the inherited ACLs, stored on the new inode. */
int ponyfs_acl_inherit_locked(struct ponyfs *fs, uint64_t ino, const struct ponyfs_acl_inherit *a)
{
	int r = 0;

	if (a->access)
		r = xattr_put(fs, ino, acl_access, a->access, a->size);
	if (r >= 0 && a->dflt)
		r = xattr_put(fs, ino, acl_default, a->dflt, a->dflt_size);
	return r;
}

void ponyfs_acl_inherit_done(struct ponyfs_acl_inherit *a)
{
	free(a->access);
	free(a->dflt);
}
