/*
 * fsck_overlay.c - a bdev whose writes stay in memory, over a base that is
 * only read. SQLite writes even when asked only to read: it replays a WAL
 * left by a crash and checkpoints it at close. fsck -n opens the database
 * on an overlay, so those writes are seen by the check and never reach the
 * disk; fsck's mirror comparison opens each copy the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

#define PAGE 4096u

struct opage {
	uint64_t index;                 /* byte offset / PAGE */
	uint8_t *data;
};

struct overlay {
	struct bdev b;
	struct bdev *base;              /* not owned */
	struct opage *pages;            /* sorted by index */
	size_t n, cap;
};

/* Position in o->pages of the first page with index >= i. */
static size_t page_pos(const struct overlay *o, uint64_t i)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->pages[mid].index < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Bytes [off, off+len) of the base; zeros where the base ends. */
static int base_read(struct overlay *o, uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t have = bdev_size(o->base) > off ? MIN(bdev_size(o->base) - off, len) : 0;

	memset(buf + have, 0, len - have);
	return have ? bdev_pread(o->base, buf, have, off) : 0;
}

static int ov_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct overlay *o = (struct overlay *)b;
	uint8_t *p = buf;

	while (len) {
		uint64_t i = off / PAGE, in = off % PAGE;
		size_t pos = page_pos(o, i), n;
		int r;

		if (pos < o->n && o->pages[pos].index == i) {
			n = MIN(len, PAGE - in);
			memcpy(p, o->pages[pos].data + in, n);
		} else {
			/* Up to the next page the overlay holds, in one read. */
			uint64_t stop = pos < o->n ? o->pages[pos].index * PAGE : UINT64_MAX;

			n = (size_t)MIN((uint64_t)len, stop - off);
			if (off + n > bdev_size(o->base))
				return -EIO;
			r = bdev_pread(o->base, p, n, off);
			if (r < 0)
				return r;
		}
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* The page at index i, made (from the base's bytes) when absent. */
static uint8_t *page_get(struct overlay *o, uint64_t i)
{
	size_t pos = page_pos(o, i);
	uint8_t *data;

	if (pos < o->n && o->pages[pos].index == i)
		return o->pages[pos].data;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		struct opage *p = realloc(o->pages, cap * sizeof(*p));

		if (!p)
			return NULL;
		o->pages = p;
		o->cap = cap;
	}
	data = malloc(PAGE);
	if (!data || base_read(o, data, PAGE, i * PAGE) < 0) {
		free(data);
		return NULL;
	}
	memmove(o->pages + pos + 1, o->pages + pos, (o->n - pos) * sizeof(*o->pages));
	o->pages[pos] = (struct opage){ .index = i, .data = data };
	o->n++;
	return data;
}

static int ov_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct overlay *o = (struct overlay *)b;
	const uint8_t *p = buf;

	while (len) {
		uint64_t in = off % PAGE;
		size_t n = (size_t)MIN((uint64_t)len, PAGE - in);
		uint8_t *page = page_get(o, off / PAGE);

		if (!page)
			return -ENOMEM;
		memcpy(page + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void ov_free(struct bdev *b)
{
	struct overlay *o = (struct overlay *)b;

	for (size_t i = 0; i < o->n; i++)
		free(o->pages[i].data);
	free(o->pages);
	free(o);
}

static const struct bdev_ops overlay_ops = {
	.name = "fsck-overlay",
	.pread = ov_pread,
	.pwrite = ov_pwrite,
	.free = ov_free,
};

int fsck_overlay_new(struct bdev *base, uint64_t size, struct bdev **ret)
{
	struct overlay *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->b.ops = &overlay_ops;
	o->b.size = size;
	o->b.block_size = base->block_size;
	snprintf(o->b.name, sizeof(o->b.name), "%.50s+mem", base->name);
	o->base = base;
	*ret = &o->b;
	return 0;
}
