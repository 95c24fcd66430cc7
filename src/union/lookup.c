/*
 * lookup.c - finding a name in the union, as overlayfs does: the upper entry
 * first (a whiteout hides the name, an opaque directory hides the lowers, a
 * redirect says where a renamed directory's lowers are), then each lower of
 * the parent in order, merging directories and stopping at the first
 * non-directory, whiteout or opaque directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "pony/util.h"

bool union_is_own_xattr(struct union_fs *u, const char *name)
{
	return !strncmp(name, u->prefix, strlen(u->prefix));
}

int union_getxattr_layer(struct union_fs *u, unsigned layer, uint64_t ino,
			 const char *suffix, char *buf, size_t size)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", u->prefix, suffix);
	return VFS_CALL(layer_fs(u, layer), getxattr, &u->root_ctx, ino, name, buf, size);
}

static bool layer_is_opaque(struct union_fs *u, unsigned layer, uint64_t ino)
{
	char v[2];

	return union_getxattr_layer(u, layer, ino, "opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

/* A stack of lower directories being built for a directory node. */
struct stack {
	struct union_lower l[UNION_MAX_LOWERS];
	struct statx first;             /* attributes of a non-directory found */
	unsigned n;
	bool file;                      /* l[0] is a non-directory */
};

static void stack_drop(struct union_fs *u, struct stack *s)
{
	for (unsigned i = 0; i < s->n; i++)
		VFS_FORGET(u->lowers[s->l[i].layer], s->l[i].ino, 1);
	s->n = 0;
}

/*
 * Looks name up in the given lower directories; dirs_only when an upper
 * directory already stands at the name (a lower non-directory then ends it).
 */
static int stack_lookup(struct union_fs *u, const struct union_lower *dirs, unsigned ndirs,
			const char *name, bool dirs_only, struct stack *s)
{
	for (unsigned i = 0; i < ndirs; i++) {
		struct vfs *fs = u->lowers[dirs[i].layer];
		struct vfs_entry e;
		int r = 0;

		/* Done ahead by prefetch.c's thread, during a tree walk. */
		if (!union_prefetch_take_locked(u, &dirs[i], name, &e))
			r = VFS_CALL(fs, lookup, &u->root_ctx, dirs[i].ino, name, &e);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		r = union_seen_check_locked(u, dirs[i].layer, &e.attr);
		if (r < 0) {
			VFS_FORGET(fs, e.ino, 1);
			return r;
		}
		bool dir = S_ISDIR(e.attr.stx_mode);
		if (union_is_whiteout(&e.attr) || (!dir && (dirs_only || s->n))) {
			VFS_FORGET(fs, e.ino, 1);
			break;
		}
		s->l[s->n++] = (struct union_lower){ .layer = dirs[i].layer, .ino = e.ino,
						     .st_ino = e.attr.stx_ino,
						     .dev = union_statx_dev(&e.attr),
						     .ctime = e.attr.stx_ctime };
		if (!dir) {
			s->file = true;
			s->first = e.attr;
			break;
		}
		/* An opaque directory hides the lowers below it: the last
		 * one has none, so its xattr need not be read. */
		if (i + 1 < ndirs && layer_is_opaque(u, dirs[i].layer, e.ino))
			break;
	}
	return 0;
}

/* Walks an absolute redirect ("/a/b") from the root of every lower. */
static int stack_redirect(struct union_fs *u, const char *path, struct stack *s)
{
	for (unsigned layer = 1; layer <= u->nlowers; layer++) {
		struct union_lower cur = { .layer = layer, .ino = VFS_ROOT_INO };
		struct vfs *fs = u->lowers[layer];
		struct vfs_entry e;
		int r = vfs_walk(fs, &u->root_ctx, path, &e);

		if (r == -ENOENT || r == -ENOTDIR)
			continue;
		if (r < 0)
			return r;
		if (!S_ISDIR(e.attr.stx_mode)) {
			VFS_FORGET(fs, e.ino, 1);
			break;
		}
		cur.ino = e.ino;
		cur.st_ino = e.attr.stx_ino;
		cur.dev = union_statx_dev(&e.attr);
		cur.ctime = e.attr.stx_ctime;
		s->l[s->n++] = cur;
		if (layer_is_opaque(u, layer, e.ino))
			break;
	}
	return 0;
}

