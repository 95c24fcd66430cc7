/*
 * states.c - crash states from a dm-log-writes log. Between two flushes a
 * disk may persist any subset of the writes issued (and tear the one in
 * progress), so each epoch yields: every subset when few writes are in
 * flight (else a fixed-seed random sample), each write torn after its
 * predecessors (in half, and after each of up to 16 prefixes of its 4 KiB
 * blocks), and the whole epoch (the prefix ending at the flush).
 * States are built on an overlay so a state costs only its own writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crash.h"
#include "pony/util.h"

#define SECTOR 512u
#define TEAR_BLOCK 4096u         /* ponyfs's block: a torn write's prefixes end on one */
#define TEAR_POINTS 16u         /* at most this many block prefixes of one write */

int crash_log_read(struct bdev *log, struct crash_log *ret)
{
	uint64_t n, pos = SECTOR;
	int r = bdev_record_count(log, &n);

	if (r < 0)
		return r;
	ret->e = calloc(n ? n : 1, sizeof(*ret->e));
	ret->n = 0;
	if (!ret->e)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct crash_log_entry *e = &ret->e[ret->n];
		uint8_t h[32];

		r = bdev_pread(log, h, sizeof(h), pos);
		if (r < 0)
			return r;
		e->off = util_get_le64(h) * SECTOR;
		e->len = util_get_le64(h + 8) * SECTOR;
		e->flags = util_get_le64(h + 16);
		pos += SECTOR;
		if (e->flags & 8)
			continue;               /* marks carry no I/O */
		if (!(e->flags & 5) && e->len) {
			e->data = malloc(e->len);
			if (!e->data)
				return -ENOMEM;
			r = bdev_pread(log, e->data, e->len, pos);
			if (r < 0)
				return r;
			pos += e->len;
		}
		ret->n++;
	}
	return 0;
}

void crash_log_free(struct crash_log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].data);
	free(l->e);
}

/* -- the overlay ------------------------------------------------------------ */

struct crash_overlay {
	struct bdev b;
	uint8_t *base, *cur;
	uint8_t *dirty;                 /* a bit per sector of cur that differs from base */
	uint64_t *list, nlist, cap;
};

static int ovl_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	memcpy(buf, ((struct crash_overlay *)b)->cur + off, len);
	return 0;
}

static int ovl_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct crash_overlay *o = (struct crash_overlay *)b;

	for (uint64_t s = off / SECTOR; s < DIV_ROUND_UP(off + len, SECTOR); s++) {
		if (o->dirty[s / 8] & (1u << (s % 8)))
			continue;
		if (o->nlist == o->cap) {
			uint64_t *p = realloc(o->list, (o->cap * 2 + 64) * sizeof(*p));

			if (!p)
				return -ENOMEM;
			o->list = p;
			o->cap = o->cap * 2 + 64;
		}
		o->dirty[s / 8] |= (uint8_t)(1u << (s % 8));
		o->list[o->nlist++] = s;
	}
	memcpy(o->cur + off, buf, len);
	return 0;
}

static int ovl_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	void *z = calloc(1, len);
	int r = z ? ovl_pwrite(b, z, len, off) : -ENOMEM;

	free(z);
	return r;
}

static void ovl_free(struct bdev *b)
{
}

static const struct bdev_ops ovl_ops = {
	.name = "crash-overlay",
	.pread = ovl_pread,
	.pwrite = ovl_pwrite,
	.discard = ovl_discard,
	.free = ovl_free,
};

int crash_overlay_new(const uint8_t *image, uint64_t size, struct crash_overlay **ret)
{
	struct crash_overlay *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->base = malloc(size);
	o->cur = malloc(size);
	o->dirty = calloc(1, DIV_ROUND_UP(size / SECTOR, 8));
	if (!o->base || !o->cur || !o->dirty) {
		crash_overlay_free(o);
		return -ENOMEM;
	}
	memcpy(o->base, image, size);
	memcpy(o->cur, image, size);
	o->b.ops = &ovl_ops;
	o->b.size = size;
	o->b.block_size = SECTOR;
	strcpy(o->b.name, "crash-state");
	*ret = o;
	return 0;
}

struct bdev *crash_overlay_bdev(struct crash_overlay *o)
{
	return &o->b;
}

void crash_overlay_reset(struct crash_overlay *o)
{
	for (uint64_t i = 0; i < o->nlist; i++) {
		uint64_t s = o->list[i];

		memcpy(o->cur + s * SECTOR, o->base + s * SECTOR, SECTOR);
		o->dirty[s / 8] &= (uint8_t)~(1u << (s % 8));
	}
	o->nlist = 0;
}

void crash_overlay_commit(struct crash_overlay *o, uint64_t off, const void *data, uint64_t len)
{
	if (data) {
		memcpy(o->base + off, data, len);
		memcpy(o->cur + off, data, len);
	} else {
		memset(o->base + off, 0, len);
		memset(o->cur + off, 0, len);
	}
}

