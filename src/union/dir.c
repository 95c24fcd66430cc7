/*
 * dir.c - reading a union directory. As the 2009 proposal had it, a merged
 * directory (one in more than one lower) is copied up the first time it is
 * opened, so the listing is the upper directory's names (whiteouts dropped)
 * plus the lowers' names it does not hide. A directory of one lower is read
 * as it is (nothing to merge) and copied up at its first change. Cookies are 62-bit hashes of names, entries sorted by them: a
 * cookie stays valid whatever is added or removed, so telldir/seekdir work and
 * no entry is returned twice or skipped (ext4's htree answers it the same way).
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "pony/util.h"

#define COOKIE_DOT 1
#define COOKIE_DOTDOT 2

void union_dirlist_done(struct union_dirlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	*l = (struct union_dirlist){ 0 };
}

static int dirlist_add(struct union_dirlist *l, const char *name, uint64_t ino, unsigned type)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct union_dirent *e = realloc(l->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		l->e = e;
		l->cap = cap;
	}
	l->e[l->n] = (struct union_dirent){ .ino = ino, .type = type, .name = strdup(name) };
	if (!l->e[l->n].name)
		return -ENOMEM;
	l->n++;
	return 0;
}

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	return dirlist_add(data, name, ino, type);
}

int union_list_layer_dir(struct union_fs *u, unsigned layer, uint64_t ino,
			 struct union_dirlist *ret)
{
	struct vfs *fs = layer_fs(u, layer);
	uint64_t fh;
	int r = VFS_CALL(fs, opendir, &u->root_ctx, ino, &fh);

	if (r < 0)
		return r;
	r = VFS_CALL(fs, readdir, &u->root_ctx, ino, fh, 0, collect, ret);
	VFS_CALL(fs, releasedir, ino, fh);
	return r;
}

/* FNV-1a, folded to 62 bits and kept clear of the "." and ".." cookies. */
static uint64_t name_cookie(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return ((h ^ h >> 62) & ((1ull << 62) - 1)) + 3;
}

static int by_cookie(const void *a, const void *b)
{
	const struct union_dirent *x = a, *y = b;

	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct union_dirent *)a)->name,
		      ((const struct union_dirent *)b)->name);
}

static bool name_seen(struct union_dirlist *sorted, size_t n, const char *name)
{
	struct union_dirent key = { .name = (char *)name };

	return n && bsearch(&key, sorted->e, n, sizeof(key), by_name);
}

/*
 * Whether an upper DT_CHR entry is a whiteout (0/0) or a real device. A
 * link of the shared whiteout (held, so its inode number is no other
 * file's) says so by its d_ino: no lookup per whiteout in a listing.
 */
static int upper_is_whiteout(struct union_fs *u, uint64_t dir, const char *name,
			     uint64_t d_ino)
{
	struct vfs_entry e;
	int r;

	if (u->whiteout && d_ino == u->whiteout_st_ino)
		return 1;
	r = VFS_CALL(u->upper, lookup, &u->root_ctx, dir, name, &e);

	if (r < 0)
		return r == -ENOENT ? 1 : r;
	r = union_is_whiteout(&e.attr);
	VFS_FORGET(u->upper, e.ino, 1);
	return r;
}

/*
 * The merged listing: upper names, then each lower's names not already seen
 * or hidden (whiteouts, in the upper or a higher lower, hide; so does a
 * non-directory above). `hidden` collects whiteouts as names to skip.
 */
int union_dir_merge_locked(struct union_fs *u, struct union_node *dir,
			   struct union_dirlist *ret)
{
	struct union_dirlist out = { 0 }, hidden = { 0 };
	int r = 0;

