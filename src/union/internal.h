/*
 * internal.h - the union's nodes and layers, shared by its files.
 *
 * A node is one union inode. Invariants, under u->lock:
 *  - a node with an upper holds one upper reference (upper != 0);
 *  - lower[0..nlower) hold one reference each in their layer, top first;
 *    a non-directory has at most one lower, a directory one per layer it is
 *    merged from (stopping at an opaque one);
 *  - key is the stable st_ino, and no two live nodes share it;
 *  - refs counts FUSE lookups plus child nodes; at 0 the node is freed.
 */
#ifndef PONY_UNION_INTERNAL_H
#define PONY_UNION_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "pony/union.h"
#include "pony/vfs.h"

#define UNION_LAYER_SHIFT 56            /* st_ino = layer << 56 | ino */

struct union_lower {
	unsigned layer;                 /* 1..nlowers; 0 is the upper */
	uint64_t ino;                   /* in that layer's vfs */
	uint64_t st_ino;                /* the layer's st_ino: the node's key */
	dev_t dev;                      /* the layer's st_dev of it */
	struct statx_timestamp ctime;   /* when first seen: a change means stale */
};

struct union_dir;

struct union_node {
	struct union_node *hnext;       /* key hash chain */
	struct union_node *parent;      /* NULL for the root; holds a ref */
	char *name;                     /* under parent; updated by rename */
	uint64_t key;
	uint64_t refs;
	mode_t type;                    /* S_IFMT bits */
	bool opaque;                    /* a directory hiding all lowers */
	bool impure;                    /* a directory whose impure xattr is set */
	bool no_caps;                   /* security.capability known absent */
	bool no_xattrs;                 /* a lower's (no upper, or a read-only
					 * union) with no xattrs but the union's
					 * own: answers GETXATTR and LISTXATTR
					 * (files.c) */
	atomic_bool copied_up;          /* had lower data only and now has an
					 * upper: open lower handles switch to
					 * it at their next use (open.c); read
					 * without the lock */
	bool upper_empty;               /* a directory whose upper has no names:
					 * made empty by the union (copy-up,
					 * mkdir) and nothing added since, so
					 * lookups need not ask it */
	struct union_dir *dir_cache;    /* listing for readdir without opendir */
	bool listed;                    /* a directory whose listing was taken */
	uint32_t lower_links;           /* >1: a copied-up hard link (index) with
					 * that many lower names at copy-up */
	bool copying;                   /* its data is being copied up with
					 * u->lock dropped (copy_up.c) */
	uint64_t upper;                 /* upper vfs ino, 0 if none */
	unsigned nlower;
	struct union_lower lower[];
};

struct union_fs {
	struct vfs vfs;
	pthread_mutex_t lock;           /* guards nodes and every namespace change */
	pthread_cond_t copied;          /* a node's copying ended */
	struct vfs *upper;              /* hostfs over upper + work */
	struct vfs *lowers[UNION_MAX_LOWERS + 1]; /* [1..nlowers] */
	unsigned nlowers;
	uint64_t work;                  /* upper-vfs ino of work/work */
	uint64_t index;                 /* upper-vfs ino of work/index */
	uint64_t whiteout;              /* upper-vfs ino of the whiteout in
					 * work/work every whiteout links to; 0:
					 * none yet (copy_up.c) */
	uint64_t whiteout_st_ino;       /* its st_ino: a listing's d_ino says
					 * a whiteout without a lookup */
	char whiteout_name[32];         /* its name there */
	bool no_shared_whiteout;        /* the upper refused such a link */
	char prefix[24];                /* "trusted.overlay." or "user.overlay." */
	bool stale;                     /* a lower changed: refuse everything */
	uint64_t tmp_seq;
	struct union_node *root;
	struct union_node **buckets;
	size_t nbuckets, count;
	struct union_seen **seen;       /* ctime of every lower inode looked up */
	size_t nseen, seen_count;
	struct vfs_ctx root_ctx;        /* for internal changes (copy-up) */
	dev_t upper_dev;                /* st_dev of the whole union */
	struct union_prefetch *prefetch; /* prefetch.c's thread, once started */
	bool no_prefetch;               /* UNION_NO_PREFETCH, or no thread */
	atomic_uint_fast64_t prefetched; /* directories read ahead (counters) */
	struct union_file *files;       /* open files (open.c), released at destroy */
	bool readonly;                  /* no upper: the top lower stands in for
					 * it (read-only hostfs), every change is
					 * -EROFS, no work or index directory */
	unsigned flags;                 /* UNION_NO_FSYNC, UNION_STATIC_NLINK,
					 * UNION_SQUASH_* (union.h) */
	struct union_idmap uidmap[UNION_MAX_IDMAPS], gidmap[UNION_MAX_IDMAPS];
	unsigned nuidmap, ngidmap;      /* 0: ids are shown as they are */
	uint32_t squash_uid, squash_gid;
	/* xattr_free.c: a read-only union's layer directories on the host
	 * (NULL-ended), and whether they hold no xattr the union shows (0: not
	 * looked yet, 1: none, -1: some, or not known), looked at once. */
	char *layer_paths[UNION_MAX_LOWERS + 1];
	pthread_mutex_t xattr_scan_lock;
	atomic_int xattr_free;
};

