/*
 * ops.c - ponyfs's vfs ops table: each hook takes the filesystem lock and
 * calls the *_locked work in namei.c and data.c. The commit points live
 * here: fsync writes back one file and commits (other files' cached data
 * stays cached: rule 3), barrier writes back without committing (rule 4),
 * syncfs writes back everything and commits.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "internal.h"

/* Commits when the transaction has made many names, so little waits in
 * memory for a commit; its failure is the call's (it was not acknowledged). */
static int commit_if_big(struct ponyfs *fs)
{
	if (fs->in_txn && ++fs->txn_ops >= 2048)
		return ponyfs_commit_locked(fs);
	return 0;
}

static int pf_lookup(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent,
		     const char *name, struct vfs_entry *ret)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_lookup_locked(ponyfs_of(v), parent, name, ret));
}

static int pf_statx(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		    unsigned flags, unsigned mask, struct statx *ret)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_fill_attr_locked(ponyfs_of(v), ino, mask, ret));
}

/*
 * Whether a setattr drops set-ID bits (attr.c): a chown or a truncation, and
 * what the kernel sends before a write or fallocate that must drop them
 * (file_remove_privs()): through FUSE, a mode the kernel worked out with
 * the old rule, from a caller who is not the owner (a chmod by one never
 * gets here), or nothing at all when that rule found nothing to drop. The
 * reply carries the mode the whole rule leaves, so the kernel caches that.
 */
static bool setattr_kills(const struct vfs_ctx *ctx, const struct statx *cur,
			  const struct vfs_setattr *a)
{
	unsigned changes = VFS_SET_MODE | VFS_SET_UID | VFS_SET_GID | VFS_SET_SIZE |
			   VFS_SET_ATIME | VFS_SET_MTIME | VFS_SET_ATIME_NOW | VFS_SET_MTIME_NOW;

	return (a->valid & (VFS_SET_UID | VFS_SET_GID | VFS_SET_SIZE)) || !(a->valid & changes) ||
	       ((a->valid & VFS_SET_MODE) && ctx->uid != cur->stx_uid);
}

/*
 * The row's changes in one statement: the mode (with the set-ID bits the
 * change drops), owner, group, the times asked for (NULL: kept, so a
 * cached mtime still waiting for its file's writeback is not committed
 * ahead of its data) and the ctime. An untar makes three setattrs a file.
 */
static int setattr_row(struct ponyfs *fs, uint64_t ino, mode_t mode, uid_t uid, gid_t gid,
		       const int64_t *atime, const int64_t *mtime, int64_t ctime)
{
	const struct ponyfs_row *cached = ponyfs_row_cached(fs, ino, false);
	struct ponyfs_row row = cached ? *cached : (struct ponyfs_row){ 0 };
	sqlite3_stmt *s = NULL;
	int r = ponyfs_prepare(fs, "UPDATE inodes SET mode = ?2, uid = ?3, gid = ?4, "
			       "atime = coalesce(?5, atime), mtime = coalesce(?6, mtime), ctime = ?7 "
			       "WHERE ino = ?1", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)mode);
	sqlite3_bind_int64(s, 3, (int64_t)uid);
	sqlite3_bind_int64(s, 4, (int64_t)gid);
	if (atime)
		sqlite3_bind_int64(s, 5, *atime);
	if (mtime)
		sqlite3_bind_int64(s, 6, *mtime);
	sqlite3_bind_int64(s, 7, ctime);
	r = ponyfs_step_done(fs, s);
	/* The row it leaves, cached again (the update hook dropped it): an
	 * untar's next setattr of the file reads none. */
	if (r >= 0 && cached) {
		row.mode = mode;
		row.uid = uid;
		row.gid = gid;
		row.atime = atime ? *atime : row.atime;
		row.mtime = mtime ? *mtime : row.mtime;
		row.ctime = ctime;
		ponyfs_row_store(fs, &row);
	}
	return r;
}

