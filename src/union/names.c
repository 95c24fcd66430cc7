/*
 * names.c - the union's namespace changes: creating over whiteouts (opaque
 * for directories), removing with whiteouts where a lower still has the name,
 * and renames, which copy up first, leave a whiteout behind when a lower
 * holds the old name, and give a merged directory a redirect to its lowers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "internal.h"
#include "pony/util.h"

#define LOCKED(u, expr) ({ pthread_mutex_lock(&(u)->lock); int _r = (expr); \
			   pthread_mutex_unlock(&(u)->lock); _r; })

/* Attributes and id of a node for a reply; drops the node's ref on error. */
static int entry_of_locked(struct union_fs *u, struct union_node *n, struct vfs_entry *ret)
{
	int r = union_node_statx_locked(u, n, 0, STATX_BASIC_STATS, &ret->attr);

	if (r < 0) {
		union_node_unref_locked(u, n, 1);
		return r;
	}
	ret->ino = union_node_id(u, n);
	ret->generation = 0;
	return 0;
}

int union_entry_locked(struct union_fs *u, struct union_node *dir, const char *name,
		       struct vfs_entry *ret)
{
	struct union_node *n;
	int r = union_lookup_attr_locked(u, dir, name, &n, &ret->attr);

	if (r < 0)
		return r;
	if (!ret->attr.stx_mask)
		return entry_of_locked(u, n, ret);
	union_fix_attr(u, n, &ret->attr);
	ret->ino = union_node_id(u, n);
	ret->generation = 0;
	return 0;
}

/*
 * Makes name free for a new entry in dir: -EEXIST if the union has it; the
 * directory copied up; a whiteout there removed. 1 if there was one.
 * A directory already in the upper is asked directly: its entry decides
 * (a whiteout frees the name, anything else holds it), and only a name the
 * upper lacks is looked for in the lowers. A directory without lowers is
 * not asked before a create (name_check_by_create): this runs when the
 * create found the name taken.
 */
static int prepare_new_name_locked(struct union_fs *u, struct union_node *dir, const char *name)
{
	struct union_node *n;
	struct vfs_entry e;
	int r;

	if (u->stale)
		return -ESTALE;
	if (!S_ISDIR(dir->type))
		return -ENOTDIR;
	if (!dir->upper) {
		r = union_lookup_locked(u, dir, name, &n);
		if (r == 0) {
			union_node_unref_locked(u, n, 1);
			return -EEXIST;
		}
		if (r != -ENOENT)
			return r;
		/* A fresh upper directory: no entries, no whiteouts. */
		return union_copy_up_locked(u, dir);
	}
	r = union_upper_entry_locked(u, dir, name, &e);
	if (r < 0)
		return r;
	if (r == 0) {
		if (dir->opaque || !dir->nlower)
			return 0;
		r = union_name_in_lowers_locked(u, dir, name);
		return r < 0 ? r : r ? -EEXIST : 0;
	}
	bool wh = union_is_whiteout(&e.attr);
	VFS_FORGET(u->upper, e.ino, 1);
	if (!wh)
		return -EEXIST;
	r = VFS_CALL(u->upper, unlink, &u->root_ctx, dir->upper, name);
	return r < 0 ? r : 1;
}

/*
 * The node of an entry just made in dir's upper (its reference is taken
 * over): no lookup again, the new entry's own attributes. A directory made
 * here has no lowers (the name was free), so it is opaque to them.
 */
static int new_entry_locked(struct union_fs *u, struct union_node *dir, const char *name,
			    struct vfs_entry *e, struct vfs_entry *ret)
{
	struct union_node *n = union_node_find_locked(u, union_key(0, e->attr.stx_ino));
	int r;