static inline struct union_fs *union_of(struct vfs *fs)
{
	return (struct union_fs *)fs;
}

static inline dev_t union_statx_dev(const struct statx *x)
{
	return makedev(x->stx_dev_major, x->stx_dev_minor);
}

static inline struct vfs *layer_fs(struct union_fs *u, unsigned layer)
{
	return layer ? u->lowers[layer] : u->upper;
}

/* node.c */
uint64_t union_key(unsigned layer, uint64_t ino);
struct union_node *union_node_get(struct union_fs *u, uint64_t id);
uint64_t union_node_id(struct union_fs *u, struct union_node *n);
struct union_node *union_node_find_locked(struct union_fs *u, uint64_t key);
int union_node_new_locked(struct union_fs *u, uint64_t key, mode_t type, unsigned nlower,
			  struct union_node **ret);
void union_node_set_parent_locked(struct union_node *n, struct union_node *parent,
				  const char *name);
void union_node_unref_locked(struct union_fs *u, struct union_node *n, uint64_t count);
void union_nodes_free(struct union_fs *u);
/* Gives a node with lower data only its upper (a copy-up, a hard link's
 * name linked up): its lower reference is dropped, open files follow. */
void union_node_set_upper_locked(struct union_fs *u, struct union_node *n, uint64_t upper);
bool union_is_whiteout(const struct statx *x);
/* Remembers a lower inode's ctime the first time, compares it after:
 * -ESTALE (and the union stale) when the lower changed under the union. */
int union_seen_check_locked(struct union_fs *u, unsigned layer, const struct statx *x);
void union_seen_free(struct union_fs *u);
/* Marks the union stale when a lower's ctime moved; returns -ESTALE then. */
int union_check_lower_locked(struct union_fs *u, struct union_lower *l, const struct statx *x);
/* Attributes of a node as the union shows them (key, st_dev, merged nlink). */
int union_node_statx_locked(struct union_fs *u, struct union_node *n, unsigned flags,
			    unsigned mask, struct statx *ret);
void union_fix_attr(struct union_fs *u, struct union_node *n, struct statx *x);

/* idmap.c: owners as shown (on-disk ids through the maps, or squashed), and
 * a caller's ids as written. */
void union_idmap_show(const struct union_fs *u, struct statx *x);
/* ctx with its uid and gid mapped back to on-disk ids: ctx itself when
 * the union maps nothing, else buf filled. */
const struct vfs_ctx *union_idmap_ctx(const struct union_fs *u, const struct vfs_ctx *ctx,
				      struct vfs_ctx *buf);
/* A setattr's uid and gid mapped back the same way, into buf (or a itself). */
const struct vfs_setattr *union_idmap_setattr(const struct union_fs *u,
					      const struct vfs_setattr *a,
					      struct vfs_setattr *buf);

/* lookup.c */
int union_lookup_locked(struct union_fs *u, struct union_node *dir, const char *name,
			struct union_node **ret);
/* The same, and the node's attributes when the lookup read them (else
 * attr->stx_mask is 0): saves a statx for the reply. */
int union_lookup_attr_locked(struct union_fs *u, struct union_node *dir, const char *name,
			     struct union_node **ret, struct statx *attr);
/* What a lookup learned of the layers, so a removal or a rename asks
 * neither again: whether the upper has the name (its inode; a whiteout if
 * the lookup said -ENOENT), whether a lower does
 * (1, 0, or -1: not known, ask union_name_in_lowers_locked). */
