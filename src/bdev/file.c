/*
 * file.c - a bdev on a regular file or a block device: image files are
 * pony's disks as much as real drives are. Sizes come from stat or the
 * BLKGETSIZE64 ioctl; discard punches holes in files and issues BLKDISCARD
 * on devices. bdev_pwrite_direct() goes through a second, O_DIRECT
 * descriptor of the same file, opened on first use: bulk data then goes
 * from the caller's pages to the device without a copy into the host's
 * page cache (which was most of a FUSE file system's CPU time on a
 * sequential write); bdev_pread_direct() reads through it too (an
 * encrypted file's ciphertext, of no use in the cache). bdev_advise()
 * asks the kernel to read a range into the page cache ahead of a
 * sequential reader (POSIX_FADV_WILLNEED), or to drop what it has read
 * (POSIX_FADV_DONTNEED).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "pony/acall.h"
#include "pony/bdev.h"
#include "pony/util.h"

struct bdev_file {
	struct bdev b;
	int fd;
	bool is_blockdev;
	bool buffered;                  /* fd is not O_DIRECT: reads may come from the page cache */
	struct acall_ring *ring;        /* NULL: plain syscalls */
	pthread_mutex_t direct_lock;    /* opening direct_fd */
	int direct_fd;                  /* O_DIRECT, for pwrite_direct; see DIRECT_* */
};

enum { DIRECT_UNTRIED = -1, DIRECT_NONE = -2 };    /* direct_fd with no descriptor */

static int fd_pread(int fd, void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)             /* the file shrank under us */
			return -EIO;
		buf = (uint8_t *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int file_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return fd_pread(((struct bdev_file *)b)->fd, buf, len, off);
}

static int fd_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int file_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return fd_pwrite(((struct bdev_file *)b)->fd, buf, len, off);
}

/* The O_DIRECT descriptor, opened on first use; -1 when the file has none
 * (opened read-only, or a file system without O_DIRECT, such as tmpfs). */
static int direct_fd(struct bdev_file *f)
{
	int fd = __atomic_load_n(&f->direct_fd, __ATOMIC_ACQUIRE);
	char path[64];
	int fl;

	if (fd != DIRECT_UNTRIED)
		return fd < 0 ? -1 : fd;
	pthread_mutex_lock(&f->direct_lock);
	fd = f->direct_fd;
	if (fd == DIRECT_UNTRIED) {
		fl = fcntl(f->fd, F_GETFL);
		fd = DIRECT_NONE;
		if (fl >= 0 && (fl & O_DIRECT))
			fd = dup(f->fd);
		else if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY) {
			/* A new open file description: O_DIRECT must not reach f->fd's. */
			snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
			fd = open(path, (fl & O_ACCMODE) | O_DIRECT | O_CLOEXEC);
		}
		if (fd < 0)
			fd = DIRECT_NONE;
		__atomic_store_n(&f->direct_fd, fd, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&f->direct_lock);
	return fd < 0 ? -1 : fd;
}

/* The O_DIRECT descriptor for an I/O of buf, len, off; -1 when they are
 * not BDEV_DIRECT_ALIGN-aligned or the file has none. */
static int direct_fd_for(struct bdev_file *f, const void *buf, size_t len, uint64_t off)
{
	if ((uintptr_t)buf % BDEV_DIRECT_ALIGN || len % BDEV_DIRECT_ALIGN || off % BDEV_DIRECT_ALIGN)
		return -1;
	return direct_fd(f);
}

static int file_pwrite_direct(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct bdev_file *f = (struct bdev_file *)b;
	int fd = direct_fd_for(f, buf, len, off);
	int r;

	if (fd < 0)
		return fd_pwrite(f->fd, buf, len, off);
	r = fd_pwrite(fd, buf, len, off);
	if (r == -EINVAL)       /* an alignment the file system wants larger: as a plain write */
		r = fd_pwrite(f->fd, buf, len, off);
	return r;
}

