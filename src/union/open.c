/*
 * open.c - the union's open files. An open reads and writes the layer that
 * holds the node's data: the upper, else the top lower (an open for writing
 * copies up first). A lower file held open while another open copies it up
 * must then show the upper's data, as the kernel's overlayfs does (it finds
 * the real file again on every read, since 4.19): so an open's handle is
 * looked at on every use, and a lower one is replaced by an upper one once
 * the node has an upper (union_node_set_upper_locked()).
 *
 * Other threads may be reading through the old handle at the moment of the
 * swap: a handle is immutable once published, the file's pointer to it is
 * swapped atomically under u->lock, and replaced handles stay open (chained
 * from the new one) until the file is released. So a data_fd borrowed from a
 * handle stays valid until release, as the vfs promises.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>

#include "internal.h"
#include "pony/util.h"

/* One layer's open file; never changed once published in a union_file. */
struct union_handle {
	struct vfs *fs;                 /* the layer's instance */
	uint64_t ino, fh;               /* its inode and handle */
	struct union_handle *replaced;  /* the handle this one replaced, kept open */
};

/* An open file of the union: its node (one reference held) and handle. */
struct union_file {
	struct union_node *n;
	int flags;                      /* the open's, for reopening on the upper */
	_Atomic(struct union_handle *) h;
	struct union_file *prev, *next; /* u->files, under u->lock */
};

#define FILE_OF(fh) ((struct union_file *)(uintptr_t)(fh))

/*
 * The handle to use now: the upper's once the node has one. Reopening there
 * drops the flags that acted at the first open (O_TRUNC, O_CREAT, O_EXCL):
 * a lower open is for reading, and its data must stay what the upper has.
 * If the upper cannot be opened the lower handle goes on serving.
 */
static struct union_handle *handle_switch(struct union_fs *u, struct union_file *f)
{
	struct union_handle *h, *nh;
	int r;

	pthread_mutex_lock(&u->lock);
	h = atomic_load_explicit(&f->h, memory_order_relaxed);
	if (h->fs != u->upper && f->n->upper && (nh = malloc(sizeof(*nh)))) {
		*nh = (struct union_handle){ .fs = u->upper, .ino = f->n->upper, .replaced = h };
		r = VFS_CALL(u->upper, open, &u->root_ctx, nh->ino,
			     f->flags & ~(O_TRUNC | O_CREAT | O_EXCL), &nh->fh);
		if (r == 0) {
			atomic_store_explicit(&f->h, nh, memory_order_release);
			h = nh;
		} else {
			free(nh);
		}
	}
	pthread_mutex_unlock(&u->lock);
	return h;
}

static struct union_handle *file_handle(struct union_fs *u, uint64_t fh)
{
	struct union_file *f = FILE_OF(fh);
	struct union_handle *h = atomic_load_explicit(&f->h, memory_order_acquire);

	if (h->fs == u->upper || !atomic_load_explicit(&f->n->copied_up, memory_order_acquire))
		return h;
	return handle_switch(u, f);
}

