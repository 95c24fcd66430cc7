/*
 * file.c - a bdev on a regular file or a block device: image files are
 * pony's disks as much as real drives are. Sizes come from stat or the
 * BLKGETSIZE64 ioctl; discard punches holes in files and issues BLKDISCARD
 * on devices.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "pony/bdev.h"
#include "pony/util.h"

struct bdev_file {
	struct bdev b;
	int fd;
	bool is_blockdev;
};

static int file_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct bdev_file *f = (struct bdev_file *)b;

	while (len) {
		ssize_t n = pread(f->fd, buf, len, (off_t)off);

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

static int file_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct bdev_file *f = (struct bdev_file *)b;

	while (len) {
		ssize_t n = pwrite(f->fd, buf, len, (off_t)off);

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
	close(((struct bdev_file *)b)->fd);
	free(b);
}

static const struct bdev_ops file_ops = {
	.name = "file",
	.pread = file_pread,
	.pwrite = file_pwrite,
	.flush = file_flush,
	.discard = file_discard,
	.free = file_free,
};

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
	snprintf(f->b.name, sizeof(f->b.name), "%s", path);
	f->fd = TAKE_FD(fd);
	*ret = &f->b;
	return 0;
}
