/*
 * read.c - pony_layout_read(): a file range read straight from the
 * volume's members. Every data piece the range touches is one read on the
 * member that holds it, all in flight at once on one acall ring (io_uring
 * completes page-cache hits inline and keeps a queue per device busy), or
 * for a member on an NBD server on its bdev, whose completions move the
 * same count and wake the same waiter;
 * the blocks land in the caller's buffer, except a partial first or last
 * block, which lands in a block of its own first. Each block is then
 * checked against its CRC32C; what a missing member, a failed read or a
 * bad checksum left out is rebuilt by the volume library (rebuild.c).
 * Holes and unwritten blocks are zeros; blocks the daemon still caches
 * (dirty), and every block of a filesystem on one image (no members to
 * name), are read through the mount, on the same ring; a layout got from
 * another host has no mount to read them from (-EAGAIN).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/acall.h"
#include "pony/bdev.h"
#include "pony/util.h"
#include "internal.h"

#define READ_RETRIES 4                  /* layouts got again before giving up */
#define READ_INFLIGHT 256               /* reads in flight on the ring at once */

/* Where a block of the range comes from, then what became of it. */
enum {
	BLK_UNCOVERED = 0,              /* no extent says: read it through the mount */
	BLK_ZERO,
	BLK_MOUNT,
	BLK_MEMBER,                     /* read from a member: check its CRC32C */
	BLK_BAD,                        /* lost or failed its check: rebuild it */
	/* In a stripe with a lost block: read with it through the volume
	 * library, the stripe at once (its survivors are read for the rebuild
	 * anyway), then checked. */
	BLK_STRIPE,
};

struct read_ctx;

/* One read: nblocks blocks from block blk, into contiguous memory. */
struct read_io {
	uint64_t blk;
	uint32_t nblocks;
	bool mount;
	int fd;
	uint64_t fd_off;
	int64_t result;                 /* set by its completion */
	struct acall_op *op;            /* on the ring, until submitted; NULL: on a bdev */
	struct bdev_io bio;             /* on a bdev (NBD): data is this read_io */
	struct read_ctx *ctx;           /* on a bdev: the call it belongs to */
};

/* One call of pony_layout_read(), blocks counted from a (block-aligned). */
struct read_ctx {
	struct pony_layout *l;
	uint8_t *buf;
	uint64_t off, len;              /* the caller's range, cut at the size */
	uint64_t a, nblocks;
	uint8_t *edge;                  /* two blocks: a partial first, a partial last */
	uint8_t *state;                 /* BLK_* of each block */
	uint32_t *ext;                  /* each block's extent (an index into l->ext) */
	bool *searched;                 /* layout_rebuild's word on each block of a run */
	/* One read per run of blocks at most: never reallocated while reads
	 * are in flight, as their completions write into it. */
	struct read_io *io;
	uint32_t nio, submitted;
	uint32_t base;                  /* l->reads_done when the call began */
};

/* Block i lies wholly in the caller's range (else it is read into edge). */
static bool block_whole(const struct read_ctx *c, uint64_t i)
{
	uint64_t bs = c->l->block_size, bo = c->a + i * bs;

	return bo >= c->off && bo + bs <= c->off + c->len;
}

static uint8_t *block_dst(const struct read_ctx *c, uint64_t i)
{
	if (block_whole(c, i))
		return c->buf + (c->a + i * c->l->block_size - c->off);
	return c->edge + (i ? c->l->block_size : 0);
}

/* Blocks [i, j) whose memory runs on from block i's: j, at most end. */
static uint64_t dst_run_end(const struct read_ctx *c, uint64_t i, uint64_t end)
{
	uint64_t j = i + 1;

	while (j < end && block_dst(c, j) == block_dst(c, j - 1) + c->l->block_size)
		j++;
	return j;
}

static int ring_get(struct pony_layout *l)
{
	struct acall_ring_params p = { .entries = READ_INFLIGHT, .workers = 1 };

	return l->ring ? 0 : acall_ring_new(&p, &l->ring);
}

