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

/* Whether a layer is read-only: a lower, or the top lower standing in the
 * upper's place in a union without one. Only those are read for aufs's
 * whiteout files: the union never writes them. */
static bool layer_has_wh_files(const struct union_fs *u, unsigned layer)
{
	return (u->flags & UNION_WH_FILES) && (layer > 0 || u->readonly);
}

int union_wh_file_locked(struct union_fs *u, unsigned layer, uint64_t dir, const char *name)
{
	char wh[NAME_MAX + 8];
	struct vfs_entry e;
	int r;

	if (!layer_has_wh_files(u, layer))
		return 0;
	if (snprintf(wh, sizeof(wh), UNION_WH_PREFIX "%s", name) > NAME_MAX)
		return 0;       /* no such name can exist */
	r = VFS_CALL(layer_fs(u, layer), lookup, &u->root_ctx, dir, wh, &e);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	VFS_FORGET(layer_fs(u, layer), e.ino, 1);
	return 1;
}

bool union_layer_dir_opaque(struct union_fs *u, unsigned layer, uint64_t ino)
{
	struct vfs_entry e;
	char v[2];

	if (union_getxattr_layer(u, layer, ino, "opaque", v, sizeof(v)) == 1 && v[0] == 'y')
		return true;
	if (!layer_has_wh_files(u, layer) ||
	    VFS_CALL(layer_fs(u, layer), lookup, &u->root_ctx, ino, UNION_WH_OPAQUE, &e) < 0)
		return false;
	VFS_FORGET(layer_fs(u, layer), e.ino, 1);
	return true;
}

/* A stack of lower directories being built for a directory node. */
struct stack {
	struct union_lower l[UNION_MAX_LOWERS];
	struct statx first;             /* attributes of the last entry found */
	unsigned n;
	bool file;                      /* l[0] is a non-directory */
};

static void stack_drop(struct union_fs *u, struct stack *s)
{
	for (unsigned i = 0; i < s->n; i++)
		VFS_FORGET(u->lowers[s->l[i].layer], s->l[i].ino, 1);
	s->n = 0;
}

/* overlayfs's rules: absolute and clean, or one name; anything else is corrupt. */
static bool redirect_valid(const char *r)
{
	if (r[0] != '/')
		return !strchr(r, '/') && vfs_check_name(r) == 0;
	return !strstr(r, "//") && !strstr(r, "/../") && !strstr(r, "/./") &&
	       strcmp(r + strlen(r) - (strlen(r) >= 3 ? 3 : 0), "/..") != 0;
}

/*
 * A directory's redirect, NUL-terminated in buf: its length, 0 if it has
 * none, -EIO if it is corrupt.
 */
static int redirect_get(struct union_fs *u, unsigned layer, uint64_t ino, char *buf,
			size_t size)
{
	int n = union_getxattr_layer(u, layer, ino, "redirect", buf, size - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return redirect_valid(buf) ? n : -EIO;
}

/*
 * A lookup in the lowers, as overlayfs's struct ovl_lookup_data: what is
 * looked for is one name in the parent's lower directories, or, once a
 * redirect said so, an absolute path from the lowers' roots.
 */
struct lower_walk {
	char name[PATH_MAX];            /* "n", or "/a/b" */
	bool stop;                      /* no lower below may add to the stack */
	bool is_dir;                    /* a directory stands at the name: only
					 * directories below merge with it */
};

/*
 * A redirect on a directory met at w->name[off..off+len): an absolute one
 * replaces the path up to there, a relative one that component; the rest
 * of the path follows. Returns where the rest now starts.
 */
static int walk_redirect(struct lower_walk *w, size_t off, size_t len, const char *redirect,
			 size_t *ret_rest)
{
	char buf[PATH_MAX];
	const char *rest = w->name + off + len;
	size_t pre = redirect[0] == '/' ? 0 : off;
	int n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)pre, w->name, redirect, rest);

	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	/* An absolute redirect below an opaque directory is followed. */
	if (redirect[0] == '/')
		w->stop = false;
	*ret_rest = (size_t)n - strlen(rest);
	memcpy(w->name, buf, (size_t)n + 1);
	return 0;
}

/*
 * One component met in a layer, w->name[*off..*off+len): whether the walk
 * ends here (a whiteout, a non-directory where a directory is wanted), and
 * for a directory, its opaque and redirect xattrs, unless the layer is the
 * last (nothing below to hide or redirect to). more: lowers follow in the
 * parent's stack. 1: found, *off past it; 0: nothing here; <0: error. e is
 * forgotten unless 1.
 */