	if (n) {
		/* The inode number is a live node's (a link, or a reused number
		 * of an open unlinked file): the full lookup sorts it out. */
		VFS_FORGET(u->upper, e->ino, 1);
		return union_entry_locked(u, dir, name, ret);
	}
	r = union_node_new_locked(u, union_key(0, e->attr.stx_ino), e->attr.stx_mode & S_IFMT,
				  0, &n);
	if (r < 0) {
		VFS_FORGET(u->upper, e->ino, 1);
		return r;
	}
	n->upper = e->ino;
	n->opaque = S_ISDIR(e->attr.stx_mode);
	n->no_caps = true;              /* nothing sets it on a new file */
	n->upper_empty = S_ISDIR(e->attr.stx_mode);
	union_node_set_parent_locked(n, dir, name);
	ret->attr = e->attr;
	union_fix_attr(u, n, &ret->attr);
	ret->ino = union_node_id(u, n);
	ret->generation = 0;
	return 0;
}

/*
 * Whether a new name in dir may be made in the upper without asking it
 * first: the directory is there and has no lowers to look in (opaque, or
 * none), so the upper's own create is the whole check. Only when it says
 * -EEXIST is the entry looked at (a whiteout is replaced, prepare_new_name),
 * and the create tried once more: an untar into a directory it made costs
 * no lookup per file.
 */
static bool name_check_by_create(struct union_fs *u, struct union_node *dir)
{
	return !u->stale && S_ISDIR(dir->type) && dir->upper && (dir->opaque || !dir->nlower);
}

enum make_kind { MAKE_NOD, MAKE_DIR, MAKE_SYMLINK, MAKE_LINK };

struct make_args {
	enum make_kind kind;
	mode_t mode;
	dev_t rdev;
	const char *target;
	struct union_node *src;         /* MAKE_LINK */
};

static int make_upper_locked(struct union_fs *u, const struct vfs_ctx *ctx,
			     struct union_node *dir, const char *name,
			     const struct make_args *a, struct vfs_entry *e)
{
	switch (a->kind) {
	case MAKE_DIR:
		return VFS_CALL(u->upper, mkdir, ctx, dir->upper, name, a->mode, e);
	case MAKE_SYMLINK:
		return VFS_CALL(u->upper, symlink, ctx, a->target, dir->upper, name, e);
	case MAKE_LINK:
		return VFS_CALL(u->upper, link, ctx, a->src->upper, dir->upper, name, e);
	default:
		return VFS_CALL(u->upper, mknod, ctx, dir->upper, name, a->mode, a->rdev, e);
	}
}

static int make_locked(struct union_fs *u, const struct vfs_ctx *ctx, struct union_node *dir,
		       const char *name, const struct make_args *a, struct vfs_entry *ret)
{
	struct vfs_entry e;
	int wh, r = vfs_check_name(name);

	if (r < 0)
		return r;
	if (a->kind == MAKE_LINK) {
		if (S_ISDIR(a->src->type))
			return -EPERM;
		union_copy_wait_locked(u, a->src);     /* before anything is checked */
		r = union_copy_up_locked(u, a->src);
		if (r < 0)
			return r;
	}
	bool by_create = name_check_by_create(u, dir);

	wh = by_create ? 0 : prepare_new_name_locked(u, dir, name);
	if (wh < 0)
		return wh;
	dir->upper_empty = false;
	r = make_upper_locked(u, ctx, dir, name, a, &e);
	if (r == -EEXIST && by_create) {
		wh = prepare_new_name_locked(u, dir, name);
		if (wh < 0)
			return wh;
		r = make_upper_locked(u, ctx, dir, name, a, &e);
	}
	if (r < 0)
		return r;
	/* A directory made where a lower one was deleted must not show it. */
	if (a->kind == MAKE_DIR && wh)
		r = union_set_xattr(u, e.ino, "opaque", "y", 1);
	if (r < 0 || a->kind == MAKE_LINK) {
		VFS_FORGET(u->upper, e.ino, 1);
		return r < 0 ? r : union_entry_locked(u, dir, name, ret);
	}
	return new_entry_locked(u, dir, name, &e, ret);
}