	for (unsigned i = 0; i <= dir->nlower && r >= 0; i++) {
		struct union_dirlist layer = { 0 };
		unsigned lay = i == 0 ? 0 : dir->lower[i - 1].layer;
		uint64_t ino = i == 0 ? dir->upper : dir->lower[i - 1].ino;
		size_t seen = out.n, nhidden = hidden.n;

		if (i == 0 && !dir->upper)
			continue;
		if (i > 0 && dir->opaque)
			break;
		r = union_list_layer_dir(u, lay, ino, &layer);
		if (seen > 1)
			qsort(out.e, seen, sizeof(out.e[0]), by_name);
		if (nhidden > 1)
			qsort(hidden.e, nhidden, sizeof(hidden.e[0]), by_name);
		for (size_t j = 0; j < layer.n && r >= 0; j++) {
			struct union_dirent *e = &layer.e[j];

			struct union_dirent key = { .name = e->name }, *up;

			/* aufs's markers: ".wh.X" hides X below (in a read-only
			 * layer), ".wh..wh..opq" made the stack stop (lookup). */
			if (union_is_wh_name(u, e->name)) {
				if ((i > 0 || u->readonly) && strcmp(e->name, UNION_WH_OPAQUE))
					r = dirlist_add(&hidden, e->name + strlen(UNION_WH_PREFIX),
							0, 0);
				continue;
			}

			/* An upper name over a lower one is (usually) its copy-up:
			 * the lower's inode number is what lookup says too. */
			up = seen ? bsearch(&key, out.e, seen, sizeof(key), by_name) : NULL;
			if (up && up->cookie == 0) {
				up->ino = union_key(lay, e->ino);
				up->cookie = 1;
			}
			if (up || name_seen(&hidden, nhidden, e->name))
				continue;
			if (e->type == DT_CHR) {
				int wh = i == 0 ? upper_is_whiteout(u, ino, e->name, e->ino) : 0;

				if (i > 0) {
					struct vfs_entry le;

					wh = VFS_CALL(u->lowers[lay], lookup, &u->root_ctx, ino,
						      e->name, &le);
					if (wh == 0) {
						wh = union_is_whiteout(&le.attr);
						VFS_FORGET(u->lowers[lay], le.ino, 1);
					}
				}
				if (wh < 0) {
					r = wh;
					break;
				}
				if (wh) {
					r = dirlist_add(&hidden, e->name, 0, 0);
					continue;
				}
			}
			r = dirlist_add(&out, e->name, union_key(lay, e->ino), e->type);
			if (r == 0 && i > 0)
				out.e[out.n - 1].cookie = 1;
		}
		union_dirlist_done(&layer);
	}
	union_dirlist_done(&hidden);
	if (r < 0) {
		union_dirlist_done(&out);
		return r;
	}
	for (size_t i = 0; i < out.n; i++)
		out.e[i].cookie = name_cookie(out.e[i].name);
	if (out.n > 1)
		qsort(out.e, out.n, sizeof(out.e[0]), by_cookie);
	/* A hash collision: the later name takes the next free cookie. */
	for (size_t i = 1; i < out.n; i++)
		if (out.e[i].cookie <= out.e[i - 1].cookie)
			out.e[i].cookie = out.e[i - 1].cookie + 1;
	*ret = out;
	return 0;
}

int union_upper_dir_clear(struct union_fs *u, uint64_t dir)
{
	struct union_dirlist l = { 0 };
	int r = union_list_layer_dir(u, 0, dir, &l);

	for (size_t i = 0; i < l.n && r >= 0; i++)
		r = VFS_CALL(u->upper, unlink, &u->root_ctx, dir, l.e[i].name);
	union_dirlist_done(&l);
	return r;
}

/* An open union directory: a snapshot listing, refreshed at cookie 0. */
struct union_dir {
	pthread_mutex_t lock;
	struct union_node *node;
	struct union_dirlist list;
	uint64_t self_ino, parent_ino;
	bool fresh;                     /* taken by opendir, not read yet */
	bool taken;                     /* list holds a snapshot */
};