/* The layer's hook on fh's handle of now. */
#define HANDLE_CALL(fs, fh, hook, ...) ({ \
	struct union_handle *_h = file_handle(union_of(fs), (fh)); \
	VFS_CALL(_h->fs, hook, _h->ino, _h->fh, ##__VA_ARGS__); })

/* fh's upper handle, for hooks that take one; VFS_NO_FH when it has none. */
uint64_t union_file_upper_fh_locked(struct union_fs *u, uint64_t fh)
{
	struct union_handle *h;

	if (fh == VFS_NO_FH)
		return VFS_NO_FH;
	h = atomic_load_explicit(&FILE_OF(fh)->h, memory_order_acquire);
	return h->fs == u->upper ? h->fh : VFS_NO_FH;
}

static int file_new_locked(struct union_fs *u, struct union_node *n, int flags, struct vfs *fs,
			   uint64_t ino, uint64_t fh, uint64_t *ret_fh)
{
	struct union_file *f = malloc(sizeof(*f));
	struct union_handle *h = malloc(sizeof(*h));

	if (!f || !h) {
		free(f);
		free(h);
		VFS_CALL(fs, release, ino, fh);
		return -ENOMEM;
	}
	*h = (struct union_handle){ .fs = fs, .ino = ino, .fh = fh };
	*f = (struct union_file){ .n = n, .flags = flags, .next = u->files };
	atomic_init(&f->h, h);
	if (u->files)
		u->files->prev = f;
	u->files = f;
	n->refs++;              /* the node outlives FUSE's forget while open */
	*ret_fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static bool opens_for_change(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int open_locked(struct union_fs *u, uint64_t ino, int flags, uint64_t *ret_fh)
{
	struct union_node *n = union_node_get(u, ino);
	struct vfs *fs;
	uint64_t lino, fh;
	int r = u->stale ? -ESTALE : 0;

	if (r == 0 && opens_for_change(flags))
		r = union_copy_up_data_unlocked(u, n);
	if (r < 0)
		return r;
	fs = n->upper ? u->upper : u->lowers[n->lower[0].layer];
	lino = n->upper ? n->upper : n->lower[0].ino;
	/* Opened under the lock: a concurrent copy-up drops the lower reference. */
	r = VFS_CALL(fs, open, &u->root_ctx, lino, flags, &fh);
	return r < 0 ? r : file_new_locked(u, n, flags, fs, lino, fh, ret_fh);
}

int union_open(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, int flags,
	       uint64_t *ret_fh)
{
	struct union_fs *u = union_of(fs);
	int r;

	pthread_mutex_lock(&u->lock);
	r = open_locked(u, ino, flags, ret_fh);
	pthread_mutex_unlock(&u->lock);
	return r;
}

int union_create(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t parent,
		 const char *name, mode_t mode, int flags, struct vfs_entry *ret,
		 uint64_t *ret_fh)
{
	struct union_fs *u = union_of(fs);
	struct union_node *n;
	struct vfs_ctx mapped;
	uint64_t fh;
	int r;

	ctx = union_idmap_ctx(u, ctx, &mapped);
	pthread_mutex_lock(&u->lock);
	r = union_create_locked(u, ctx, union_node_get(u, parent), name, mode, flags, ret, &fh);
	if (r == 0) {
		n = union_node_get(u, ret->ino);
		r = file_new_locked(u, n, flags, u->upper, n->upper, fh, ret_fh);
		if (r < 0)
			union_node_unref_locked(u, n, 1);
	}
	pthread_mutex_unlock(&u->lock);
	return r;
}

int union_file_statx(struct union_fs *u, const struct vfs_ctx *ctx, uint64_t fh,
		     unsigned flags, unsigned mask, struct statx *ret)
{
	struct union_handle *h = file_handle(u, fh);
	int r = VFS_CALL(h->fs, statx, ctx, h->ino, h->fh, flags, mask, ret);

	if (r == 0) {
		pthread_mutex_lock(&u->lock);
		union_fix_attr(u, FILE_OF(fh)->n, ret);
		pthread_mutex_unlock(&u->lock);
	}
	return r;
}

ssize_t union_read(struct vfs *fs, uint64_t ino, uint64_t fh, void *buf, size_t size,
		   off_t offset)
{
	return HANDLE_CALL(fs, fh, read, buf, size, offset);
}

int union_data_fd(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return HANDLE_CALL(fs, fh, data_fd);
}

/* A lower file's opens change host file at copy-up; the upper's never do. */
bool union_data_fd_stable(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return file_handle(union_of(fs), fh)->fs == union_of(fs)->upper;
}

ssize_t union_write(struct vfs *fs, uint64_t ino, uint64_t fh, const void *buf, size_t size,
		    off_t offset)
{
	return HANDLE_CALL(fs, fh, write, buf, size, offset);
}

int union_flush(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return HANDLE_CALL(fs, fh, flush);
}

int union_fsync(struct vfs *fs, uint64_t ino, uint64_t fh, bool datasync)
{
	if (union_of(fs)->flags & UNION_NO_FSYNC)
		return 0;       /* volatile: a crash may lose what was written */
	return HANDLE_CALL(fs, fh, fsync, datasync);
}

int union_barrier(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	return HANDLE_CALL(fs, fh, barrier);
}

int union_fallocate(struct vfs *fs, uint64_t ino, uint64_t fh, int mode, off_t offset,
		    off_t length)
{
	struct union_handle *h = file_handle(union_of(fs), fh);

	if (h->fs != union_of(fs)->upper)
		return -EBADF;
	return VFS_CALL(h->fs, fallocate, h->ino, h->fh, mode, offset, length);
}

/* Releases every handle the file had (the first error is returned). */
int union_release(struct vfs *fs, uint64_t ino, uint64_t fh)
{
	struct union_fs *u = union_of(fs);
	struct union_file *f = FILE_OF(fh);
	struct union_handle *h = atomic_load_explicit(&f->h, memory_order_acquire), *next;
	int r = 0, q;

	for (; h; h = next) {
		next = h->replaced;
		q = VFS_CALL(h->fs, release, h->ino, h->fh);
		if (r == 0)
			r = q;
		free(h);
	}
	pthread_mutex_lock(&u->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		u->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	union_node_unref_locked(u, f->n, 1);
	pthread_mutex_unlock(&u->lock);
	free(f);
	return r;
}

/*
 * Files still open when the union goes away: the kernel drops the RELEASEs
 * still queued when a FUSE mount ends (they are background requests), so
 * without this their handles, and the layers' files, were never closed.
 */
void union_files_release_all(struct union_fs *u)
{
	while (u->files)
		union_release(&u->vfs, 0, (uint64_t)(uintptr_t)u->files);
}
