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
#include "pony/volume_repair.h"

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

int ponyfs_region_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct bdev *lower = ponyfs_gate_lower(b);

	if (!lower)
		return bdev_pread(b, buf, len, off);    /* shut down: the gate's error */
	if (lower->ops != &region_ops)
		return bdev_pread(b, buf, len, off);
	return volume_read_checked(((struct region *)lower)->v, buf, len,
				   ((struct region *)lower)->start + off);
}

/*
 * A block (BS bytes at off) that failed its checksum: each member is left
 * out of a read in turn until the data matches crc; that member is then
 * rewritten from the others and buf holds the good data. Returns the
 * member repaired; -EOPNOTSUPP when b is not a volume region or has no
 * redundancy; -EBADMSG when no copy or reconstruction matches.
 */
int ponyfs_region_repair(struct bdev *b, void *buf, uint64_t off, uint32_t crc)
{
	struct region *rg = (struct region *)b;
	unsigned n;
	int r = -EOPNOTSUPP;

	if (b->ops != &region_ops)
		return -EOPNOTSUPP;
	n = volume_members_at(rg->v, rg->start + off);
	for (unsigned m = 0; m < n; m++) {
		r = volume_read_without(rg->v, m, buf, BS, rg->start + off);
		if (r == -EOPNOTSUPP)
			return r;
		if (r < 0 || util_crc32c(0, buf, BS) != crc)
			continue;
		r = volume_rewrite_member(rg->v, m, rg->start + off, BS);
		return r < 0 ? r : (int)m;
	}
	return -EBADMSG;
}
