/*
 * copy_up.c - bringing a lower file or directory into the upper, as
 * overlayfs's copy_up.c does: parents first, then the object is built in the
 * work directory (data, xattrs, owner, mode, times, origin) and renamed into
 * place in one step, so the upper never shows a half-copied file. A hard link
 * also gets a link in the index (work/index/<key>): its other lower names
 * show that inode (lookup.c), in this mount or the next, and are linked up
 * to it only when they change (union_link_up_locked()).
 *
 * A file's data is the long part. Where the caller allows it (an open for
 * writing, a setattr, a setxattr: they hold nothing across the copy-up but
 * the node) it is copied with the union's lock dropped, the node marked
 * copying: whatever would copy that node up or change its name waits for
 * it (union_copy_wait_locked()), everything else goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "pony/util.h"

#define COPY_CHUNK (1u << 20)

const char *union_tmp_name(struct union_fs *u, char buf[static 32])
{
	snprintf(buf, 32, "#pony.%llx.%llx", (unsigned long long)getpid(),
		 (unsigned long long)++u->tmp_seq);
	return buf;
}

void union_index_name(uint64_t key, char buf[static 32])
{
	snprintf(buf, 32, "%016llx", (unsigned long long)key);
}

int union_set_xattr(struct union_fs *u, uint64_t upper_ino, const char *suffix,
		    const void *value, size_t size)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", u->prefix, suffix);
	return VFS_CALL(u->upper, setxattr, &u->root_ctx, upper_ino, name, value, size, 0);
}

int union_linked_get(struct union_fs *u, uint64_t upper)
{
	char buf[16];
	int n = union_getxattr_layer(u, 0, upper, "pony.linked", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf);
}

int union_linked_set(struct union_fs *u, uint64_t upper, int count)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%d", count);

	return union_set_xattr(u, upper, "pony.linked", buf, (size_t)n);
}

int union_node_path(struct union_node *n, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (; n && n->parent; n = n->parent) {
		size_t l = strlen(n->name);

		if (len + l + 2 > size)
			return -ENAMETOOLONG;
		memmove(buf + l + 1, buf, len + 1);
		buf[0] = '/';
		memcpy(buf + 1, n->name, l);
		len += l + 1;
	}
	if (len == 0)
		snprintf(buf, size, "/");
	return 0;
}

static int copy_data(struct union_fs *u, struct union_lower *l, uint64_t dst_ino,
		     uint64_t dst_fh)
{
	struct vfs *lfs = u->lowers[l->layer];
	_cleanup_(freep) char *buf = malloc(COPY_CHUNK);
	uint64_t fh;
	off_t off = 0;
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	r = VFS_CALL(lfs, open, &u->root_ctx, l->ino, O_RDONLY, &fh);
	if (r < 0)
		return r;
	while ((n = VFS_CALL(lfs, read, l->ino, fh, buf, COPY_CHUNK, off)) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = VFS_CALL(u->upper, write, dst_ino, dst_fh, buf + done,
					     (size_t)(n - done), off + done);
			if (w <= 0) {
				n = w < 0 ? w : -EIO;
				goto out;
			}
			done += w;
		}
		off += n;
	}
out:
	VFS_CALL(lfs, release, l->ino, fh);
	return n < 0 ? (int)n : 0;
}

static int copy_xattrs(struct union_fs *u, struct union_lower *l, uint64_t dst)
{
	struct vfs *lfs = u->lowers[l->layer];
	int n = VFS_CALL(lfs, listxattr, &u->root_ctx, l->ino, NULL, 0);
	_cleanup_(freep) char *names = NULL, *val = NULL;

	if (n <= 0)
		return n == -EOPNOTSUPP ? 0 : n;
	names = malloc((size_t)n);
	val = malloc(65536);
	if (!names || !val)
		return -ENOMEM;
	n = VFS_CALL(lfs, listxattr, &u->root_ctx, l->ino, names, (size_t)n);
	for (char *p = names; n > 0 && p < names + n; p += strlen(p) + 1) {
		int v;

		/* Another overlay's own xattrs describe that overlay, not this file. */
		if (union_is_own_xattr(u, p) || !strncmp(p, "trusted.overlay.", 16))
			continue;
		v = VFS_CALL(lfs, getxattr, &u->root_ctx, l->ino, p, val, 65536);
		if (v < 0)
			continue;
		v = VFS_CALL(u->upper, setxattr, &u->root_ctx, dst, p, val, (size_t)v, 0);
		/* security.* the upper cannot take is dropped, as overlayfs does. */
		if (v < 0 && v != -EOPNOTSUPP && v != -EPERM && strncmp(p, "security.", 9))
			return v;
	}
	return n < 0 ? n : 0;
}

