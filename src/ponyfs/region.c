/*
 * region.c - a ponyfs region of a pony volume as a bdev: the metadata or
 * data region the volume laid out for the filesystem (volume.h, "the
 * filesystem RAID API"), read and written through the volume, so mirrors
 * and parity stay in step and a bad copy is read from redundancy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "pony/volume.h"

struct region {
	struct bdev b;
	struct volume *v;               /* not owned */
	uint64_t start;
};

static int region_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct region *r = (struct region *)b;

	return volume_read(r->v, buf, len, r->start + off);
}

static int region_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct region *r = (struct region *)b;

	return volume_write(r->v, buf, len, r->start + off);
}

static int region_flush(struct bdev *b)
{
	return volume_flush(((struct region *)b)->v);
}

static void region_free(struct bdev *b)
{
	free(b);
}

static const struct bdev_ops region_ops = {
	.name = "ponyfs-region",
	.pread = region_pread,
	.pwrite = region_pwrite,
	.flush = region_flush,
	.free = region_free,
};

int ponyfs_volume_region(struct volume *v, int cls, struct bdev **ret)
{
	uint64_t start, len, stripe;
	struct region *r;
	int e = volume_region_find(v, (enum volume_region_class)cls, &start, &len, &stripe);

	if (e < 0)
		return e;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->b.ops = &region_ops;
	r->b.size = len;
	r->b.block_size = 512;
	snprintf(r->b.name, sizeof(r->b.name), "volume-%s", cls == VOLUME_CLASS_METADATA ? "meta" : "data");
	r->v = v;
	r->start = start;
	*ret = &r->b;
	return 0;
}