static int walk_component(struct union_fs *u, unsigned layer, struct lower_walk *w,
			  size_t *off, size_t len, bool more, const struct vfs_entry *e)
{
	bool last_el = w->name[*off + len] == '\0', dir = S_ISDIR(e->attr.stx_mode);
	char redirect[PATH_MAX];
	size_t at = *off;
	int r = union_seen_check_locked(u, layer, &e->attr);

	if (r < 0)
		goto drop;
	if (union_is_whiteout(&e->attr) || (!dir && (w->is_dir || !last_el))) {
		w->stop = true;
		goto drop;
	}
	*off += len;
	w->is_dir |= dir && last_el;
	w->stop |= !dir;
	if (!dir || layer == u->nlowers)
		return 1;
	r = redirect_get(u, layer, e->ino, redirect, sizeof(redirect));
	/* Opaque: a stop below, and a redirect ignored (the rest of the path
	 * is still walked in this layer). Unread where neither can matter. */
	if (r >= 0 && (r > 0 || more) && union_layer_dir_opaque(u, layer, e->ino)) {
		w->stop = true;
		return 1;
	}
	if (r > 0)
		r = walk_redirect(w, at, len, redirect, off);
	if (r >= 0)
		return 1;
drop:
	VFS_FORGET(u->lowers[layer], e->ino, 1);
	return r;
}

/*
 * Walks w->name in one lower directory, as overlayfs's ovl_lookup_layer():
 * component by component for a path, each checked by walk_component.
 * 1 and *ret (one reference): found; 0: not here.
 */
static int walk_layer(struct union_fs *u, const struct union_lower *base, struct lower_walk *w,
		      bool more, struct union_lower *ret, struct statx *ret_attr)
{
	struct vfs *fs = u->lowers[base->layer];
	struct union_lower cur = *base;
	size_t off = w->name[0] == '/';
	bool held = false;

	for (;;) {
		size_t len = strcspn(w->name + off, "/");
		char comp[NAME_MAX + 1];
		struct vfs_entry e;
		int r = 0;

		if (len == 0 || len > NAME_MAX)
			r = -EIO;
		memcpy(comp, w->name + off, MIN(len, NAME_MAX));
		comp[MIN(len, NAME_MAX)] = '\0';
		/* aufs's whiteout file: the name is gone here and below. */
		if (r == 0) {
			r = union_wh_file_locked(u, base->layer, cur.ino, comp);
			if (r > 0) {
				w->stop = true;
				r = -ENOENT;
			}
		}
		/* Done ahead by prefetch.c's thread, during a tree walk. */
		if (r == 0 && !union_prefetch_take_locked(u, &cur, comp, &e))
			r = VFS_CALL(fs, lookup, &u->root_ctx, cur.ino, comp, &e);
		if (held)
			VFS_FORGET(fs, cur.ino, 1);
		if (r == 0)
			r = walk_component(u, base->layer, w, &off, len, more, &e);
		if (r <= 0)
			return r == -ENOENT ? 0 : r;
		cur = (struct union_lower){ .layer = base->layer, .ino = e.ino,
					    .st_ino = e.attr.stx_ino,
					    .dev = union_statx_dev(&e.attr),
					    .ctime = e.attr.stx_ctime };
		held = true;
		if (w->name[off] == '\0') {
			*ret = cur;
			*ret_attr = e.attr;
			return 1;
		}
		off++;
	}
}

/*
 * Looks name (one name, or an absolute redirect) up in the lower
 * directories dirs, as overlayfs's ovl_lookup(): top first, a directory
 * merging those below until a non-directory, whiteout or opaque directory;
 * a redirect on a lower directory changes what the layers below are asked
 * for, an absolute one from their roots. dirs_only when an upper directory
 * already stands at the name (a lower non-directory then ends it).
 */
static int stack_lookup(struct union_fs *u, const struct union_lower *dirs, unsigned ndirs,
			const char *name, bool dirs_only, struct stack *s)
{
	const struct union_lower *roots = u->root->lower;
	struct lower_walk w = { .is_dir = dirs_only };

	if (strlen(name) >= sizeof(w.name))
		return -ENAMETOOLONG;
	strcpy(w.name, name);
	if (name[0] == '/') {
		dirs = roots;
		ndirs = u->root->nlower;
	}
	for (unsigned i = 0; i < ndirs && !w.stop; i++) {
		struct union_lower *l = &s->l[s->n];
		int r = walk_layer(u, &dirs[i], &w, i + 1 < ndirs, l, &s->first);

		if (r < 0)
			return r;
		if (r == 0)
			continue;
		s->n++;
		s->file = !S_ISDIR(s->first.stx_mode);
		/* An absolute redirect: the layers below, from their roots. */
		if (w.name[0] == '/' && dirs != roots) {
			unsigned layer = dirs[i].layer;

			dirs = roots;
			ndirs = u->root->nlower;
			for (i = 0; i + 1 < ndirs && roots[i].layer != layer; i++)
				;
		}
	}
	return 0;
}