/* As file_pwrite_direct(), for reads: 1 when it went around the page
 * cache, 0 when (unaligned, no O_DIRECT here) it was a plain pread. */
static int file_pread_direct(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct bdev_file *f = (struct bdev_file *)b;
	int fd = direct_fd_for(f, buf, len, off);
	int r;

	if (fd >= 0) {
		r = fd_pread(fd, buf, len, off);
		if (r != -EINVAL)       /* else an alignment the file system wants larger */
			return r < 0 ? r : 1;
	}
	return fd_pread(f->fd, buf, len, off);
}

/*
 * Starts the kernel's read of the range into the page cache; no wait. One
 * WILLNEED reads no more than the file's readahead window (the kernel's
 * force_page_cache_ra() caps it: 8 MiB of a 32 MiB hint reached the cache
 * here), so the range goes in pieces well under any such window.
 */
#define FILE_RA_PIECE (2ull << 20)

static int file_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	int fd = ((struct bdev_file *)b)->fd, r = 0;

	/* Dropping has no window: one call. Pages another reader still
	 * uses are read again from the disk, never wrong. */
	if (advice == BDEV_DONTNEED)
		return -posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	for (uint64_t at = 0; at < len && !r; at += FILE_RA_PIECE)
		r = posix_fadvise(fd, (off_t)(off + at), (off_t)MIN(FILE_RA_PIECE, len - at),
				  POSIX_FADV_WILLNEED);
	return -r;
}

static int file_flush(struct bdev *b)
{
	return fdatasync(((struct bdev_file *)b)->fd) < 0 ? -errno : 0;
}

static int file_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	struct bdev_file *f = (struct bdev_file *)b;
	uint64_t range[2] = { off, len };

	if (f->is_blockdev)
		return ioctl(f->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return -errno;
	return 0;
}

static void file_free(struct bdev *b)
{
	struct bdev_file *f = (struct bdev_file *)b;

	if (f->direct_fd >= 0)
		close(f->direct_fd);
	pthread_mutex_destroy(&f->direct_lock);
	close(f->fd);
	free(b);
}

static const struct bdev_ops file_ops = {
	.name = "file",
	.pread = file_pread,
	.pwrite = file_pwrite,
	.flush = file_flush,
	.discard = file_discard,
	.free = file_free,
	.pwrite_direct = file_pwrite_direct,
	.advise = file_advise,
	.pread_direct = file_pread_direct,
};

/* Through the ring: one op per call; a short count is an I/O error (ranges are checked). */
static int ring_rw(struct bdev_file *f, bool write, void *buf, size_t len, uint64_t off)
{
	struct acall_op *op = acall_get_op(f->ring);
	int64_t r;

	if (!op)
		return -ENOMEM;
	if (write)
		acall_prep_write(op, f->fd, buf, len, off);
	else
		acall_prep_read(op, f->fd, buf, len, off);
	r = acall_run(f->ring, op);
	if (r >= 0 && (size_t)r != len)        /* finish a short transfer the plain way */
		return write ? file_pwrite(&f->b, (uint8_t *)buf + r, len - (size_t)r, off + (uint64_t)r)
			     : file_pread(&f->b, (uint8_t *)buf + r, len - (size_t)r, off + (uint64_t)r);
	return r < 0 ? (int)r : 0;
}

static int ring_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return ring_rw((struct bdev_file *)b, false, buf, len, off);
}

static int ring_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return ring_rw((struct bdev_file *)b, true, (void *)buf, len, off);
}

static int ring_flush(struct bdev *b)
{
	struct bdev_file *f = (struct bdev_file *)b;
	struct acall_op *op = acall_get_op(f->ring);

	if (!op)
		return -ENOMEM;
	acall_prep_fdatasync(op, f->fd);
	return (int)acall_run(f->ring, op);
}