static int union_make(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
	       const struct make_args *a, struct vfs_entry *ret)
{
	struct union_fs *u = union_of(fs);
	struct vfs_ctx mapped;

	ctx = union_idmap_ctx(u, ctx, &mapped);
	return LOCKED(u, make_locked(u, ctx, union_node_get(u, parent), name, a, ret));
}

int union_mknod(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		       const char *name, mode_t mode, dev_t rdev, struct vfs_entry *ret)
{
	struct make_args a = { .kind = MAKE_NOD, .mode = mode, .rdev = rdev };

	return union_make(fs, ctx, parent, name, &a, ret);
}

int union_mkdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		       const char *name, mode_t mode, struct vfs_entry *ret)
{
	struct make_args a = { .kind = MAKE_DIR, .mode = mode };

	return union_make(fs, ctx, parent, name, &a, ret);
}

int union_symlink(struct vfs *fs, const struct vfs_ctx *ctx, const char *target,
			 uint64_t parent, const char *name, struct vfs_entry *ret)
{
	struct make_args a = { .kind = MAKE_SYMLINK, .target = target };

	return union_make(fs, ctx, parent, name, &a, ret);
}

int union_link(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
		      uint64_t newparent, const char *newname, struct vfs_entry *ret)
{
	struct make_args a = { .kind = MAKE_LINK, .src = union_node_get(union_of(fs), ino) };
	struct vfs_entry e;
	int r = union_make(fs, ctx, newparent, newname, &a, ret ? ret : &e);

	if (r == 0 && !ret)
		VFS_FORGET(fs, e.ino, 1);
	return r;
}

int union_create_locked(struct union_fs *u, const struct vfs_ctx *ctx, struct union_node *dir,
			const char *name, mode_t mode, int flags, struct vfs_entry *ret,
			uint64_t *ret_fh)
{
	struct vfs_entry e;
	int r = vfs_check_name(name);

	if (r < 0)
		return r;
	bool by_create = name_check_by_create(u, dir);

	/* The union's create always makes a new name (the kernel sends one
	 * only after a failed lookup): O_EXCL asks the upper to check. */
	r = by_create ? 0 : prepare_new_name_locked(u, dir, name);
	if (r < 0)
		return r;
	dir->upper_empty = false;
	r = VFS_CALL(u->upper, create, ctx, dir->upper, name, mode, flags | O_EXCL, &e, ret_fh);
	if (r == -EEXIST && by_create) {
		r = prepare_new_name_locked(u, dir, name);
		if (r < 0)
			return r;
		r = VFS_CALL(u->upper, create, ctx, dir->upper, name, mode, flags | O_EXCL, &e,
			     ret_fh);
	}
	if (r < 0)
		return r;
	r = new_entry_locked(u, dir, name, &e, ret);
	if (r < 0)
		VFS_CALL(u->upper, release, e.ino, *ret_fh);
	return r;
}

/* Detaches a removed node: it can no longer be copied up or be a parent path. */
static void detach_locked(struct union_fs *u, struct union_node *n)
{
	struct union_node *p = n->parent;

	if (!p)
		return;
	n->parent = NULL;
	union_node_unref_locked(u, p, 1);
}

/*
 * Moves the upper entry away (leaving a whiteout if asked) and deletes it;
 * a directory's whiteouts first, through upper (its upper inode, which the
 * rename keeps: no lookup of it in the work directory), or when that is not
 * known (0), through a lookup of where it went.
 */