/* overlayfs's rules: absolute and clean, or one name; anything else is corrupt. */
static bool redirect_valid(const char *r)
{
	if (r[0] != '/')
		return !strchr(r, '/') && vfs_check_name(r) == 0;
	return !strstr(r, "//") && !strstr(r, "/../") && !strstr(r, "/./") &&
	       strcmp(r + strlen(r) - (strlen(r) >= 3 ? 3 : 0), "/..") != 0;
}

/* found->in_lower is set when the lowers were asked for name itself. */
static int upper_dir_stack(struct union_fs *u, struct union_node *dir, const char *name,
			   uint64_t upper, struct stack *s, struct union_found *found)
{
	char redirect[PATH_MAX];
	int n, r;

	if (dir->opaque || layer_is_opaque(u, 0, upper))
		return 0;
	n = union_getxattr_layer(u, 0, upper, "redirect", redirect, sizeof(redirect) - 1);
	if (n > 0) {
		redirect[n] = '\0';
		if (!redirect_valid(redirect))
			return -EIO;
		if (redirect[0] == '/')
			return stack_redirect(u, redirect, s);
		return stack_lookup(u, dir->lower, dir->nlower, redirect, true, s);
	}
	r = stack_lookup(u, dir->lower, dir->nlower, name, true, s);
	/* A lower non-directory ends a directory's stack unrecorded: only a
	 * stack found says the name is in a lower. */
	if (r == 0 && s->n)
		found->in_lower = 1;
	return r;
}

/* Whether the lower of dir in layer has name as the inode x names. */
static bool lower_has(struct union_fs *u, struct union_node *dir, unsigned layer,
		      const char *name, const struct statx *x)
{
	for (unsigned i = 0; i < dir->nlower; i++) {
		struct vfs_entry e;
		bool same;

		if (dir->lower[i].layer != layer ||
		    VFS_CALL(u->lowers[layer], lookup, &u->root_ctx, dir->lower[i].ino, name, &e) < 0)
			continue;
		same = e.attr.stx_ino == x->stx_ino && e.attr.stx_dev_major == x->stx_dev_major &&
		       e.attr.stx_dev_minor == x->stx_dev_minor;
		VFS_FORGET(u->lowers[layer], e.ino, 1);
		return same;
	}
	return false;
}

/*
 * overlayfs's origin (struct ovl_fb, written by the kernel) decoded in the
 * lowers. Lowers sharing a filesystem all open the handle; the layer is the
 * one whose directory has the file under this name (a copy-up in place),
 * else the first that opens it, as the kernel takes. Returns whether one
 * did; no link count (the kernel keeps no index here).
 */
static bool origin_from_fb(struct union_fs *u, struct union_node *dir, const char *name,
			   uint64_t ino, struct union_origin *ret)
{
	uint8_t fb[UNION_FB_HEADER + 128];
	int n = union_getxattr_layer(u, 0, ino, "origin", (char *)fb, sizeof(fb));
	struct vfs_entry e;

	/* Version 0, magic, the length it says, no flags but "any endian"
	 * (anything else is "origin unknown" to the kernel too). */
	if (n <= UNION_FB_HEADER || fb[0] != 0 || fb[1] != 0xfb || fb[2] != n ||
	    (fb[3] & ~2) != 0)
		return false;
	ret->layer = 0;
	for (unsigned layer = 1; layer <= u->nlowers; layer++) {
		if (VFS_CALL(u->lowers[layer], decode_fh, fb + 5, fb + UNION_FB_HEADER,
			     (size_t)n - UNION_FB_HEADER, fb[4], &e) < 0)
			continue;
		VFS_FORGET(u->lowers[layer], e.ino, 1);
		if (!ret->layer)
			*ret = (struct union_origin){ .layer = layer, .st_ino = e.attr.stx_ino };
		if (lower_has(u, dir, layer, name, &e.attr)) {
			ret->layer = layer;
			break;
		}
	}
	return ret->layer != 0;
}