/*
 * The lowers of an upper directory: none if it is opaque (its redirect
 * unread); else those its redirect names (an absolute one from the lowers'
 * roots, also below a parent without lowers), or its name in its parent's
 * lowers. found->in_lower is set when the lowers were asked for name itself.
 */
static int upper_dir_stack(struct union_fs *u, struct union_node *dir, const char *name,
			   uint64_t upper, struct stack *s, struct union_found *found)
{
	char redirect[PATH_MAX];
	int r = redirect_get(u, 0, upper, redirect, sizeof(redirect));

	/* Below a parent without lowers, no redirect: nothing to look for. */
	if ((r == 0 && dir->opaque) || union_layer_dir_opaque(u, 0, upper))
		return 0;
	if (r < 0)
		return r;
	if (r > 0)
		return stack_lookup(u, dir->lower, dir->opaque ? 0 : dir->nlower, redirect, true,
				    s);
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

/* pony's own origin of an upper inode (pony.origin): whether it has one. */
static bool origin_own_get(struct union_fs *u, uint64_t ino, struct union_origin *ret)
{
	uint8_t own[UNION_PONY_ORIGIN_SIZE];
	int n = union_getxattr_layer(u, 0, ino, "pony.origin", (char *)own, sizeof(own));

	if (n != UNION_PONY_ORIGIN_SIZE)
		return false;
	ret->layer = util_get_le32(own);
	ret->st_ino = util_get_le64(own + 4);
	ret->links = util_get_le32(own + 12);
	return true;
}

/* The stable key of an upper non-directory: its origin's, if it has one. */
static uint64_t upper_file_key(struct union_fs *u, struct union_node *dir, const char *name,
			       uint64_t ino, const struct statx *x, uint32_t *ret_links)
{
	struct union_origin o = { 0 };

	/* Without an upper, the top lower's origins name layers of some other
	 * union: its inodes are its own. */
	if (u->readonly || (!origin_own_get(u, ino, &o) && !origin_from_fb(u, dir, name, ino, &o)))
		o.layer = 0;
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

/*
 * The upper inode of a lower hard link copied up through another name, in
 * an earlier mount: its index entry (a reference) and the lower link count
 * at copy-up. 1 if it has one, 0 if not.
 */
static int index_find_locked(struct union_fs *u, uint64_t key, uint64_t *ret_upper,
			     uint32_t *ret_links)
{
	struct union_origin o = { 0 };
	struct vfs_entry e;
	char idx[32];
	int r;

	if (!u->index)
		return 0;       /* a read-only union has no work directory */
	union_index_name(key, idx);
	r = VFS_CALL(u->upper, lookup, &u->root_ctx, u->index, idx, &e);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	*ret_upper = e.ino;
	*ret_links = origin_own_get(u, e.ino, &o) ? o.links : 0;
	return 1;
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
	/* aufs's whiteout and opaque files are markers, never names. */
	if (union_is_wh_name(u, name))
		return -ENOENT;
	r = union_upper_entry_locked(u, dir, name, &ue);
	if (r == 0 && dir->upper && !dir->upper_empty)
		r = union_wh_file_locked(u, 0, dir->upper, name) ? -ENOENT : 0;
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
	uint64_t key = union_key(s.l[0].layer, s.l[0].st_ino), upper = 0;
	uint32_t links = 0;
	/* A hard link whose inode is in the upper already, through another
	 * name: as overlayfs with index=on, this name stays lower-only (a
	 * read writes nothing) and shows that inode; a change to the name
	 * links it up first (union_link_up_locked()). In this mount the node
	 * has the upper, after a remount the index does. */
	if (s.file && s.first.stx_nlink > 1) {
		struct union_node *n = union_node_find_locked(u, key);

		r = n && n->upper ? 0 : index_find_locked(u, key, &upper, &links);
		if (r < 0 || upper)
			stack_drop(u, &s);
		if (r < 0)
			return r;
	}
	struct statx first = s.first;
	bool file = s.file;
	r = node_for(u, dir, name, key, file ? first.stx_mode : S_IFDIR, upper, &s, false, ret);
	if (r == 0 && links > 1)
		(*ret)->lower_links = links;
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