static int setattr_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino,
			  const struct vfs_setattr *a, struct statx *ret)
{
	int64_t now = ponyfs_now();
	int64_t at = (int64_t)a->atime.tv_sec * 1000000000 + a->atime.tv_nsec;
	int64_t mt = (int64_t)a->mtime.tv_sec * 1000000000 + a->mtime.tv_nsec;
	bool set_atime = a->valid & (VFS_SET_ATIME | VFS_SET_ATIME_NOW);
	bool set_mtime = a->valid & (VFS_SET_MTIME | VFS_SET_MTIME_NOW);
	struct ponyfs_inode *in = NULL;
	/* One cell: setattr_row() writes the mode, set-ID bits, owner, group,
	 * times and ctime in the inode's row in one UPDATE (costs are per
	 * cell changed, not per column or statement: seven, one for each
	 * statement it once ran, made an untar's three setattrs a file
	 * reserve ~550 WAL frames and measure the WAL every ~14 files). */
	struct ponyfs_cost c = { .rows = 1 };
	struct statx cur;
	mode_t mode;
	int r = ponyfs_fill_attr_locked(fs, ino, STATX_BASIC_STATS | STATX_BTIME, &cur);

	if (r < 0)
		return r;
	if ((a->valid & VFS_SET_SIZE) && !S_ISREG(cur.stx_mode))
		return S_ISDIR(cur.stx_mode) ? -EISDIR : -EINVAL;
	/* The size first: it stays in memory until the file's writeback, whose
	 * metadata it reserves itself. */
	if (a->valid & VFS_SET_SIZE) {
		r = ponyfs_inode_get_locked(fs, ino, &in);
		if (r >= 0)     /* an encrypted file's truncation needs its key */
			r = ponyfs_crypt_open_locked(fs, in);
		if (r >= 0)
			r = ponyfs_truncate_locked(fs, in, a->size);
	}
	/* A chmod rewrites the access ACL's xattr row, when there is one. */
	if (a->valid & VFS_SET_MODE)
		ponyfs_cost_value(&c, 4096);
	if (r >= 0)
		r = ponyfs_meta_reserve_locked(fs, &c, in);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	mode = cur.stx_mode;
	if (a->valid & VFS_SET_MODE)
		mode = (mode & ~(mode_t)07777) | (a->mode & 07777);
	if (r >= 0 && (a->valid & VFS_SET_MODE))
		r = ponyfs_acl_chmod_locked(fs, ino, a->mode);
	/* With the old group: the rule asks about it. */
	if (setattr_kills(ctx, &cur, a))
		mode &= ~ponyfs_setid_kill_bits(ctx, mode, cur.stx_gid,
						a->valid & (VFS_SET_UID | VFS_SET_GID));
	if (a->valid & VFS_SET_ATIME_NOW)
		at = now;
	if (a->valid & VFS_SET_MTIME_NOW)
		mt = now;
	if (r >= 0)
		r = setattr_row(fs, ino, mode, a->valid & VFS_SET_UID ? a->uid : cur.stx_uid,
				a->valid & VFS_SET_GID ? a->gid : cur.stx_gid, set_atime ? &at : NULL,
				set_mtime ? &mt : NULL, now);
	if (r >= 0) {
		ponyfs_ctime_note(fs, ino, now);
		if (set_atime)
			ponyfs_atime_set(fs, ino);
		if (set_mtime)
			in = in ? in : ponyfs_inode_find(fs, ino);
		if (set_mtime && in && in->size_dirty)
			in->mtime = mt;         /* writeback must not undo it */
	}
	if (in)
		ponyfs_inode_put_locked(fs, in);
	if (r < 0 || (a->valid & VFS_SET_SIZE))
		return r < 0 ? r : ponyfs_fill_attr_locked(fs, ino, STATX_BASIC_STATS | STATX_BTIME,
							   ret);
	/* The answer is what the row now holds, without reading it again (an
	 * untar makes three setattrs a file): the size and blocks did not move. */
	*ret = cur;
	ret->stx_mode = (uint16_t)mode;
	ret->stx_uid = a->valid & VFS_SET_UID ? a->uid : cur.stx_uid;
	ret->stx_gid = a->valid & VFS_SET_GID ? a->gid : cur.stx_gid;
	if (set_atime)
		ret->stx_atime = ponyfs_timestamp(at);
	if (set_mtime)
		ret->stx_mtime = ponyfs_timestamp(mt);
	ret->stx_ctime = ponyfs_timestamp(now);
	return 0;
}