void crash_overlay_free(struct crash_overlay *o)
{
	if (!o)
		return;
	free(o->base);
	free(o->cur);
	free(o->dirty);
	free(o->list);
	free(o);
}

/* -- enumeration ------------------------------------------------------------ */

static void apply(struct crash_overlay *o, const struct crash_log_entry *e, uint64_t len)
{
	if (e->flags & 4)
		ovl_discard(&o->b, e->off, len);
	else
		ovl_pwrite(&o->b, e->data, len, e->off);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct epoch {
	struct crash_overlay *o;
	const struct crash_log_entry *w[4096];
	unsigned k;
	uint64_t durable;
	crash_check_t check;
	void *arg;
	long states;
};

static int run_state(struct epoch *ep)
{
	int r = ep->check(&ep->o->b, ep->durable, ep->arg);

	crash_overlay_reset(ep->o);
	ep->states++;
	return r;
}

/* One subset of the epoch's writes, in issue order; bit i of mask: write i. */
static int run_subset(struct epoch *ep, const uint64_t *mask)
{
	for (unsigned i = 0; i < ep->k; i++)
		if (mask[i / 64] & (1ull << (i % 64)))
			apply(ep->o, ep->w[i], ep->w[i]->len);
	return run_state(ep);
}

/* Write j's first len bytes land after every write before it; 0: none. */
static int run_torn(struct epoch *ep, unsigned j, uint64_t len)
{
	if (!len)
		return 0;
	for (unsigned i = 0; i < j; i++)
		apply(ep->o, ep->w[i], ep->w[i]->len);
	apply(ep->o, ep->w[j], len);
	return run_state(ep);
}

static int run_epoch(struct epoch *ep, const struct crash_limits *lim, uint64_t *seed, bool first)
{
	uint64_t mask[64];
	int r = 0;

	if (ep->k <= lim->all_subsets_max) {
		/* Mask 0 is the previous epoch's whole state: checked already. */
		for (uint64_t m = first ? 0 : 1; r >= 0 && m < (1ull << ep->k); m++) {
			mask[0] = m;
			r = run_subset(ep, mask);
		}
	} else {
		for (unsigned t = 0; r >= 0 && t < lim->random_subsets; t++) {
			for (unsigned i = 0; i < 64; i++)
				mask[i] = next_rand(seed);
			r = run_subset(ep, mask);
		}
		memset(mask, 0xff, sizeof(mask));
		if (r >= 0)
			r = run_subset(ep, mask);
	}
	/* Torn writes: each write's first half lands after everything before
	 * it, and so does each prefix of its whole 4 KiB blocks (at most
	 * TEAR_POINTS of them, evenly spread): one write may carry several
	 * files' blocks (gather.c), and a power cut may keep any of them. */
	for (unsigned j = 0; r >= 0 && j < ep->k; j++) {
		uint64_t len = ep->w[j]->len, blocks = len / TEAR_BLOCK;
		uint64_t step = blocks > TEAR_POINTS ? (blocks + TEAR_POINTS - 1) / TEAR_POINTS : 1;

		if (ep->w[j]->flags & 4)
			continue;
		r = run_torn(ep, j, len / 2 / SECTOR * SECTOR);
		for (uint64_t b = step; r >= 0 && b < blocks; b += step)
			if (b * TEAR_BLOCK != len / 2 / SECTOR * SECTOR)
				r = run_torn(ep, j, b * TEAR_BLOCK);
	}
	return r;
}

long crash_enumerate(const uint8_t *image, uint64_t size, const struct crash_log *log,
		     const struct crash_limits *lim, crash_check_t check, void *arg)
{
	static struct epoch ep;
	uint64_t seed = lim->seed | 1;
	bool first = true;
	int r = 0;

	memset(&ep, 0, sizeof(ep));
	ep.check = check;
	ep.arg = arg;
	if (crash_overlay_new(image, size, &ep.o) < 0)
		return -1;
	for (size_t i = 0; r >= 0 && i <= log->n; i++) {
		const struct crash_log_entry *e = i < log->n ? &log->e[i] : NULL;

		if (e && !(e->flags & 1)) {
			if (ep.k == ARRAY_SIZE(ep.w)) {
				r = -1;         /* more in flight than any workload here issues */
				break;
			}
			ep.w[ep.k++] = e;
			continue;
		}
		if (ep.k || first)
			r = run_epoch(&ep, lim, &seed, first);
		first = false;
		for (unsigned j = 0; j < ep.k; j++)
			crash_overlay_commit(ep.o, ep.w[j]->off, ep.w[j]->flags & 4 ? NULL : ep.w[j]->data,
					     ep.w[j]->len);
		ep.k = 0;
		ep.durable = i + 1;
	}
	crash_overlay_free(ep.o);
	return r < 0 ? -1 : ep.states;
}