/*
 * The origin, twice: overlayfs's (struct ovl_fb: version 0, magic 0xfb,
 * length, flags 0 for little-endian, handle type, the lower filesystem's
 * uuid, the handle), which the kernel decodes to the lower file; and pony's
 * own (layer, lower st_ino, lower link count), which says the layer even
 * when several lowers share a filesystem. A lower without handles gets no
 * overlayfs origin, as in the kernel.
 */
static int set_origin(struct union_fs *u, uint64_t dst, const struct union_lower *l,
		      uint32_t links)
{
	uint8_t fb[UNION_FB_HEADER + 128] = { 0, 0xfb };
	uint8_t own[UNION_PONY_ORIGIN_SIZE];
	int type, n;

	n = VFS_CALL(u->lowers[l->layer], encode_fh, l->ino, fb + UNION_FB_HEADER,
		     sizeof(fb) - UNION_FB_HEADER, &type, fb + 5);
	if (n > 0) {
		fb[2] = (uint8_t)(UNION_FB_HEADER + n);
		fb[4] = (uint8_t)type;
		n = union_set_xattr(u, dst, "origin", fb, UNION_FB_HEADER + (size_t)n);
		if (n < 0)
			return n;
	}
	le32 layer = cpu_to_le32(l->layer), nl = cpu_to_le32(links);
	le64 ino = cpu_to_le64(l->st_ino);

	memcpy(own, &layer, 4);
	memcpy(own + 4, &ino, 8);
	memcpy(own + 12, &nl, 4);
	return union_set_xattr(u, dst, "pony.origin", own, sizeof(own));
}

/* Owner, mode and times last: a copy-up must not make a file writable early. */
static int copy_attrs(struct union_fs *u, uint64_t dst, const struct statx *x)
{
	struct vfs_setattr a = {
		.valid = VFS_SET_UID | VFS_SET_GID | VFS_SET_ATIME | VFS_SET_MTIME,
		.uid = x->stx_uid, .gid = x->stx_gid,
		.atime = { x->stx_atime.tv_sec, x->stx_atime.tv_nsec },
		.mtime = { x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec },
	};
	struct statx out;

	if (!S_ISLNK(x->stx_mode)) {
		a.valid |= VFS_SET_MODE;
		a.mode = x->stx_mode & 07777;
	}
	return VFS_CALL(u->upper, setattr, &u->root_ctx, dst, VFS_NO_FH, &a, &out);
}

bool union_copy_wait_locked(struct union_fs *u, struct union_node *n)
{
	bool waited = false;

	while (n && n->copying) {
		pthread_cond_wait(&u->copied, &u->lock);
		waited = true;
	}
	return waited;
}

/* copy_data() of n's file, with u->lock dropped when unlock. */
static int copy_data_of(struct union_fs *u, struct union_node *n, bool unlock, uint64_t dst_ino,
			uint64_t dst_fh)
{
	int r;

	if (!unlock)
		return copy_data(u, &n->lower[0], dst_ino, dst_fh);
	n->copying = true;
	pthread_mutex_unlock(&u->lock);
	r = copy_data(u, &n->lower[0], dst_ino, dst_fh);
	pthread_mutex_lock(&u->lock);
	n->copying = false;
	pthread_cond_broadcast(&u->copied);
	return r;
}