static int pf_setattr(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		      const struct vfs_setattr *attr, struct statx *ret)
{
	return PONYFS_CHANGE(ponyfs_of(v), setattr_locked(ponyfs_of(v), ctx, ino, attr, ret));
}

static int pf_readlink(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, char *buf, size_t size)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_readlink_locked(ponyfs_of(v), ino, buf, size));
}

static int create_entry(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
			mode_t mode, dev_t rdev, const char *target, struct vfs_entry *ret)
{
	struct ponyfs *fs = ponyfs_of(v);
	int r;

	pthread_mutex_lock(&fs->lock);
	r = fs->shut_down ? -EIO : fs->broken ? fs->broken :
	    ponyfs_create_locked(fs, ctx, parent, name, mode, rdev, target, ret);
	if (r >= 0)
		r = commit_if_big(fs);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static int pf_mknod(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
		    mode_t mode, dev_t rdev, struct vfs_entry *ret)
{
	if (S_ISDIR(mode) || S_ISLNK(mode) || !(S_ISREG(mode) || S_ISCHR(mode) || S_ISBLK(mode) ||
						 S_ISFIFO(mode) || S_ISSOCK(mode) || !(mode & S_IFMT)))
		return -EINVAL;
	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	return create_entry(v, ctx, parent, name, mode, rdev, NULL, ret);
}

static int pf_mkdir(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
		    mode_t mode, struct vfs_entry *ret)
{
	return create_entry(v, ctx, parent, name, S_IFDIR | (mode & 07777), 0, NULL, ret);
}

static int pf_symlink(struct vfs *v, const struct vfs_ctx *ctx, const char *target,
		      uint64_t parent, const char *name, struct vfs_entry *ret)
{
	size_t len = strlen(target);

	if (!len)
		return -ENOENT;
	if (len >= 4096)
		return -ENAMETOOLONG;
	return create_entry(v, ctx, parent, name, S_IFLNK | 0777, 0, target, ret);
}

static int pf_link(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t newparent,
		   const char *newname, struct vfs_entry *ret)
{
	struct vfs_entry e;
	int r = PONYFS_CHANGE(ponyfs_of(v), ponyfs_link_locked(ponyfs_of(v), ino, newparent, newname,
						       ret ? ret : &e));

	if (r == 0 && !ret)
		VFS_FORGET(v, e.ino, 1);
	return r;
}

static int pf_unlink(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name)
{
	return PONYFS_CHANGE(ponyfs_of(v), ponyfs_remove_locked(ponyfs_of(v), parent, name, false));
}

static int pf_rmdir(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name)
{
	return PONYFS_CHANGE(ponyfs_of(v), ponyfs_remove_locked(ponyfs_of(v), parent, name, true));
}

static int pf_rename(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
		     uint64_t newparent, const char *newname, unsigned flags)
{
	return PONYFS_CHANGE(ponyfs_of(v), ponyfs_rename_locked(ponyfs_of(v), ctx, parent, name, newparent,
							 newname, flags));
}

static int open_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t ino, int flags,
		       uint64_t *ret_fh)
{
	struct ponyfs_handle *h;
	struct ponyfs_inode *in;
	struct statx x;
	int r = ponyfs_fill_attr_locked(fs, ino, 0, &x);

	if (r < 0)
		return r;
	if (S_ISDIR(x.stx_mode) && (flags & O_ACCMODE) != O_RDONLY)
		return -EISDIR;
	if ((flags & O_ACCMODE) != O_RDONLY && fs->read_only)
		return -EROFS;
	r = ponyfs_inode_get_locked(fs, ino, &in);
	if (r < 0)
		return r;
	/* An encrypted file opens only with its key (ENOKEY), as fscrypt's. */
	if (S_ISREG(x.stx_mode))
		r = ponyfs_crypt_open_locked(fs, in);
	h = r < 0 ? NULL : calloc(1, sizeof(*h));
	if (!h) {
		ponyfs_inode_put_locked(fs, in);
		return r < 0 ? r : -ENOMEM;
	}
	h->inode = in;
	h->flags = flags;
	h->opener = *ctx;
	h->next = fs->handles;
	if (h->next)
		h->next->prev = &h->next;
	h->prev = &fs->handles;
	fs->handles = h;
	in->opens++;
	if ((flags & O_ACCMODE) != O_RDONLY)
		in->writers++;
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(x.stx_mode)) {
		r = ponyfs_txn_begin_locked(fs);
		if (r >= 0)
			r = ponyfs_truncate_locked(fs, in, 0);
		if (r >= 0)
			r = ponyfs_setid_kill_locked(fs, ctx, ino, false, true);
	}
	*ret_fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int pf_open(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, int flags, uint64_t *ret_fh)
{
	return PONYFS_LOCKED(ponyfs_of(v), open_locked(ponyfs_of(v), ctx, ino, flags, ret_fh));
}