static int remove_upper_locked(struct union_fs *u, struct union_node *dir, const char *name,
			       bool isdir, bool whiteout, uint64_t upper)
{
	char tmp[32];
	int r;

	if (!isdir && !whiteout)
		return VFS_CALL(u->upper, unlink, &u->root_ctx, dir->upper, name);
	dir->upper_empty = false;     /* conservatively: a whiteout may stay */
	r = VFS_CALL(u->upper, rename, &u->root_ctx, dir->upper, name, u->work,
		     union_tmp_name(u, tmp), whiteout ? RENAME_WHITEOUT : 0);
	if (r < 0)
		return r;
	if (!isdir)
		return VFS_CALL(u->upper, unlink, &u->root_ctx, u->work, tmp);
	struct vfs_entry e = { .ino = upper };
	if (!upper)
		r = VFS_CALL(u->upper, lookup, &u->root_ctx, u->work, tmp, &e);
	if (r == 0)
		r = union_upper_dir_clear(u, e.ino);
	if (!upper && r == 0)
		VFS_FORGET(u->upper, e.ino, 1);
	return r < 0 ? r : VFS_CALL(u->upper, rmdir, &u->root_ctx, u->work, tmp);
}

static int union_dir_is_empty_locked(struct union_fs *u, struct union_node *n)
{
	struct union_dirlist l;
	int r = union_dir_merge_locked(u, n, &l);

	if (r < 0)
		return r;
	r = l.n == 0;
	union_dirlist_done(&l);
	return r;
}

/*
 * The lookup says which layers hold the name (one lookup in each): the
 * lowers are asked again only when it did not need them (an upper file).
 */
static int remove_locked(struct union_fs *u, struct union_node *dir, const char *name,
			 bool isdir)
{
	struct union_found found;
	struct union_node *n;
	int r;

	/* A file whose data is being copied up keeps its name until then. */
	while ((r = union_lookup_found_locked(u, dir, name, &n, &found)) == 0 &&
	       union_copy_wait_locked(u, n))
		union_node_unref_locked(u, n, 1);
	if (r < 0)
		return r;
	if (isdir != S_ISDIR(n->type))
		r = isdir ? -ENOTDIR : -EISDIR;
	if (r == 0 && isdir && n == u->root)
		r = -EBUSY;
	if (r == 0 && isdir)
		r = union_dir_is_empty_locked(u, n) > 0 ? 0 : -ENOTEMPTY;
	/* A lower-only name of a copied-up hard link: linked up, then removed
	 * as an upper name, so the inode's link count drops. */
	if (r == 0 && !found.upper && !isdir && n->upper) {
		r = union_link_up_locked(u, dir, name, n);
		found.upper = r == 0;
	}
	if (r == 0 && found.upper && found.in_lower < 0) {
		found.in_lower = union_name_in_lowers_locked(u, dir, name);
		r = MIN(found.in_lower, 0);
	}
	if (r == 0 && found.upper)
		r = remove_upper_locked(u, dir, name, isdir, found.in_lower > 0,
					n->upper == found.upper_ino ? n->upper : 0);
	else if (r == 0)
		r = union_make_whiteout_locked(u, dir, name);
	if (r == 0 && (isdir || !n->upper))
		detach_locked(u, n);
	union_node_unref_locked(u, n, 1);
	return r;
}

int union_unlink(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name)
{
	struct union_fs *u = union_of(fs);

	return LOCKED(u, remove_locked(u, union_node_get(u, parent), name, false));
}

int union_rmdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		       const char *name)
{
	struct union_fs *u = union_of(fs);

	return LOCKED(u, remove_locked(u, union_node_get(u, parent), name, true));
}

/*
 * Where a merged directory's lowers are: its absolute redirect, or its
 * parent's path and its name there (a relative redirect's, which the
 * kernel's overlayfs writes for a rename within one directory).
 */
static int lower_path_locked(struct union_fs *u, struct union_node *n, char *buf, size_t size)
{
	const char *name = n->name;
	char rel[NAME_MAX + 1];
	int len;

	if (!n->parent) {
		buf[0] = '\0';
		return 0;
	}
	if (n->upper) {
		len = union_getxattr_layer(u, 0, n->upper, "redirect", buf, size - 1);
		if (len > 0 && buf[0] == '/') {
			buf[len] = '\0';
			return 0;
		}
		if (len > 0 && len <= NAME_MAX) {
			memcpy(rel, buf, (size_t)len);
			rel[len] = '\0';
			name = rel;
		}
	}
	int r = lower_path_locked(u, n->parent, buf, size);
	if (r < 0)
		return r;
	len = (int)strlen(buf);
	if ((size_t)len + strlen(name) + 2 > size)
		return -ENAMETOOLONG;
	snprintf(buf + len, size - (size_t)len, "/%s", name);
	return 0;
}