/* Creates the copy of n in the work directory: *ret its upper entry. */
static int build_copy(struct union_fs *u, struct union_node *n, bool unlock,
		      const struct statx *x, const char *tmp, struct vfs_entry *ret)
{
	struct union_lower *l = &n->lower[0];
	mode_t mode = x->stx_mode;
	int r;

	if (S_ISREG(mode)) {
		uint64_t fh;

		r = VFS_CALL(u->upper, create, &u->root_ctx, u->work, tmp, 0600,
			     O_WRONLY | O_EXCL, ret, &fh);
		if (r < 0)
			return r;
		r = copy_data_of(u, n, unlock, ret->ino, fh);
		VFS_CALL(u->upper, release, ret->ino, fh);
	} else if (S_ISDIR(mode)) {
		r = VFS_CALL(u->upper, mkdir, &u->root_ctx, u->work, tmp, 0700, ret);
	} else if (S_ISLNK(mode)) {
		char target[PATH_MAX + 1];
		int len = VFS_CALL(u->lowers[l->layer], readlink, &u->root_ctx, l->ino, target,
				   PATH_MAX);

		if (len < 0)
			return len;
		target[len] = '\0';
		r = VFS_CALL(u->upper, symlink, &u->root_ctx, target, u->work, tmp, ret);
	} else {
		r = VFS_CALL(u->upper, mknod, &u->root_ctx, u->work, tmp, mode & ~07777,
			     makedev(x->stx_rdev_major, x->stx_rdev_minor), ret);
	}
	return r;
}

static int copy_up_one_locked(struct union_fs *u, struct union_node *n, bool unlock)
{
	struct union_node *parent = n->parent;
	struct union_lower *l = &n->lower[0];
	struct statx x, pstat;
	struct vfs_entry e, placed;
	char tmp[32];
	int r;

	r = VFS_CALL(u->lowers[l->layer], statx, &u->root_ctx, l->ino, VFS_NO_FH, 0,
		     STATX_BASIC_STATS, &x);
	if (r == 0)
		r = union_check_lower_locked(u, l, &x);
	if (r < 0)
		return r;
	r = build_copy(u, n, unlock, &x, union_tmp_name(u, tmp), &e);
	if (r < 0)
		return r;
	uint32_t links = S_ISREG(x.stx_mode) && x.stx_nlink > 1 ? x.stx_nlink : 0;
	/* Owner before xattrs: the host's chown drops security.capability (as
	 * any chown(2) does), and the copy keeps the lower's, as overlayfs's. */
	r = copy_attrs(u, e.ino, &x);
	if (r == 0)
		r = copy_xattrs(u, l, e.ino);
	if (r == 0)
		r = set_origin(u, e.ino, l, links);
	if (r == 0 && links) {
		char idx[32];

		union_index_name(n->key, idx);
		r = VFS_CALL(u->upper, link, &u->root_ctx, e.ino, u->index, idx, NULL);
		if (r == 0)
			r = union_linked_set(u, e.ino, 1);
	}
	parent->upper_empty = false;
	/* The parent's times as they are now, with the lock held again: what
	 * others changed there during the copy stays. */
	if (r == 0)
		r = VFS_CALL(u->upper, statx, &u->root_ctx, parent->upper, VFS_NO_FH, 0,
			     STATX_BASIC_STATS, &pstat);
	if (r == 0)
		r = VFS_CALL(u->upper, rename, &u->root_ctx, u->work, tmp, parent->upper,
			     n->name, RENAME_NOREPLACE);
	if (r < 0) {
		if (S_ISDIR(x.stx_mode))
			VFS_CALL(u->upper, rmdir, &u->root_ctx, u->work, tmp);
		else
			VFS_CALL(u->upper, unlink, &u->root_ctx, u->work, tmp);
		VFS_FORGET(u->upper, e.ino, 1);
		return r;
	}
	/* The parent's times stay as they were: a copy-up is no change to it. */
	struct vfs_setattr pa = {
		.valid = VFS_SET_ATIME | VFS_SET_MTIME,
		.atime = { pstat.stx_atime.tv_sec, pstat.stx_atime.tv_nsec },
		.mtime = { pstat.stx_mtime.tv_sec, pstat.stx_mtime.tv_nsec },
	};
	/* As overlayfs: a directory holding entries with an origin is
	 * "impure", so the kernel's readdir gives their d_ino from the origin
	 * too. Set before the times are put back. */
	union_mark_impure_locked(u, parent);
	VFS_CALL(u->upper, setattr, &u->root_ctx, parent->upper, VFS_NO_FH, &pa, &placed.attr);
	n->upper_empty = S_ISDIR(n->type);      /* made empty in the work dir */
	if (links)
		n->lower_links = links;
	union_node_set_upper_locked(u, n, e.ino);
	return 0;
}