static int create_locked(struct ponyfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
			 const char *name, mode_t mode, int flags, struct vfs_entry *ret,
			 uint64_t *ret_fh)
{
	int r = ponyfs_create_locked(fs, ctx, parent, name, S_IFREG | (mode & 07777), 0, NULL, ret);

	if (r == -EEXIST && !(flags & O_EXCL))
		r = ponyfs_lookup_locked(fs, parent, name, ret);
	if (r >= 0)
		r = open_locked(fs, ctx, ret->ino, flags & ~O_CREAT, ret_fh);
	if (r >= 0)
		r = commit_if_big(fs);
	return r;
}

static int pf_create(struct vfs *v, const struct vfs_ctx *ctx, uint64_t parent, const char *name,
		     mode_t mode, int flags, struct vfs_entry *ret, uint64_t *ret_fh)
{
	return PONYFS_CHANGE(ponyfs_of(v), create_locked(ponyfs_of(v), ctx, parent, name, mode, flags, ret,
						  ret_fh));
}

static struct ponyfs_handle *handle_of(uint64_t fh)
{
	return (struct ponyfs_handle *)(uintptr_t)fh;
}

static ssize_t pf_read(struct vfs *v, uint64_t ino, uint64_t fh, void *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	return ponyfs_read(ponyfs_of(v), handle_of(fh)->inode, buf, size, (uint64_t)off, NULL);
}

static ssize_t pf_read_iov(struct vfs *v, uint64_t ino, uint64_t fh, void *buf, size_t size,
			   off_t off, struct iovec *iov, unsigned *ret_niov, void **ret_hold)
{
	struct ponyfs_read_hold *hold = calloc(1, sizeof(*hold));
	ssize_t n;

	if (off < 0 || !hold) {
		free(hold);
		return off < 0 ? -EINVAL : -ENOMEM;
	}
	n = ponyfs_read(ponyfs_of(v), handle_of(fh)->inode, buf, size, (uint64_t)off, hold);
	if (n < 0 || !hold->nref) {
		ponyfs_read_release(ponyfs_of(v), hold);
		free(hold);
		hold = NULL;
	}
	if (n < 0)
		return n;
	if (hold) {
		*ret_niov = ponyfs_read_hold_iov(hold, buf, (size_t)n, iov);
	} else {
		iov[0] = (struct iovec){ buf, (size_t)n };
		*ret_niov = n > 0;
	}
	*ret_hold = hold;
	return n;
}

static void pf_read_release(struct vfs *v, void *hold)
{
	ponyfs_read_release(ponyfs_of(v), hold);
	free(hold);
}