static int dir_snapshot(struct union_fs *u, struct union_dir *d)
{
	struct union_node *n = d->node;
	int r;

	pthread_mutex_lock(&u->lock);
	r = u->stale ? -ESTALE : 0;
	/* Lowers must not have moved since the node was looked up. */
	for (unsigned i = 0; i < n->nlower && r == 0; i++) {
		struct statx x;

		r = VFS_CALL(u->lowers[n->lower[i].layer], statx, &u->root_ctx, n->lower[i].ino,
			     VFS_NO_FH, 0, STATX_CTIME, &x);
		if (r == 0)
			r = union_check_lower_locked(u, &n->lower[i], &x);
	}
	/* Recreating a one-lower directory in the upper would cost a mkdir,
	 * xattrs and a rename per directory a `find` enters, for a listing
	 * that is the lower's either way. */
	if (r == 0 && n->nlower > 1 && n->parent && !u->readonly)
		r = union_copy_up_locked(u, n);
	if (r == 0) {
		union_dirlist_done(&d->list);
		r = union_dir_merge_locked(u, n, &d->list);
		if (r == 0)
			union_prefetch_dirs_locked(u, n, &d->list);
	}
	d->self_ino = n->key;
	d->parent_ino = n->parent ? n->parent->key : n->key;
	d->taken = r == 0;
	pthread_mutex_unlock(&u->lock);
	return r;
}

/*
 * readdir without opendir (VFS_NO_FH): the node keeps one listing, taken
 * at cookie 0 (or when there is none) and served from the cookie asked.
 * Readers at different places share it safely: cookies are name hashes,
 * so a listing taken meanwhile neither repeats nor skips a name for a
 * reader resuming after one. Freed with the node.
 */
static struct union_dir *node_dir(struct union_fs *u, uint64_t ino)
{
	struct union_node *n = union_node_get(u, ino);
	struct union_dir *d;

	pthread_mutex_lock(&u->lock);
	d = n->dir_cache;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (d) {
			d->node = n;
			pthread_mutex_init(&d->lock, NULL);
			n->dir_cache = d;
		}
	}
	pthread_mutex_unlock(&u->lock);
	return d;
}

void union_dir_free(struct union_dir *d)
{
	if (!d)
		return;
	union_dirlist_done(&d->list);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int union_opendir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, uint64_t *ret_fh)
{
	struct union_fs *u = union_of(fs);
	struct union_dir *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->node = union_node_get(u, ino);
	pthread_mutex_init(&d->lock, NULL);
	r = dir_snapshot(u, d);
	d->fresh = true;
	if (r < 0) {
		union_releasedir(fs, ino, (uint64_t)(uintptr_t)d);
		return r;
	}
	*ret_fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static size_t first_after(const struct union_dirlist *l, uint64_t cookie)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->e[mid].cookie <= cookie)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int union_readdir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		  uint64_t cookie, vfs_filldir_t fill, void *data)
{
	struct union_dir *d = fh == VFS_NO_FH ? node_dir(union_of(fs), ino)
					      : (struct union_dir *)(uintptr_t)fh;
	int r = 0;

	if (!d)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	/* rewinddir: a fresh listing, as POSIX asks; the first read after
	 * opendir has the one opendir just took. */
	if ((cookie == 0 && !d->fresh) || !d->taken)
		r = dir_snapshot(union_of(fs), d);
	d->fresh = false;
	if (r == 0 && cookie < COOKIE_DOT)
		r = fill(data, ".", d->self_ino, DT_DIR, COOKIE_DOT);
	if (r == 0 && cookie < COOKIE_DOTDOT)
		r = fill(data, "..", d->parent_ino, DT_DIR, COOKIE_DOTDOT);
	for (size_t i = first_after(&d->list, cookie); r == 0 && i < d->list.n; i++) {
		struct union_dirent *e = &d->list.e[i];

		r = fill(data, e->name, e->ino, e->type, e->cookie);
	}
	pthread_mutex_unlock(&d->lock);
	return r < 0 ? r : 0;
}

int union_releasedir(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	union_dir_free((struct union_dir *)(uintptr_t)fh);
	return 0;
}