static int copy_up_locked(struct union_fs *u, struct union_node *n, bool unlock)
{
	int r;

	/* Another copy of n under way: its result is n's. */
	union_copy_wait_locked(u, n);
	if (u->stale)
		return -ESTALE;
	/* Every change copies up first (the node or its parent): a union
	 * without an upper refuses them all here. */
	if (u->readonly)
		return -EROFS;
	if (n->upper)
		return 0;
	/* Unlinked while open, or a name dropped for lack of memory. */
	if (!n->parent || !n->name || !n->nlower)
		return -ENOENT;
	r = union_copy_up_locked(u, n->parent);
	return r < 0 ? r : copy_up_one_locked(u, n, unlock && S_ISREG(n->type));
}

int union_copy_up_locked(struct union_fs *u, struct union_node *n)
{
	return copy_up_locked(u, n, false);
}

int union_copy_up_data_unlocked(struct union_fs *u, struct union_node *n)
{
	return copy_up_locked(u, n, true);
}

int union_link_up_locked(struct union_fs *u, struct union_node *dir, const char *name,
			 struct union_node *n)
{
	int r = union_copy_up_locked(u, dir);

	dir->upper_empty = false;
	if (r == 0)
		r = VFS_CALL(u->upper, link, &u->root_ctx, n->upper, dir->upper, name, NULL);
	return r < 0 ? r : union_linked_set(u, n->upper, union_linked_get(u, n->upper) + 1);
}

void union_mark_impure_locked(struct union_fs *u, struct union_node *dir)
{
	if (!dir->impure && dir->upper && union_set_xattr(u, dir->upper, "impure", "y", 1) == 0)
		dir->impure = true;
}

void union_whiteout_drop_locked(struct union_fs *u)
{
	if (!u->whiteout)
		return;
	VFS_FORGET(u->upper, u->whiteout, 1);
	VFS_CALL(u->upper, unlink, &u->root_ctx, u->work, u->whiteout_name);
	u->whiteout = 0;
}

/*
 * A whiteout as a hard link of one whiteout kept in work/work, as the
 * kernel's overlayfs makes them (5.8+): a link costs the upper a directory
 * entry, a mknod a new inode (ext4: 236 us a whiteout on bench/union's
 * upper, 60% of the daemon's time in an rm -rf of lower files). A full
 * link count (EMLINK) starts a new shared whiteout.
 */
static int whiteout_link_locked(struct union_fs *u, uint64_t dir, const char *name)
{
	struct vfs_entry e;
	int r = 0;

	for (int tries = 0; tries < 2; tries++) {
		if (!u->whiteout) {
			r = VFS_CALL(u->upper, mknod, &u->root_ctx, u->work,
				     union_tmp_name(u, u->whiteout_name), S_IFCHR, 0, &e);
			if (r < 0)
				return r;
			u->whiteout = e.ino;
			u->whiteout_st_ino = e.attr.stx_ino;
		}
		r = VFS_CALL(u->upper, link, &u->root_ctx, u->whiteout, dir, name, NULL);
		if (r != -EMLINK)
			return r;
		union_whiteout_drop_locked(u);
	}
	return r;
}

int union_make_whiteout_locked(struct union_fs *u, struct union_node *dir, const char *name)
{
	struct vfs_entry e;
	int r = union_copy_up_locked(u, dir);
	int linked = -EOPNOTSUPP;

	dir->upper_empty = false;
	if (r == 0 && !u->no_shared_whiteout)
		linked = whiteout_link_locked(u, dir->upper, name);
	if (r < 0 || linked == 0)
		return r;
	r = VFS_CALL(u->upper, mknod, &u->root_ctx, dir->upper, name, S_IFCHR, 0, &e);
	if (r < 0)
		return r;
	VFS_FORGET(u->upper, e.ino, 1);
	/* The link failed where a whiteout of its own works: this upper
	 * takes no links of whiteouts; one inode a whiteout from now on. */
	if (linked != -EOPNOTSUPP)
		u->no_shared_whiteout = true;
	return 0;
}