static ssize_t write_locked(struct ponyfs *fs, struct ponyfs_handle *h, const void *buf,
			    size_t size, off_t off)
{
	int r;

	if ((h->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	r = ponyfs_crypt_usable(h->inode);
	if (r >= 0)
		r = ponyfs_setid_kill_locked(fs, &h->opener, h->inode->ino, false, true);
	if (r < 0)
		return r;
	if (h->flags & O_APPEND)
		off = (off_t)h->inode->size;    /* the file's end now, whatever the caller saw */
	return ponyfs_write_locked(fs, h->inode, buf, size, (uint64_t)off);
}

static ssize_t pf_write(struct vfs *v, uint64_t ino, uint64_t fh, const void *buf, size_t size,
			off_t off)
{
	if (off < 0)
		return -EINVAL;
	return PONYFS_CHANGE(ponyfs_of(v), write_locked(ponyfs_of(v), handle_of(fh), buf, size, off));
}

static int fsync_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	int r = ponyfs_writeback_locked(fs, in);

	return r < 0 ? r : ponyfs_commit_locked(fs);
}

static int pf_fsync(struct vfs *v, uint64_t ino, uint64_t fh, bool datasync)
{
	return PONYFS_CHANGE(ponyfs_of(v), fsync_locked(ponyfs_of(v), handle_of(fh)->inode));
}

static int release_inode_locked(struct ponyfs *fs, struct ponyfs_handle *h)
{
	struct ponyfs_inode *in = h->inode;
	int64_t nlink = 1;
	int r = 0;

	in->opens--;
	if ((h->flags & O_ACCMODE) != O_RDONLY)
		in->writers--;
	*h->prev = h->next;
	if (h->next)
		h->next->prev = h->prev;
	free(h);
	/* A file rewritten in place is complete at its last close: queue it
	 * whole (as ext4's auto_da_alloc does, but in the same transaction). */
	if (!in->writers && in->trunc_pending)
		r = ponyfs_writeback_locked(fs, in);
	if (!in->opens) {
		int q;

		ponyfs_stream_stop_locked(fs, in);      /* its buffers: closed, no more reads */
		q = !in->orphan ? 0 : ponyfs_sql_int(fs, &nlink, "SELECT nlink FROM inodes "
						     "WHERE ino = ?1", 1, (int64_t)in->ino);
		if (q >= 0 && nlink == 0 && ponyfs_txn_begin_locked(fs) >= 0)
			return ponyfs_inode_delete_locked(fs, in->ino, false);
		ponyfs_inode_put_locked(fs, in);
		if (q < 0 && q != -ENOENT && r >= 0)
			r = q;
	}
	return r;
}

static int release_locked(struct ponyfs *fs, struct ponyfs_handle *h)
{
	bool last_crypt = h->inode->crypt.on && h->inode->opens == 1;
	int r = release_inode_locked(fs, h);

	/* The last close of an encrypted file may let a key being removed go. */
	if (last_crypt && fs->keys)
		ponyfs_keys_closed_locked(fs);
	return r;
}

static int pf_release(struct vfs *v, uint64_t ino, uint64_t fh)
{
	return PONYFS_LOCKED(ponyfs_of(v), release_locked(ponyfs_of(v), handle_of(fh)));
}

static int fallocate_locked(struct ponyfs *fs, struct ponyfs_handle *h, int mode, uint64_t off,
			    uint64_t len)
{
	struct ponyfs_inode *in = h->inode;
	uint64_t end = off + len;
	int r;

	/* As fallocate(2): a handle open for writing (so never a directory's,
	 * open_locked: a directory has no extents, rowcache.c counts on it). */
	if ((h->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (end < off || end > (1ull << 50))
		return -EFBIG;
	r = ponyfs_crypt_usable(in);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_setid_kill_locked(fs, &h->opener, in->ino, false, true);
	if (r < 0)
		return r;
	/* Zero range punches, then preallocates: the range keeps its blocks. */
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		r = ponyfs_punch_locked(fs, in, off, len);
	if (r >= 0 && !(mode & FALLOC_FL_PUNCH_HOLE))
		r = ponyfs_falloc_locked(fs, in, off, len);
	if (r >= 0 && !(mode & FALLOC_FL_KEEP_SIZE) && end > in->size)
		r = ponyfs_truncate_locked(fs, in, end);
	return r;
}

static int pf_fallocate(struct vfs *v, uint64_t ino, uint64_t fh, int mode, off_t off, off_t len)
{
	if (off < 0 || len <= 0)
		return -EINVAL;
	return PONYFS_CHANGE(ponyfs_of(v), fallocate_locked(ponyfs_of(v), handle_of(fh), mode,
						     (uint64_t)off, (uint64_t)len));
}

static int pf_opendir(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t *ret_fh)
{
	struct statx x;
	int r = PONYFS_LOCKED(ponyfs_of(v), ponyfs_fill_attr_locked(ponyfs_of(v), ino, 0, &x));

	if (r >= 0 && !S_ISDIR(x.stx_mode))
		r = -ENOTDIR;
	/* An open directory is a handle like an open file's, so one removed
	 * or renamed over while open stays an orphan until closed (fstat
	 * works on it, as generic/035 checks). */
	if (r >= 0)
		r = PONYFS_LOCKED(ponyfs_of(v), open_locked(ponyfs_of(v), ctx, ino, O_RDONLY, ret_fh));
	return r;
}

#define READDIR_BATCH 256

/* Batches of entries read under the lock, handed to fill or fill_plus without it. */
static int readdir_batches(struct vfs *v, uint64_t ino, uint64_t cookie, vfs_filldir_t fill,
			   vfs_filldirplus_t fill_plus, void *data)
{
	struct ponyfs_dirent *d = malloc(READDIR_BATCH * sizeof(*d));
	int n, r = 0;

	if (!d)
		return -ENOMEM;
	do {
		n = PONYFS_LOCKED(ponyfs_of(v), ponyfs_readdir_locked(ponyfs_of(v), ino, cookie, d,
							       READDIR_BATCH, fill_plus != NULL));
		for (int i = 0; i < n; i++) {
			struct vfs_entry e = { .ino = d[i].ino, .attr = d[i].attr };

			if (fill_plus && d[i].cookie <= 2)     /* "." and "..": no attributes */
				e.attr = (struct statx){ .stx_ino = d[i].ino, .stx_mode = DTTOIF(d[i].type) };
			if (!r)
				r = fill_plus ? fill_plus(data, d[i].name, &e, d[i].cookie) :
						fill(data, d[i].name, d[i].ino, d[i].type, d[i].cookie);
			cookie = d[i].cookie;
			free(d[i].name);
		}
	} while (n == READDIR_BATCH && !r);
	free(d);
	if (n < 0)
		return n;
	return r < 0 ? r : 0;
}

static int pf_readdir(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
		      uint64_t cookie, vfs_filldir_t fill, void *data)
{
	return readdir_batches(v, ino, cookie, fill, NULL, data);
}

static int pf_readdirplus(struct vfs *v, const struct vfs_ctx *ctx, uint64_t ino, uint64_t fh,
			  uint64_t cookie, vfs_filldirplus_t fill, void *data)
{
	return readdir_batches(v, ino, cookie, NULL, fill, data);
}

static int pf_releasedir(struct vfs *v, uint64_t ino, uint64_t fh)
{
	return PONYFS_LOCKED(ponyfs_of(v), release_locked(ponyfs_of(v), handle_of(fh)));
}

static int pf_fsyncdir(struct vfs *v, uint64_t ino, uint64_t fh, bool datasync)
{
	return PONYFS_CHANGE(ponyfs_of(v), ponyfs_commit_locked(ponyfs_of(v)));
}

static int pf_statfs(struct vfs *v, uint64_t ino, struct statvfs *ret)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_statfs_locked(ponyfs_of(v), ret));
}

static int syncfs_locked(struct ponyfs *fs)
{
	int r = ponyfs_writeback_all_locked(fs, false);

	return r < 0 ? r : ponyfs_commit_locked(fs);
}

static int pf_syncfs(struct vfs *v)
{
	return PONYFS_CHANGE(ponyfs_of(v), syncfs_locked(ponyfs_of(v)));
}

/* Rule 4: the data joins the open transaction; whatever commits later
 * commits after it. Nothing here waits for the disk. */
static int pf_barrier(struct vfs *v, uint64_t ino, uint64_t fh)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct ponyfs_inode *in;
	int r;

	pthread_mutex_lock(&fs->lock);
	in = fh != VFS_NO_FH ? handle_of(fh)->inode : ponyfs_inode_find(fs, ino);
	r = in ? ponyfs_writeback_locked(fs, in) : 0;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static int layout_locked(struct ponyfs *fs, uint64_t ino, uint64_t off, uint64_t len,
			 struct vfs_extent *ret, size_t n)
{
	sqlite3_stmt *s = NULL;
	size_t k = 0;
	int r = ponyfs_prepare(fs,
		"SELECT foff, nblocks, pblock, flags FROM extents WHERE ino = ?1 AND foff + nblocks > ?2 "
		"AND foff < ?3 ORDER BY foff", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)(off / BS));
	sqlite3_bind_int64(s, 3, (int64_t)DIV_ROUND_UP(off + len, BS));
	while (k < n && (r = ponyfs_step_row(fs, s)) > 0) {
		ret[k] = (struct vfs_extent){
			.file_offset = (uint64_t)sqlite3_column_int64(s, 0) * BS,
			.length = (uint64_t)sqlite3_column_int64(s, 1) * BS,
			.device_offset = (uint64_t)sqlite3_column_int64(s, 2) * BS,
			.flags = sqlite3_column_int64(s, 3) & PONYFS_EXT_UNWRITTEN ? VFS_EXTENT_UNWRITTEN : 0,
		};
		memcpy(ret[k].device_uuid, fs->sb.uuid, 16);
		k++;
	}
	sqlite3_reset(s);
	return r < 0 ? r : (int)k;
}

