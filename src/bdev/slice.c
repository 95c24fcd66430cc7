/*
 * slice.c - a byte range of another bdev as a bdev of its own: both ponyfs
 * regions on one image, a volume's filesystem regions. Every op goes to
 * the parent at the slice's offset, the redundancy ops too, so a checked
 * read or a checksum repair reaches the volume under any stack of slices.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pony/bdev.h"

struct slice {
	struct bdev b;
	struct bdev *parent;
	uint64_t off;
	bool own;                       /* the parent goes with the slice */
};

static struct slice *slice_of(struct bdev *b)
{
	return (struct slice *)b;
}

static int slice_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return bdev_pread(slice_of(b)->parent, buf, len, slice_of(b)->off + off);
}

static int slice_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return bdev_pwrite(slice_of(b)->parent, buf, len, slice_of(b)->off + off);
}

static int slice_pwrite_direct(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return bdev_pwrite_direct(slice_of(b)->parent, buf, len, slice_of(b)->off + off);
}

static int slice_pread_direct(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return bdev_pread_direct(slice_of(b)->parent, buf, len, slice_of(b)->off + off);
}

static int slice_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	return bdev_advise(slice_of(b)->parent, slice_of(b)->off + off, len, advice);
}

static int slice_flush(struct bdev *b)
{
	return bdev_flush(slice_of(b)->parent);
}

static int slice_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	return bdev_discard(slice_of(b)->parent, slice_of(b)->off + off, len);
}

static int slice_map(struct bdev *b, uint64_t off, size_t len, void **ret_ptr)
{
	return bdev_map(slice_of(b)->parent, slice_of(b)->off + off, len, ret_ptr);
}

static int slice_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return bdev_read_checked(slice_of(b)->parent, buf, len, slice_of(b)->off + off);
}

static int slice_repair(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	return bdev_repair(slice_of(b)->parent, buf, len, slice_of(b)->off + off, crc);
}

static void slice_free(struct bdev *b)
{
	if (slice_of(b)->own)
		bdev_free(slice_of(b)->parent);
	free(b);
}

static const struct bdev_ops slice_ops = {
	.name = "slice",
	.pread = slice_pread,
	.pwrite = slice_pwrite,
	.flush = slice_flush,
	.discard = slice_discard,
	.free = slice_free,
	.map = slice_map,
	.read_checked = slice_read_checked,
	.repair = slice_repair,
	.pwrite_direct = slice_pwrite_direct,
	.advise = slice_advise,
	.pread_direct = slice_pread_direct,
};

int bdev_slice_new(struct bdev *parent, uint64_t off, uint64_t len, bool own, const char *name,
		   struct bdev **ret)
{
	struct slice *s;

	if (off > bdev_size(parent) || len > bdev_size(parent) - off || off % 512 || len % 512)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->b.ops = &slice_ops;
	s->b.size = len;
	s->b.block_size = parent->block_size;
	snprintf(s->b.name, sizeof(s->b.name), "%s", name ? name : parent->name);
	s->parent = parent;
	s->off = off;
	s->own = own;
	*ret = &s->b;
	return 0;
}