/* The stable key of an upper non-directory: its origin's, if it has one. */
static uint64_t upper_file_key(struct union_fs *u, struct union_node *dir, const char *name,
			       uint64_t ino, const struct statx *x, uint32_t *ret_links)
{
	uint8_t own[UNION_PONY_ORIGIN_SIZE];
	int n = union_getxattr_layer(u, 0, ino, "pony.origin", (char *)own, sizeof(own));
	struct union_origin o = { 0 };

	if (n == UNION_PONY_ORIGIN_SIZE) {
		o.layer = util_get_le32(own);
		o.st_ino = util_get_le64(own + 4);
		o.links = util_get_le32(own + 12);
	} else if (!origin_from_fb(u, dir, name, ino, &o)) {
		o.layer = 0;
	}
	*ret_links = 0;
	if (o.layer >= 1 && o.layer <= u->nlowers) {
		*ret_links = o.links;
		return union_key(o.layer, o.st_ino);
	}
	return union_key(0, x->stx_ino);
}

int union_upper_entry_locked(struct union_fs *u, struct union_node *dir, const char *name,
			     struct vfs_entry *ret)
{
	int r;

	if (!dir->upper || dir->upper_empty)
		return 0;
	r = VFS_CALL(u->upper, lookup, &u->root_ctx, dir->upper, name, ret);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? r : 1;
}

int union_name_in_lowers_locked(struct union_fs *u, struct union_node *dir, const char *name)
{
	struct stack s = { .n = 0 };
	int r;

	if (dir->opaque)
		return 0;
	r = stack_lookup(u, dir->lower, dir->nlower, name, false, &s);
	if (r < 0)
		return r;
	r = s.n > 0;
	stack_drop(u, &s);
	return r;
}

/* A node for what was found: an existing one (checked) or a new one. */
static int node_for(struct union_fs *u, struct union_node *dir, const char *name,
		    uint64_t key, mode_t type, uint64_t upper, struct stack *s, bool opaque,
		    struct union_node **ret)
{
	struct union_node *n = union_node_find_locked(u, key);
	int r = 0;

	if (n) {
		for (unsigned i = 0; i < s->n && i < n->nlower; i++)
			if (s->l[i].ino == n->lower[i].ino)
				r = r ?: union_check_lower_locked(u, &n->lower[i],
					&(struct statx){ .stx_ctime = s->l[i].ctime });
		stack_drop(u, s);
		if (upper && !n->upper) {
			/* Another name of a hard link, already linked up in the
			 * upper: the node moves to the upper. */
			union_node_set_upper_locked(u, n, upper);
		} else if (upper) {
			VFS_FORGET(u->upper, upper, 1);
		}
		if (r < 0)
			return r;
		n->refs++;
		*ret = n;
		return 0;
	}
	r = union_node_new_locked(u, key, type, s->n, &n);
	if (r < 0) {
		stack_drop(u, s);
		if (upper)
			VFS_FORGET(u->upper, upper, 1);
		return r;
	}
	n->upper = upper;
	n->opaque = opaque;
	n->nlower = s->n;
	memcpy(n->lower, s->l, s->n * sizeof(s->l[0]));
	union_node_set_parent_locked(n, dir, name);
	*ret = n;
	return 0;
}

/* A lower-only hard link whose inode was copied up already (index): link it. */
static int link_up_from_index(struct union_fs *u, struct union_node *dir, const char *name,
			      uint64_t key)
{
	char idx[32];
	struct vfs_entry e;
	int r;

	union_index_name(key, idx);
	r = VFS_CALL(u->upper, lookup, &u->root_ctx, u->index, idx, &e);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	r = union_copy_up_locked(u, dir);
	dir->upper_empty = false;
	if (r == 0)
		r = VFS_CALL(u->upper, link, &u->root_ctx, e.ino, dir->upper, name, NULL);
	if (r == 0)
		r = union_linked_set(u, e.ino, union_linked_get(u, e.ino) + 1);
	VFS_FORGET(u->upper, e.ino, 1);
	return r < 0 ? r : 1;
}

static int lookup_locked(struct union_fs *u, struct union_node *dir, const char *name,
			 struct union_node **ret, struct statx *attr, struct union_found *found)
{
	struct stack s = { .n = 0 };
	struct vfs_entry ue;
	int r = vfs_check_name(name);

