/*
 * mem.c - a bdev in memory, for tests and benchmarks: members of a RAID that
 * can be failed, inspected and compared byte for byte without touching disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/bdev.h"

struct bdev_mem {
	struct bdev b;
	uint8_t *data;
};

static int mem_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	memcpy(buf, ((struct bdev_mem *)b)->data + off, len);
	return 0;
}

static int mem_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	memcpy(((struct bdev_mem *)b)->data + off, buf, len);
	return 0;
}

static int mem_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	memset(((struct bdev_mem *)b)->data + off, 0, len);
	return 0;
}

static void mem_free(struct bdev *b)
{
	free(((struct bdev_mem *)b)->data);
	free(b);
}

static const struct bdev_ops mem_ops = {
	.name = "mem",
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.discard = mem_discard,
	.free = mem_free,
};

int bdev_mem_new(uint64_t size, struct bdev **ret)
{
	struct bdev_mem *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->data = calloc(1, size ? size : 1);
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	m->b.ops = &mem_ops;
	m->b.size = size;
	m->b.block_size = 512;
	snprintf(m->b.name, sizeof(m->b.name), "mem");
	*ret = &m->b;
	return 0;
}