/* Where committed or written-back bytes live on the data region (pNFS-style). */
static int pf_layout(struct vfs *v, uint64_t ino, uint64_t off, uint64_t len,
		     struct vfs_extent *ret, size_t n)
{
	return PONYFS_LOCKED(ponyfs_of(v), layout_locked(ponyfs_of(v), ino, off, len, ret, n));
}

void ponyfs_destroy(struct vfs *v);

const struct vfs_ops ponyfs_ops = {
	.version = VFS_OPS_VERSION,
	.name = "ponyfs",
	.destroy = ponyfs_destroy,
	.lookup = pf_lookup,
	.statx = pf_statx,
	.setattr = pf_setattr,
	.readlink = pf_readlink,
	.mknod = pf_mknod,
	.mkdir = pf_mkdir,
	.symlink = pf_symlink,
	.link = pf_link,
	.unlink = pf_unlink,
	.rmdir = pf_rmdir,
	.rename = pf_rename,
	.open = pf_open,
	.create = pf_create,
	.read = pf_read,
	.read_iov = pf_read_iov,
	.read_release = pf_read_release,
	.read_parallel = true,
	.write = pf_write,
	.fsync = pf_fsync,
	.release = pf_release,
	.fallocate = pf_fallocate,
	.opendir = pf_opendir,
	.readdir = pf_readdir,
	.readdirplus = pf_readdirplus,
	.releasedir = pf_releasedir,
	.fsyncdir = pf_fsyncdir,
	.getxattr = ponyfs_getxattr,
	.setxattr = ponyfs_setxattr,
	.listxattr = ponyfs_listxattr,
	.removexattr = ponyfs_removexattr,
	.statfs = pf_statfs,
	.syncfs = pf_syncfs,
	.barrier = pf_barrier,
	.layout = pf_layout,
	.shutdown = ponyfs_shutdown,
	.counters = ponyfs_counters,
	.set_policy = ponyfs_set_policy,
	.get_policy = ponyfs_get_policy,
	.get_nonce = ponyfs_get_nonce,
	.add_key = ponyfs_add_key,
	.remove_key = ponyfs_remove_key,
	.key_status = ponyfs_key_status,
	.crypt_salt = ponyfs_crypt_salt,
	.layout_map = ponyfs_layout_map,
	.layout_topology = ponyfs_layout_topology,
	.layout_lease = ponyfs_layout_lease,
	.layout_recall_watch = ponyfs_layout_recall_watch,
	.layout_write = ponyfs_layout_write,
	.layout_commit = ponyfs_layout_commit,
	.resolve = ponyfs_resolve,
	.badblock = ponyfs_badblock,
	.scrub = ponyfs_scrub,
};