struct rename_state {
	struct union_node *dir, *newdir, *n, *t;
	const char *name, *newname;
	unsigned flags;
	struct union_found nf, tf;      /* what the lookups of n and t found */
};

static int rename_checks_locked(struct union_fs *u, struct rename_state *s)
{
	if (s->flags & RENAME_WHITEOUT)
		return -EINVAL;
	if (!s->t)
		return s->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	if (s->flags & RENAME_NOREPLACE)
		return -EEXIST;
	/* An exchange gives each merged directory its redirect, as overlayfs
	 * does with redirect_dir=on. */
	if (s->flags & RENAME_EXCHANGE)
		return 0;
	if (S_ISDIR(s->n->type) && !S_ISDIR(s->t->type))
		return -ENOTDIR;
	if (!S_ISDIR(s->n->type) && S_ISDIR(s->t->type))
		return -EISDIR;
	if (S_ISDIR(s->t->type)) {
		int r = union_dir_is_empty_locked(u, s->t);

		return r < 0 ? r : r ? 0 : -ENOTEMPTY;
	}
	return 0;
}

/* Before a directory moves: a redirect to its lowers, or opaque if it has none. */
static int rename_mark_dir_locked(struct union_fs *u, struct union_node *n, bool over_lower)
{
	char path[PATH_MAX];
	int r;

	if (!S_ISDIR(n->type))
		return 0;
	if (n->nlower && !n->opaque) {
		r = lower_path_locked(u, n, path, sizeof(path));
		return r < 0 ? r : union_set_xattr(u, n->upper, "redirect", path, strlen(path));
	}
	/* A directory of the upper's own is opaque in memory but not on disk
	 * (no lower had its name): moved over a lower name, it must say so. */
	if (over_lower) {
		n->opaque = true;
		return union_set_xattr(u, n->upper, "opaque", "y", 1);
	}
	return 0;
}

/* A lower-only name of a copied-up hard link (its node has an upper, the
 * upper lacks the name) gets its upper link before it is renamed or
 * replaced. */
static int rename_link_up_locked(struct union_fs *u, struct union_node *dir, const char *name,
				 struct union_node *n, const struct union_found *found)
{
	if (!n || S_ISDIR(n->type) || !n->upper || found->upper)
		return 0;
	return union_link_up_locked(u, dir, name, n);
}