static void ring_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct bdev_io *io = arg;
	int64_t r = acall_op_result(op);

	if (r >= 0 && (io->op == BDEV_READ || io->op == BDEV_WRITE) && (size_t)r != io->len)
		r = -EIO;               /* a short transfer inside the checked range */
	io->result = r < 0 ? (int)r : 0;
	if (io->done)
		io->done(io);
}

/*
 * A read the page cache holds whole is copied here and now (preadv2 with
 * RWF_NOWAIT), completing in the submitter's thread. Handed to the ring,
 * it would come back through the reaper thread, a wake-up and a context
 * switch a piece: that cost a batch of page-cache reads (raid_read_span.c)
 * a third of its speed (`pony vol read` of a RAID6 on cached images, 3.9
 * GB/s against 5.5 read piece by piece). A read that would wait for the
 * disk, or that the cache holds only in part, goes to the ring as before,
 * so cold reads on several members still overlap. Not on an O_DIRECT
 * descriptor, where RWF_NOWAIT would issue the I/O and wait for it.
 */
static bool read_from_cache(struct bdev_file *f, struct bdev_io *io)
{
	struct iovec v = { .iov_base = io->buf, .iov_len = io->len };

	return f->buffered && io->op == BDEV_READ &&
	       preadv2(f->fd, &v, 1, (off_t)io->off, RWF_NOWAIT) == (ssize_t)io->len;
}

static void ring_submit(struct bdev *b, struct bdev_io *io)
{
	struct bdev_file *f = (struct bdev_file *)b;
	struct acall_op *op;
	int r;

	if (read_from_cache(f, io)) {
		io->result = 0;
		if (io->done)
			io->done(io);
		return;
	}
	if (io->op == BDEV_DISCARD || !(op = acall_get_op(f->ring))) {
		io->result = io->op == BDEV_DISCARD ? file_discard(b, io->off, io->len) : -ENOMEM;
		if (io->done)
			io->done(io);
		return;
	}
	if (io->op == BDEV_READ)
		acall_prep_read(op, f->fd, io->buf, io->len, io->off);
	else if (io->op == BDEV_WRITE)
		acall_prep_write(op, f->fd, io->buf, io->len, io->off);
	else
		acall_prep_fdatasync(op, f->fd);
	acall_op_set_callback(op, ring_done, io);
	r = acall_submit(f->ring);
	if (r < 0) {
		acall_op_done(f->ring, op);
		io->result = r;
		if (io->done)
			io->done(io);
	}
}

static const struct bdev_ops file_ring_ops = {
	.name = "file",
	.pread = ring_pread,
	.pwrite = ring_pwrite,
	.flush = ring_flush,
	.discard = file_discard,
	.free = file_free,
	.submit = ring_submit,
	.pwrite_direct = file_pwrite_direct,
	.advise = file_advise,
	.pread_direct = file_pread_direct,
};

int bdev_file_open_ring(const char *path, int flags, struct acall_ring *ring, struct bdev **ret)
{
	struct bdev *b;
	int r = bdev_file_open(path, flags, &b);

	if (r < 0)
		return r;
	if (ring) {
		((struct bdev_file *)b)->ring = ring;
		b->ops = &file_ring_ops;
	}
	*ret = b;
	return 0;
}

int bdev_file_open(const char *path, int flags, struct bdev **ret)
{
	_cleanup_(closep) int fd = open(path, flags | O_CLOEXEC);
	struct bdev_file *f;
	struct stat st;
	uint64_t size;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0)
			return -errno;
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		return -ENOTBLK;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->b.ops = &file_ops;
	f->b.size = size;
	f->b.block_size = 512;
	f->is_blockdev = S_ISBLK(st.st_mode);
	f->buffered = !(flags & O_DIRECT);
	snprintf(f->b.name, sizeof(f->b.name), "%s", path);
	f->fd = TAKE_FD(fd);
	f->direct_fd = DIRECT_UNTRIED;
	pthread_mutex_init(&f->direct_lock, NULL);
	*ret = &f->b;
	return 0;
}