/* A mount read that came back short: the rest by pread, zeros past the end. */
static int mount_finish(struct read_ctx *c, const struct read_io *io)
{
	size_t want = (size_t)io->nblocks * c->l->block_size;
	uint8_t *dst = block_dst(c, io->blk);
	int64_t got = io->result;
	ssize_t n = 1;

	if (got < 0)
		return (int)got;
	while ((size_t)got < want && n > 0) {
		n = pread(io->fd, dst + got, want - (size_t)got, io->fd_off + (uint64_t)got);
		if (n < 0 && errno != EINTR)
			return -errno;
		got += n > 0 ? n : 0;
	}
	memset(dst + got, 0, want - (size_t)got);
	c->l->stats.mount_bytes += (uint64_t)got;
	return 0;
}

/* A read completed (on whichever thread): the count, then the word moves. */
static void read_counted(struct pony_layout *l)
{
	atomic_fetch_add_explicit(&l->reads_done, 1, memory_order_release);
	atomic_fetch_add_explicit(&l->reap_word, 1, memory_order_release);
	acall_reap_wake(l->ring);
}

/* Completion of a read on the ring: its result, then the count. */
static void io_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct read_ctx *c = arg;
	struct pony_layout *l = c->l;   /* c may be gone once reads_done moved */

	(void)ring;
	c->io[(uintptr_t)acall_op_data(op)].result = acall_op_result(op);
	read_counted(l);
}

/* Completion of a read on a member's bdev (its poll thread, or inline). */
static void bio_done(struct bdev_io *bio)
{
	struct read_io *io = bio->data;
	struct pony_layout *l = io->ctx->l;

	io->result = bio->result < 0 ? bio->result : (int64_t)bio->len;
	read_counted(l);
}

static uint32_t reads_done(const struct read_ctx *c)
{
	return atomic_load_explicit(&c->l->reads_done, memory_order_acquire) - c->base;
}

/*
 * Submits the reads prepared on the ring; on failure gives them back (they
 * never ran) and counts them done with its error (reads on bdevs went at
 * once and complete on their own).
 */
static int reads_submit(struct read_ctx *c)
{
	int r = c->submitted < c->nio ? acall_submit(c->l->ring) : 0;

	if (r < 0) {
		for (uint32_t i = c->submitted; i < c->nio; i++) {
			if (!c->io[i].op)
				continue;
			acall_op_done(c->l->ring, c->io[i].op);
			c->io[i].result = r;
			atomic_fetch_add_explicit(&c->l->reads_done, 1, memory_order_release);
		}
		c->submitted = c->nio;
		return r;
	}
	c->submitted = c->nio;
	return 0;
}

/* Waits until at most `left` submitted reads are in flight. */
static int reads_wait(struct read_ctx *c, uint32_t left)
{
	for (;;) {
		/* The word before the count: a completion after the check moves it. */
		uint32_t word = atomic_load_explicit(&c->l->reap_word, memory_order_acquire);
		int r;

		if (reads_done(c) + left >= c->submitted)
			return 0;
		r = acall_reap_wait(c->l->ring, &c->l->reap_word, word, NULL);
		if (r < 0 && r != -EINTR)
			return r;
	}
}

/* What the reads did: member blocks that failed are bad; mount reads finished. */
static int reads_check(struct read_ctx *c)
{
	int r = 0;

	for (uint32_t i = 0; i < c->nio; i++) {
		const struct read_io *io = &c->io[i];

		if (io->mount && !r)
			r = mount_finish(c, io);
		else if (!io->mount && io->result != (int64_t)io->nblocks * c->l->block_size)
			memset(c->state + io->blk, BLK_BAD, io->nblocks);
	}
	return r;
}

/* Blocks [i, j) from dev at off on, one run of contiguous memory: sent at once. */
static void issue_bdev(struct read_ctx *c, uint64_t i, uint64_t j, struct bdev *dev, uint64_t off)
{
	struct read_io *io = &c->io[c->nio++];

	*io = (struct read_io){ .blk = i, .nblocks = (uint32_t)(j - i), .fd = -1, .fd_off = off,
				.ctx = c };
	io->bio = (struct bdev_io){ .op = BDEV_READ, .buf = block_dst(c, i),
				    .len = (j - i) * c->l->block_size, .off = off,
				    .done = bio_done, .data = io };
	bdev_submit(dev, &io->bio);
}

/*
 * Reads blocks [i, j) from fd (or dev, when not NULL) at fd_off on, in runs
 * of contiguous memory.
 */