struct union_found {
	bool upper;
	uint64_t upper_ino;             /* the upper's id of it (compare only) */
	int in_lower;
};
int union_lookup_found_locked(struct union_fs *u, struct union_node *dir, const char *name,
			      struct union_node **ret, struct union_found *found);
/* Whether name exists (not whited out) in dir's lowers: a whiteout is needed. */
int union_name_in_lowers_locked(struct union_fs *u, struct union_node *dir,
				const char *name);
/* The upper entry of name in dir: 1 and its attributes, 0 none, <0 error. */
int union_upper_entry_locked(struct union_fs *u, struct union_node *dir, const char *name,
			     struct vfs_entry *ret);
/* xattr_free.c: whether u is read-only and its layers hold no xattr it
 * shows, looked at on the first call (then getxattr and listxattr answer
 * -ENOSYS: FUSE stops asking); keeping and freeing the layers' paths. */
bool union_xattr_free(struct union_fs *u);
int union_keep_layer_paths(struct union_fs *u, char (*paths)[PATH_MAX], unsigned n);
void union_free_layer_paths(struct union_fs *u);

int union_getxattr_layer(struct union_fs *u, unsigned layer, uint64_t ino,
			 const char *suffix, char *buf, size_t size);
/* Whether a layer's directory is opaque: its xattr, or (UNION_WH_FILES, a
 * read-only layer) a ".wh..wh..opq" in it. */
bool union_layer_dir_opaque(struct union_fs *u, unsigned layer, uint64_t ino);
/* UNION_WH_FILES: whether name in a read-only layer's directory is whited
 * out by a ".wh.name" beside it (1, 0, or -errno). */
int union_wh_file_locked(struct union_fs *u, unsigned layer, uint64_t dir, const char *name);
#define UNION_WH_PREFIX ".wh."
#define UNION_WH_OPAQUE ".wh..wh..opq"
static inline bool union_is_wh_name(const struct union_fs *u, const char *name)
{
	return (u->flags & UNION_WH_FILES) && !strncmp(name, UNION_WH_PREFIX, 4);
}
bool union_is_own_xattr(struct union_fs *u, const char *name);

/* overlayfs's origin: struct ovl_fb, a 21-byte header then the handle. */
#define UNION_FB_HEADER 21
/* pony's own origin (pony.origin): le32 layer, le64 lower st_ino, le32 lower
 * link count at copy-up. */
#define UNION_PONY_ORIGIN_SIZE 16
struct union_origin { unsigned layer; uint64_t st_ino; uint32_t links; };
/* The index entry's name for a key: 16 hex digits. */
void union_index_name(uint64_t key, char buf[static 32]);
int union_linked_get(struct union_fs *u, uint64_t upper);
int union_linked_set(struct union_fs *u, uint64_t upper, int count);

/* copy_up.c */
int union_copy_up_locked(struct union_fs *u, struct union_node *n);
/*
 * The same for a caller that holds nothing across it but n (open, setattr,
 * setxattr): a regular file's data is copied with u->lock dropped, so the
 * rest of the union goes on meanwhile (n->copying marks it).
 */
int union_copy_up_data_unlocked(struct union_fs *u, struct union_node *n);
/* Waits while n's data is copied up (dropping u->lock): true if it did, and
 * what the caller looked up or checked before may have changed. */
bool union_copy_wait_locked(struct union_fs *u, struct union_node *n);
/* Gives name in dir, a lower-only name of n (a hard link copied up through
 * another name), its link to n's upper inode, as overlayfs's ovl_link_up():
 * before the name is renamed or removed. */
int union_link_up_locked(struct union_fs *u, struct union_node *dir, const char *name,
			 struct union_node *n);
/* Forgets the shared whiteout and removes its work/work name. */
void union_whiteout_drop_locked(struct union_fs *u);
/* A name in the work directory for staging; buf of 32. */
const char *union_tmp_name(struct union_fs *u, char buf[static 32]);
int union_set_xattr(struct union_fs *u, uint64_t upper_ino, const char *suffix,
		    const void *value, size_t size);
/* overlayfs's impure xattr on a directory that holds entries with an origin
 * (their d_ino is the origin's), once per node; best effort. */
void union_mark_impure_locked(struct union_fs *u, struct union_node *dir);
int union_make_whiteout_locked(struct union_fs *u, struct union_node *dir, const char *name);
/* Path of a node from the root, "/a/b"; -ENAMETOOLONG past PATH_MAX. */
int union_node_path(struct union_node *n, char *buf, size_t size);