	if (attr)
		attr->stx_mask = 0;
	/* A directory hiding its lowers has the name in none of them. */
	*found = (struct union_found){ .in_lower = dir->opaque || !dir->nlower ? 0 : -1 };
	if (r < 0)
		return r;
	if (u->stale)
		return -ESTALE;
	if (!S_ISDIR(dir->type))
		return -ENOTDIR;
	r = union_upper_entry_locked(u, dir, name, &ue);
	if (r < 0)
		return r;
	if (r > 0) {
		found->upper = true;
		found->upper_ino = ue.ino;
		if (union_is_whiteout(&ue.attr)) {
			VFS_FORGET(u->upper, ue.ino, 1);
			return -ENOENT;
		}
		if (!S_ISDIR(ue.attr.stx_mode)) {
			uint32_t links;
			uint64_t key = upper_file_key(u, dir, name, ue.ino, &ue.attr, &links);

			r = node_for(u, dir, name, key, ue.attr.stx_mode, ue.ino, &s, false, ret);
			if (r == 0 && links > 1)
				(*ret)->lower_links = links;
			/* The attributes just read are the node's, unless the
			 * node is another upper inode or a copied-up hard link
			 * (whose link count the index decides). */
			if (r == 0 && attr && (*ret)->upper == ue.ino && (*ret)->lower_links <= 1)
				*attr = ue.attr;
			return r;
		}
		r = upper_dir_stack(u, dir, name, ue.ino, &s, found);
		if (r < 0) {
			VFS_FORGET(u->upper, ue.ino, 1);
			return r;
		}
		/* An upper directory over lowers is opaque to them when it hides
		 * their names (created over a whiteout). */
		return node_for(u, dir, name,
				s.n ? union_key(s.l[0].layer, s.l[0].st_ino)
				    : union_key(0, ue.attr.stx_ino),
				S_IFDIR, ue.ino, &s, s.n == 0, ret);
	}
	if (dir->opaque || !dir->nlower)
		return -ENOENT;
	r = stack_lookup(u, dir->lower, dir->nlower, name, false, &s);
	if (r < 0 || s.n == 0)
		return r < 0 ? r : -ENOENT;
	found->in_lower = 1;
	uint64_t key = union_key(s.l[0].layer, s.l[0].st_ino);
	if (s.file && s.first.stx_nlink > 1) {
		struct union_node *n = union_node_find_locked(u, key);

		/* A hard link whose inode is in the upper already (this mount,
		 * or the index from an earlier one): give this name its link. */
		if (n && n->upper) {
			r = union_copy_up_locked(u, dir);
			dir->upper_empty = false;
			if (r == 0)
				r = VFS_CALL(u->upper, link, &u->root_ctx, n->upper, dir->upper,
					     name, NULL);
			if (r == 0)
				r = union_linked_set(u, n->upper, union_linked_get(u, n->upper) + 1);
			r = r < 0 ? r : 1;
		} else {
			r = link_up_from_index(u, dir, name, key);
		}
		if (r != 0) {
			stack_drop(u, &s);
			return r < 0 ? r : lookup_locked(u, dir, name, ret, NULL, found);
		}
	}
	struct statx first = s.first;
	bool file = s.file;
	r = node_for(u, dir, name, key, s.file ? s.first.stx_mode : S_IFDIR, 0, &s, false, ret);
	/* A lower file's attributes, read and checked against the lower's
	 * ctime just now, are the node's while it has no upper. */
	if (r == 0 && attr && file && !(*ret)->upper)
		*attr = first;
	return r;
}

int union_lookup_attr_locked(struct union_fs *u, struct union_node *dir, const char *name,
			     struct union_node **ret, struct statx *attr)
{
	struct union_found found;

	return lookup_locked(u, dir, name, ret, attr, &found);
}

int union_lookup_found_locked(struct union_fs *u, struct union_node *dir, const char *name,
			      struct union_node **ret, struct union_found *found)
{
	return lookup_locked(u, dir, name, ret, NULL, found);
}

int union_lookup_locked(struct union_fs *u, struct union_node *dir, const char *name,
			struct union_node **ret)
{
	return union_lookup_attr_locked(u, dir, name, ret, NULL);
}