static int issue(struct read_ctx *c, uint64_t i, uint64_t j, int fd, struct bdev *dev,
		 uint64_t fd_off, bool mount)
{
	uint64_t bs = c->l->block_size;

	for (uint64_t k; i < j; i = k) {
		struct acall_op *op;
		int r;

		k = dst_run_end(c, i, j);
		if (c->nio - reads_done(c) >= READ_INFLIGHT) {
			r = reads_submit(c);
			if (!r)
				r = reads_wait(c, READ_INFLIGHT / 2);
			if (r < 0)
				return r;
		}
		if (dev) {
			issue_bdev(c, i, k, dev, fd_off);
			fd_off += (k - i) * bs;
			continue;
		}
		op = acall_get_op(c->l->ring);
		if (!op)
			return -ENOMEM;
		c->io[c->nio] = (struct read_io){ .blk = i, .nblocks = (uint32_t)(k - i), .mount = mount,
						  .fd = fd, .fd_off = fd_off, .op = op };
		acall_prep_read(op, fd, block_dst(c, i), (k - i) * bs, fd_off);
		acall_op_set_data(op, (void *)(uintptr_t)c->nio++);
		acall_op_set_callback(op, io_done, c);
		fd_off += (k - i) * bs;
	}
	return 0;
}

static bool member_missing(const struct layout_member *m)
{
	return m->fd < 0 && !m->dev;
}

/*
 * File bytes [ps, pt) of extent e lie on a missing member: they are BAD,
 * and the rest of their stripe within [s, t) goes with them to the volume
 * library (BLK_STRIPE), which reads each whole stripe's survivors once and
 * rebuilds the lost chunk in place, rather than a chunk at a time after
 * the ring read the survivors too. Stripes are counted from the volume's
 * start; were they not, the range would still read right, chunk by chunk.
 */
static void mark_lost(struct read_ctx *c, const struct ponyfuse_layout_extent *e, uint64_t ps,
		      uint64_t pt, uint64_t s, uint64_t t)
{
	uint64_t bs = c->l->block_size, w = c->l->members[0].arg.full_stripe;
	uint64_t va = c->l->region_offset + e->volume_offset + (ps - e->file_offset);

	if (w > c->l->members[0].arg.chunk && c->l->members[0].arg.chunk) {
		uint64_t lo = MAX(s, ps - MIN(ps, va % w)), hi = MIN(t, ps + (w - va % w));

		for (uint64_t k = (lo - c->a) / bs; k < (hi - c->a) / bs; k++)
			if (c->state[k] != BLK_BAD)
				c->state[k] = BLK_STRIPE;
	}
	memset(c->state + (ps - c->a) / bs, BLK_BAD, (pt - ps) / bs);
}

/*
 * The data pieces of extent x (on a volume) for blocks [i, j): those on
 * missing members marked first, with their stripes; then the reads of the
 * rest on the ring.
 */