/* dir.c */
struct union_dirent {
	uint64_t cookie;
	uint64_t ino;
	unsigned type;
	char *name;
};
struct union_dirlist {
	struct union_dirent *e;
	size_t n, cap;
};
void union_dirlist_done(struct union_dirlist *l);
int union_dir_merge_locked(struct union_fs *u, struct union_node *dir,
			   struct union_dirlist *ret);
/* Removes every entry of an upper directory (whiteouts only, by then). */
int union_upper_dir_clear(struct union_fs *u, uint64_t dir);
int union_list_layer_dir(struct union_fs *u, unsigned layer, uint64_t ino,
			 struct union_dirlist *ret);

/* prefetch.c: reads l's lower subdirectories of dir ahead, on a thread. */
void union_prefetch_dirs_locked(struct union_fs *u, struct union_node *dir,
				const struct union_dirlist *l);
/* A lookup of name in the lower directory dir done ahead: true and *ret
 * (its reference is the caller's), or false. */
bool union_prefetch_take_locked(struct union_fs *u, const struct union_lower *dir,
				const char *name, struct vfs_entry *ret);
/* Joins the thread; before the nodes are freed. */
void union_prefetch_stop(struct union_fs *u);
int union_counters(struct vfs *fs, char *buf, size_t size);

extern const struct vfs_ops union_ops;
void union_destroy(struct vfs *fs);

/* names.c: the namespace hooks. */
int union_entry_locked(struct union_fs *u, struct union_node *dir, const char *name,
		       struct vfs_entry *ret);
int union_create_locked(struct union_fs *u, const struct vfs_ctx *ctx, struct union_node *dir,
			const char *name, mode_t mode, int flags, struct vfs_entry *ret,
			uint64_t *ret_fh);
int union_mknod(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		const char *name, mode_t mode, dev_t rdev, struct vfs_entry *ret);
int union_mkdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		const char *name, mode_t mode, struct vfs_entry *ret);
int union_symlink(struct vfs *fs, const struct vfs_ctx *ctx, const char *target,
		  uint64_t parent, const char *name, struct vfs_entry *ret);
int union_link(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
	       uint64_t newparent, const char *newname, struct vfs_entry *ret);
int union_unlink(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		 const char *name);
int union_rmdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		const char *name);
int union_rename(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		 const char *name, uint64_t newparent, const char *newname, unsigned flags);

/* open.c: open files, following their node to the upper after a copy-up. */
int union_open(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, int flags,
	       uint64_t *ret_fh);
int union_create(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		 const char *name, mode_t mode, int flags, struct vfs_entry *ret,
		 uint64_t *ret_fh);
/* Attributes through an open file (right also once it is unlinked). */
int union_file_statx(struct union_fs *u, const struct vfs_ctx *ctx, uint64_t fh,
		     unsigned flags, unsigned mask, struct statx *ret);
/* fh's upper handle, for hooks that take one; VFS_NO_FH when it has none. */
uint64_t union_file_upper_fh_locked(struct union_fs *u, uint64_t fh);
void union_files_release_all(struct union_fs *u);
ssize_t union_read(struct vfs *fs, uint64_t ino, uint64_t fh, void *buf, size_t size,
		   off_t offset);
ssize_t union_write(struct vfs *fs, uint64_t ino, uint64_t fh, const void *buf, size_t size,
		    off_t offset);
int union_data_fd(struct vfs *fs, uint64_t ino, uint64_t fh);
bool union_data_fd_stable(struct vfs *fs, uint64_t ino, uint64_t fh);
int union_flush(struct vfs *fs, uint64_t ino, uint64_t fh);
int union_fsync(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync);
int union_barrier(struct vfs *fs, uint64_t ino, uint64_t fh);
int union_fallocate(struct vfs *fs, uint64_t ino, uint64_t fh, int mode, off_t offset,
		    off_t length);
int union_release(struct vfs *fs, uint64_t ino, uint64_t fh);

/* Frees a node's dir_cache (NULL does nothing). */
void union_dir_free(struct union_dir *d);
int union_opendir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, uint64_t *ret_fh);
int union_readdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		  uint64_t cookie, vfs_filldir_t fill, void *data);
int union_releasedir(struct vfs *fs, uint64_t ino, uint64_t fh);

#endif
