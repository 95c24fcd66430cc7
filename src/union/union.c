/*
 * union.c - building and tearing down a union: the layers are checked
 * (present, directories, not nested in one another, work beside the upper on
 * one filesystem) before anything is written, the work directory is emptied
 * of what an interrupted copy-up left, and the root node merges every lower.
 * A union of lowers alone (no upper, as container runtimes mount image
 * layers) is read-only: its top lower stands in the upper's place, opened
 * read-only, so whiteouts, opaque directories and redirects in it apply to
 * the lowers below exactly as an upper's would, and nothing is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "pony/hostfs.h"
#include "pony/util.h"

/* Whether a is b or inside it (both canonical). */
static bool path_within(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (n == 1) /* "/" */
		return true;
	return !strncmp(a, b, n) && (a[n] == '/' || a[n] == '\0');
}

static int canonical_dir(const char *path, char *buf)
{
	struct stat st;

	if (!path || !*path)
		return -EINVAL;
	if (!realpath(path, buf) || stat(buf, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int check_layers(const struct union_config *cfg, char (*paths)[PATH_MAX],
			char *upper, char *work)
{
	int r;

	if (cfg->nlowers == 0 || cfg->nlowers > UNION_MAX_LOWERS)
		return -EINVAL;
	for (unsigned i = 0; i < cfg->nlowers; i++) {
		r = canonical_dir(cfg->lowers[i], paths[i]);
		if (r < 0)
			return r;
	}
	if (!cfg->upper)
		return 0;
	r = canonical_dir(cfg->upper, upper);
	if (r == 0)
		r = canonical_dir(cfg->work, work);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < cfg->nlowers; i++)
		if (path_within(upper, paths[i]) || path_within(paths[i], upper) ||
		    path_within(work, paths[i]) || path_within(paths[i], work))
			return -ELOOP;
	if (path_within(work, upper) || path_within(upper, work))
		return -ELOOP;
	struct stat su, sw;
	if (stat(upper, &su) < 0 || stat(work, &sw) < 0)
		return -errno;
	return su.st_dev == sw.st_dev ? 0 : -EXDEV;
}

/* work/work and work/index under the work directory, as overlayfs names them. */
static int attach_work_dir(struct union_fs *u, const char *work, const char *name,
			   uint64_t *ret)
{
	char path[PATH_MAX + 16];
	struct vfs_entry e;
	int r;

	snprintf(path, sizeof(path), "%s/%s", work, name);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	r = hostfs_attach(u->upper, path, &e);
	if (r < 0)
		return r;
	*ret = e.ino;
	return 0;
}

/* What an interrupted copy-up or removal left in work/work. */
static int clean_work(struct union_fs *u)
{
	struct union_dirlist l = { 0 };
	int r = union_list_layer_dir(u, 0, u->work, &l);

	for (size_t i = 0; i < l.n && r >= 0; i++) {
		struct vfs_entry e;

		r = VFS_CALL(u->upper, lookup, &u->root_ctx, u->work, l.e[i].name, &e);
		if (r < 0)
			break;
		if (S_ISDIR(e.attr.stx_mode)) {
			r = union_upper_dir_clear(u, e.ino);
			if (r == 0)
				r = VFS_CALL(u->upper, rmdir, &u->root_ctx, u->work, l.e[i].name);
		} else {
			r = VFS_CALL(u->upper, unlink, &u->root_ctx, u->work, l.e[i].name);
		}
		VFS_FORGET(u->upper, e.ino, 1);
	}
	union_dirlist_done(&l);
	return r;
}

/* The layers as hostfs instances; without an upper, the top lower is it. */
static int open_layers(struct union_fs *u, const struct union_config *cfg,
		       char (*paths)[PATH_MAX], const char *upper, const char *work)
{
	unsigned first = u->readonly ? 1 : 0;
	int r;

	u->nlowers = cfg->nlowers - first;
	r = hostfs_new(u->readonly ? paths[0] : upper, u->readonly ? HOSTFS_READONLY : 0,
		       &u->upper);
	for (unsigned i = 1; i <= u->nlowers && r == 0; i++)
		r = hostfs_new(paths[i - 1 + first], HOSTFS_READONLY, &u->lowers[i]);
	if (r < 0 || u->readonly)
		return r;
	r = attach_work_dir(u, work, "work", &u->work);
	if (r == 0)
		r = attach_work_dir(u, work, "index", &u->index);
	return r == 0 ? clean_work(u) : r;
}

static int copy_idmap(struct union_idmap *dst, unsigned *ret_n, const struct union_idmap *src,
		      unsigned n)
{
	if (n > UNION_MAX_IDMAPS || (n && !src))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		dst[i] = src[i];
	*ret_n = n;
	return 0;
}

static int build_root(struct union_fs *u)
{
	struct statx x;
	unsigned n = 0;
	int r;

	r = VFS_CALL(u->upper, statx, &u->root_ctx, VFS_ROOT_INO, VFS_NO_FH, 0,
		     STATX_BASIC_STATS, &x);
	if (r < 0)
		return r;
	u->upper_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	r = union_node_new_locked(u, union_key(0, x.stx_ino), S_IFDIR, u->nlowers, &u->root);
	if (r < 0)
		return r;
	u->root->upper = VFS_ROOT_INO;
	for (unsigned i = 1; i <= u->nlowers; i++) {
		r = VFS_CALL(u->lowers[i], statx, &u->root_ctx, VFS_ROOT_INO, VFS_NO_FH, 0,
			     STATX_BASIC_STATS, &x);
		if (r < 0)
			return r;
		u->root->lower[n++] = (struct union_lower){
			.layer = i, .ino = VFS_ROOT_INO, .st_ino = x.stx_ino,
			.dev = union_statx_dev(&x), .ctime = x.stx_ctime };
		if (union_layer_dir_opaque(u, i, VFS_ROOT_INO))
			break;
	}
	u->root->nlower = n;
	return 0;
}

int union_new(const struct union_config *cfg, struct vfs **ret)
{
	char (*paths)[PATH_MAX] = calloc(UNION_MAX_LOWERS, PATH_MAX);
	char upper[PATH_MAX], work[PATH_MAX];
	struct union_fs *u = NULL;
	int r;

	if (!paths)
		return -ENOMEM;
	r = check_layers(cfg, paths, upper, work);
	if (r == 0)
		r = (u = calloc(1, sizeof(*u))) ? 0 : -ENOMEM;
	if (r < 0)
		goto out;
	u->vfs.ops = &union_ops;
	/* Wanted by FUSE's threads, the forgets' and the prefetch's at once
	 * (an rm -rf: an unlink and the previous file's forget), each for a
	 * few host calls. */
	util_mutex_init_adaptive(&u->lock);
	pthread_cond_init(&u->copied, NULL);
	pthread_mutex_init(&u->xattr_scan_lock, NULL);
	snprintf(u->prefix, sizeof(u->prefix), "%s",
		 cfg->flags & UNION_USERXATTR ? "user.overlay." : "trusted.overlay.");
	u->no_prefetch = cfg->flags & UNION_NO_PREFETCH;
	u->readonly = !cfg->upper;
	u->flags = cfg->flags;
	u->squash_uid = cfg->squash_uid;
	u->squash_gid = cfg->squash_gid;
	r = copy_idmap(u->uidmap, &u->nuidmap, cfg->uidmap, cfg->nuidmap);
	if (r == 0)
		r = copy_idmap(u->gidmap, &u->ngidmap, cfg->gidmap, cfg->ngidmap);
	if (r == 0 && u->readonly)
		r = union_keep_layer_paths(u, paths, cfg->nlowers);
	if (r == 0)
		r = open_layers(u, cfg, paths, upper, work);
	if (r == 0)
		r = build_root(u);
	if (r < 0) {
		union_destroy(&u->vfs);
		goto out;
	}
	*ret = &u->vfs;
out:
	free(paths);
	return r;
}

void union_destroy(struct vfs *fs)
{
	struct union_fs *u = union_of(fs);

	union_prefetch_stop(u);
	union_files_release_all(u);
	union_nodes_free(u);
	union_seen_free(u);
	if (u->upper) {
		union_whiteout_drop_locked(u);
		if (u->work)
			VFS_FORGET(u->upper, u->work, 1);
		if (u->index)
			VFS_FORGET(u->upper, u->index, 1);
	}
	vfs_free(u->upper);
	for (unsigned i = 1; i <= u->nlowers; i++)
		vfs_free(u->lowers[i]);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->copied);
	pthread_mutex_destroy(&u->xattr_scan_lock);
	union_free_layer_paths(u);
	free(u);
}