static int issue_pieces(struct read_ctx *c, uint32_t x, uint64_t i, uint64_t j)
{
	const struct pony_layout *l = c->l;
	const struct ponyfuse_layout_extent *e = &l->ext[x];
	uint64_t bs = l->block_size, s = c->a + i * bs, t = c->a + j * bs;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < e->npieces; k++) {
			const struct ponyfuse_layout_piece *p = &l->pieces[e->first_piece + k];
			uint64_t ps = MAX(s, p->file_offset), pt = MIN(t, p->file_offset + p->length);
			const struct layout_member *m;

			if (p->role != PONYFUSE_PIECE_DATA || ps >= pt)
				continue;
			if ((ps - c->a) % bs || (pt - c->a) % bs || p->member >= l->nmembers)
				return -EPROTO;         /* pieces are whole blocks on known members */
			m = &l->members[p->member];
			if (pass == 0 && member_missing(m))
				mark_lost(c, e, ps, pt, s, t);
			if (pass == 0 || member_missing(m))
				continue;
			/* The piece's blocks not taken with a stripe, in runs. */
			for (uint64_t u = (ps - c->a) / bs, v, end = (pt - c->a) / bs; u < end; u = v) {
				int r;

				for (v = u; v < end && c->state[v] != BLK_STRIPE && c->state[v] != BLK_BAD; v++)
					c->state[v] = BLK_MEMBER;
				if (v == u) {
					v++;
					continue;
				}
				r = issue(c, u, v, m->fd, m->dev,
					  p->member_offset + (c->a + u * bs - p->file_offset), false);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

/* Blocks [i, j) of extent x: where each comes from, and its read on the ring. */
static int plan_extent(struct read_ctx *c, uint32_t x, uint64_t i, uint64_t j)
{
	const struct ponyfuse_layout_extent *e = &c->l->ext[x];
	bool on_volume = c->l->flags & PONYFUSE_LAYOUT_ON_VOLUME;

	for (uint64_t k = i; k < j; k++)
		c->ext[k] = x;
	switch (e->state) {
	case PONYFUSE_LAYOUT_HOLE:
	case PONYFUSE_LAYOUT_UNWRITTEN:
		memset(c->state + i, BLK_ZERO, j - i);
		return 0;
	case PONYFUSE_LAYOUT_DATA:
		if (on_volume)
			return issue_pieces(c, x, i, j);
		return 0;       /* one image: no member to read, the mount it is */
	default:
		return 0;       /* dirty: the daemon's copy is the newer */
	}
}

/* Every block's source, then the reads of the mount for those left. */
static int plan(struct read_ctx *c)
{
	const struct pony_layout *l = c->l;
	uint64_t bs = l->block_size, end = c->a + c->nblocks * bs;
	int r = 0;

	for (uint32_t x = 0; x < l->next && !r; x++) {
		const struct ponyfuse_layout_extent *e = &l->ext[x];
		uint64_t s = MAX(c->a, e->file_offset), t = MIN(end, e->file_offset + e->length);

		if (s >= end)
			break;
		if (s < t)
			r = plan_extent(c, x, (s - c->a) / bs, DIV_ROUND_UP(t - c->a, bs));
	}
	for (uint64_t i = 0, j; i < c->nblocks && !r; i = j) {
		for (j = i; j < c->nblocks && c->state[j] == BLK_UNCOVERED; j++)
			c->state[j] = BLK_MOUNT;
		if (j > i && l->fd < 0)
			r = -EAGAIN;    /* from another host: no mount to read */
		else if (j > i)
			r = issue(c, i, j, l->fd, NULL, c->a + i * bs, true);
		else
			j++;
	}
	return r;
}

/* The checksum block i of the range was stored with. */
static uint32_t block_csum(const struct read_ctx *c, uint64_t i)
{
	const struct ponyfuse_layout_extent *e = &c->l->ext[c->ext[i]];

	return c->l->csums[e->first_csum + (c->a + i * c->l->block_size - e->file_offset) /
					    c->l->block_size];
}

static bool through_volume(uint8_t state)
{
	return state == BLK_BAD || state == BLK_STRIPE;
}

/* Blocks from i on for the volume library, in one extent and contiguous memory: the end. */
static uint64_t bad_run_end(const struct read_ctx *c, uint64_t i)
{
	uint64_t j = dst_run_end(c, i, c->nblocks);

	for (uint64_t k = i + 1; k < j; k++)
		if (!through_volume(c->state[k]) || c->ext[k] != c->ext[i])
			return k;
	return j;
}

/* Checks member blocks, zeros holes, rebuilds what is bad. */
static int verify(struct read_ctx *c)
{
	struct pony_layout *l = c->l;
	uint64_t bs = l->block_size;
	int r;

	for (uint64_t i = 0; i < c->nblocks; i++) {
		if (c->state[i] == BLK_ZERO) {
			memset(block_dst(c, i), 0, bs);
			l->stats.zero_bytes += bs;
		} else if (c->state[i] == BLK_MEMBER) {
			if (util_crc32c(0, block_dst(c, i), bs) != block_csum(c, i))
				c->state[i] = BLK_BAD;
			else
				l->stats.member_bytes += bs;
		}
	}
	for (uint64_t i = 0, j; i < c->nblocks; i = j) {
		const struct ponyfuse_layout_extent *e = &l->ext[c->ext[i]];

		if (!through_volume(c->state[i])) {
			j = i + 1;
			continue;
		}
		j = bad_run_end(c, i);
		r = layout_rebuild(l, block_dst(c, i),
				   e->volume_offset + (c->a + i * bs - e->file_offset), j - i,
				   &l->csums[e->first_csum + (c->a + i * bs - e->file_offset) / bs],
				   c->searched);
		if (r < 0)
			return r;
		/* Rebuilt: the lost, and those of their stripes bad on their member. */
		for (uint64_t k = i; k < j; k++) {
			if (c->state[k] == BLK_BAD || c->searched[k - i])
				l->stats.rebuilt++;
			else
				l->stats.member_bytes += bs;
		}
	}
	return 0;
}

/* The partial first and last blocks into the caller's buffer. */
static void copy_edges(const struct read_ctx *c)
{
	uint64_t bs = c->l->block_size, end = c->off + c->len;

	for (uint64_t i = 0; i < c->nblocks; i += MAX(c->nblocks - 1, 1)) {
		uint64_t bo = c->a + i * bs, s = MAX(bo, c->off), t = MIN(bo + bs, end);

		if (!block_whole(c, i))
			memcpy(c->buf + (s - c->off), block_dst(c, i) + (s - bo), t - s);
	}
}

static int read_once(struct read_ctx *c)
{
	int r, e, w;

	c->nio = c->submitted = 0;
	c->base = atomic_load(&c->l->reads_done);
	memset(c->state, BLK_UNCOVERED, c->nblocks);
	memset(c->ext, 0, c->nblocks * sizeof(*c->ext));
	r = plan(c);
	e = reads_submit(c);            /* what plan() prepared, even on error */
	w = reads_wait(c, 0);           /* and everything in flight */
	r = r < 0 ? r : e < 0 ? e : w < 0 ? w : reads_check(c);
	if (r >= 0)
		r = verify(c);
	if (r >= 0)
		copy_edges(c);
	return r;
}

static int ctx_init(struct read_ctx *c, struct pony_layout *l, void *buf, uint64_t off,
		    uint64_t len)
{
	uint64_t bs = l->block_size;

	*c = (struct read_ctx){ .l = l, .buf = buf, .off = off, .len = len, .a = off / bs * bs };
	if (!len)
		return 0;
	c->nblocks = DIV_ROUND_UP(off + len, bs) - off / bs;
	c->edge = util_aligned_alloc(2 * bs);
	c->state = malloc(c->nblocks);
	c->ext = malloc(c->nblocks * sizeof(*c->ext));
	c->io = malloc(c->nblocks * sizeof(*c->io));
	c->searched = malloc(c->nblocks * sizeof(*c->searched));
	return c->edge && c->state && c->ext && c->io && c->searched ? 0 : -ENOMEM;
}

static void ctx_done(struct read_ctx *c)
{
	free(c->edge);
	free(c->state);
	free(c->ext);
	free(c->io);
	free(c->searched);
}

ssize_t pony_layout_read(struct pony_layout *l, void *buf, uint64_t off, size_t len)
{
	struct read_ctx c;
	int r, state;

	if (off >= l->size || !len)
		return 0;
	len = (size_t)MIN((uint64_t)len, l->size - off);
	if (off < l->off / l->block_size * l->block_size || off + len > l->end)
		return -EINVAL;
	r = ring_get(l);
	for (int tries = 0; !r; tries++) {
		r = ctx_init(&c, l, buf, off, len);
		if (!r)
			r = read_once(&c);
		ctx_done(&c);
		if (r < 0 && r != -EBADMSG)
			break;
		state = layout_lease_status(l);
		if (state < 0) {
			r = state;
			break;
		}
		/* Expired: the blocks may have moved. -EBADMSG without a lease:
		 * no copy matches, as when a block was reused since the snapshot. */
		if (state != PONYFUSE_LEASE_EXPIRED && (r == 0 || l->lease))
			break;
		if (tries == READ_RETRIES) {
			r = r == -EBADMSG ? -EIO : -ESTALE;
			break;
		}
		l->stats.regets++;
		r = layout_fetch(l);
		if (!r && off >= l->size)
			return 0;
		len = (size_t)MIN((uint64_t)len, l->size - off);
	}
	if (r == -EBADMSG)
		r = -EIO;       /* lost beyond the redundancy */
	return r < 0 ? r : (ssize_t)len;
}