static int rename_do_locked(struct union_fs *u, struct rename_state *s)
{
	bool exchange = s->flags & RENAME_EXCHANGE;
	int old_in_lower, new_in_lower, r;

	/* Before the copy-ups, which give the others an upper. */
	r = rename_link_up_locked(u, s->dir, s->name, s->n, &s->nf);
	if (r == 0)
		r = rename_link_up_locked(u, s->newdir, s->newname, s->t, &s->tf);
	if (r == 0)
		r = union_copy_up_locked(u, s->n);
	if (r == 0 && s->t && exchange)
		r = union_copy_up_locked(u, s->t);
	if (r == 0)
		r = union_copy_up_locked(u, s->newdir);
	if (r < 0)
		return r;
	old_in_lower = union_name_in_lowers_locked(u, s->dir, s->name);
	new_in_lower = union_name_in_lowers_locked(u, s->newdir, s->newname);
	if (old_in_lower < 0 || new_in_lower < 0)
		return old_in_lower < 0 ? old_in_lower : new_in_lower;
	r = rename_mark_dir_locked(u, s->n, new_in_lower);
	if (r == 0 && s->t && exchange)
		r = rename_mark_dir_locked(u, s->t, old_in_lower);
	if (r < 0)
		return r;
	/* A directory replaced keeps only whiteouts in its upper: clear them. */
	if (s->t && !exchange && S_ISDIR(s->t->type) && s->t->upper) {
		r = union_upper_dir_clear(u, s->t->upper);
		if (r < 0)
			return r;
	}
	unsigned flags = exchange ? RENAME_EXCHANGE : old_in_lower ? RENAME_WHITEOUT : 0;
	/* A directory cannot replace the whiteout at the new name (a device
	 * node: ENOTDIR); as overlayfs, exchange with it, and keep it at the
	 * old name only where a lower has that name. (No target, yet the
	 * upper has the name: the lookup met a whiteout.) */
	bool onto_whiteout = !s->t && s->tf.upper && S_ISDIR(s->n->type);
	if (onto_whiteout)
		flags = RENAME_EXCHANGE;
	s->dir->upper_empty = s->newdir->upper_empty = false;
	r = VFS_CALL(u->upper, rename, &u->root_ctx, s->dir->upper, s->name, s->newdir->upper,
		     s->newname, flags);
	if (r < 0)
		return r;
	if (onto_whiteout && !old_in_lower) {
		char path[PATH_MAX];
		int c = VFS_CALL(u->upper, unlink, &u->root_ctx, s->dir->upper, s->name);

		/* Harmless where no lower has the name: said, not failed. */
		if (c < 0 && union_node_path(s->dir, path, sizeof(path)) == 0)
			util_log(LOG_WARNING, "union: cannot remove the whiteout a rename left "
				 "at %s%s%s: %s", path, path[1] ? "/" : "", s->name, strerror(-c));
	}
	/* Entries from a lower (an origin) make their new directory impure. */
	if (s->n->key >> UNION_LAYER_SHIFT)
		union_mark_impure_locked(u, s->newdir);
	if (s->t && exchange && s->t->key >> UNION_LAYER_SHIFT)
		union_mark_impure_locked(u, s->dir);
	struct union_node *oldp = s->n->parent;
	union_node_set_parent_locked(s->n, s->newdir, s->newname);
	union_node_unref_locked(u, oldp, 1);
	if (s->t && exchange) {
		oldp = s->t->parent;
		union_node_set_parent_locked(s->t, s->dir, s->name);
		union_node_unref_locked(u, oldp, 1);
	} else if (s->t && (S_ISDIR(s->t->type) || !s->t->upper)) {
		detach_locked(u, s->t);
	}
	return 0;
}

static int rename_locked(struct union_fs *u, struct rename_state *s)
{
	int r;

retry:
	r = union_lookup_found_locked(u, s->dir, s->name, &s->n, &s->nf);
	if (r < 0)
		return r;
	r = union_lookup_found_locked(u, s->newdir, s->newname, &s->t, &s->tf);
	if (r == -ENOENT) {
		s->t = NULL;
		r = 0;
	}
	/* Files whose data is being copied up keep their names until then:
	 * after the wait, everything is looked up again. */
	if (r == 0 && (union_copy_wait_locked(u, s->n) || union_copy_wait_locked(u, s->t))) {
		if (s->t)
			union_node_unref_locked(u, s->t, 1);
		union_node_unref_locked(u, s->n, 1);
		goto retry;
	}
	if (r == 0 && s->n == s->t)
		goto out;               /* two names of one file: nothing to do */
	if (r == 0)
		r = rename_checks_locked(u, s);
	if (r == 0)
		r = rename_do_locked(u, s);
out:
	if (s->t)
		union_node_unref_locked(u, s->t, 1);
	union_node_unref_locked(u, s->n, 1);
	return r;
}

int union_rename(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			const char *name, uint64_t newparent, const char *newname,
			unsigned flags)
{
	struct union_fs *u = union_of(fs);
	struct rename_state s = {
		.dir = union_node_get(u, parent), .newdir = union_node_get(u, newparent),
		.name = name, .newname = newname, .flags = flags,
	};
	int r = vfs_check_name(newname);

	return r < 0 ? r : LOCKED(u, rename_locked(u, &s));
}
