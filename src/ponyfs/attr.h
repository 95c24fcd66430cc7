/*
 * attr.h - ponyfs's attributes beyond a row's columns, the calls their
 * files share: access times as the mount says (atime.c), the rules the
 * kernel's VFS applies to set-ID bits and new owners (attr.c), POSIX ACLs
 * (acl.c) and extended attributes (xattr.c). Included at the end of
 * internal.h: it needs the filesystem's structures.
 */
#ifndef PONYFS_ATTR_H
#define PONYFS_ATTR_H

/* Access times (atime.c). */
/* A read or readdir of in: atime moves as the mount says, written behind. */
int ponyfs_atime_access_locked(struct ponyfs *fs, struct ponyfs_inode *in);
/* A listing of dir from its start: the same, unless the mount is nodiratime. */
int ponyfs_atime_dir_access_locked(struct ponyfs *fs, struct ponyfs_inode *dir);
/* ino's mtime or ctime became now (a cached inode's rule must see it). */
void ponyfs_times_changed(struct ponyfs *fs, uint64_t ino, int64_t now);
/* ino's atime was set in the database (utimensat): the cached one is stale. */
void ponyfs_atime_set(struct ponyfs *fs, uint64_t ino);

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
/* Sets xattr name of ino to value (size bytes): the only writer of xattrs rows (xattr.c). */
int ponyfs_xattr_row_put(struct ponyfs *fs, uint64_t ino, const char *name, const void *value,
			 size_t size);
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

/* Extended attributes, the vfs hooks (xattr.c). */
int ponyfs_getxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    void *buf, size_t size);
int ponyfs_setxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name,
		    const void *value, size_t size, int flags);
int ponyfs_listxattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, char *buf, size_t size);
int ponyfs_removexattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, const char *name);

#endif
