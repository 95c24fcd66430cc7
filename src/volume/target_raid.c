/*
 * target_raid.c - the parity targets raid4, raid5 and raid6 in md's layouts.
 * Work is done on a "row": the same byte range of every chunk of one stripe
 * (parity is bytewise, so any sector range of a stripe is a stripe of its
 * own). Reads go straight to the data member (a read of several chunks, all
 * of them at once: raid_read_span.c); a failed read rebuilds the row from the
 * others and rewrites the bad block. Full-stripe writes compute
 * parity from the new data alone. Partial raid6 writes read the whole row
 * and check it against P and Q first, so a block gone bad silently is
 * rewritten rather than folded into the new parity; raid4/5 (which cannot
 * tell which block is bad) read-modify-write or reconstruct-write,
 * whichever reads less; a degraded member is never read. Whole
 * raid6 stripes on members whose storage is memory take the fused path
 * (raid6_fused.c): one pass over the data stores it and makes P and Q, or
 * reads the survivors and rebuilds what is lost. Scrub names the one bad
 * block of a raid6 stripe from its syndromes and rewrites it alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"
#include "raid6_fused.h"

/* One row of a stripe. Block b: data 0..k-1, then P (k), then Q (k+1). */
struct row {
	struct layout_stripe st;
	unsigned k, nb;
	uint64_t devoff;                /* the row's offset on every member */
	size_t len;
	uint8_t *blk[LAYOUT_MAX_DISKS];
	uint8_t *extra;                 /* two more scratch blocks: RMW's delta, scrub's P and Q */
	bool have[LAYOUT_MAX_DISKS];    /* content is in blk */
	bool lost[LAYOUT_MAX_DISKS];    /* cannot be read */
	bool rewrite[LAYOUT_MAX_DISKS]; /* read error on a working member: write back */
	int only;                       /* row_solve: just this block is wanted (-1: all) */
};

static unsigned row_disk(const struct row *r, unsigned b)
{
	if (b < r->k)
		return r->st.disk[b];
	return (unsigned)(b == r->k ? r->st.pd : r->st.qd);
}

/* Sets up the row of stripe at in-chunk offset `in`, len bytes, in s's scratch. */
static int row_init(struct volume_seg *s, struct row *r, uint64_t stripe, uint64_t in, size_t len)
{
	uint8_t *mem;

	memset(r, 0, sizeof(*r));
	layout_raid456_stripe(&s->geom, stripe, &r->st);
	r->k = r->st.ndata;
	r->nb = r->k + (r->st.qd >= 0 ? 2 : 1);
	r->devoff = stripe * s->geom.chunk + in;
	r->only = -1;
	r->len = len;
	mem = volume_seg_scratch(s, (r->nb + 2) * len);
	if (!mem)
		return -ENOMEM;
	for (unsigned b = 0; b < r->nb; b++)
		r->blk[b] = mem + b * len;
	r->extra = mem + r->nb * len;
	return 0;
}

/* Reads the wanted blocks not yet known, all members at once; failures become lost. */
static void row_load(struct volume_seg *s, struct row *r, const bool *want)
{
	struct volume_batch batch;
	unsigned idx[LAYOUT_MAX_DISKS];
	bool was_ok[LAYOUT_MAX_DISKS];

	volume_batch_init(&batch, s);
	for (unsigned b = 0; b < r->nb; b++) {
		unsigned d = row_disk(r, b);

		if (!want[b] || r->have[b] || r->lost[b])
			continue;
		was_ok[b] = volume_mstate(s, d) == VOLUME_MEMBER_OK;
		idx[b] = volume_batch_add(&batch, d, false, r->blk[b], r->len, r->devoff);
	}
	volume_batch_run(&batch);
	for (unsigned b = 0; b < r->nb; b++) {
		if (!want[b] || r->have[b] || r->lost[b])
			continue;
		if (volume_batch_result(&batch, idx[b]) == 0) {
			r->have[b] = true;
		} else {
			r->lost[b] = true;
			r->rewrite[b] = was_ok[b] && volume_mstate(s, row_disk(r, b)) == VOLUME_MEMBER_OK;
		}
	}
	volume_batch_done(&batch);
}

static const bool row_all[LAYOUT_MAX_DISKS] = {
	[0 ... LAYOUT_MAX_DISKS - 1] = true,
};

static struct parity_stripe row_parity(struct row *r)
{
	return (struct parity_stripe){
		.ndata = r->k, .len = r->len, .data = r->blk, .p = r->blk[r->k],
		.q = r->nb > r->k + 1 ? r->blk[r->k + 1] : NULL,
		.qexp = r->nb > r->k + 1 ? r->st.qexp : NULL,
		.one_only = r->only >= 0, .one = r->only >= 0 ? (unsigned)r->only : 0,
	};
}

/*
 * Loads every block it can and rebuilds the lost ones; rewrites read errors.
 * data_only: the caller reads, so lost parity on a failed member is left
 * unsolved (a parity read error on a working member is still rebuilt and
 * rewritten).
 */
static int row_solve(struct volume_seg *s, struct row *r, bool data_only)
{
	unsigned lost[LAYOUT_MAX_DISKS], nlost = 0;
	struct parity_stripe ps = row_parity(r);
	int ret;

	row_load(s, r, row_all);
	for (unsigned b = 0; b < r->nb; b++) {
		if (r->lost[b])
			lost[nlost++] = b;
		if (b >= r->k && r->rewrite[b])
			data_only = false;
		if (r->rewrite[b] && (int)b != r->only)
			ps.one_only = false;        /* a read error to write back: solve it too */
	}
	if (nlost > r->nb - r->k)
		return -EIO;
	ps.data_only = data_only;
	ret = s->parity->recover(&ps, nlost, lost);
	if (ret < 0)
		return ret;
	for (unsigned b = 0; b < r->nb; b++) {
		r->have[b] = !r->lost[b] || (ps.one_only ? (int)b == r->only : !data_only || b < r->k);
		if (r->rewrite[b])
			volume_mwrite(s, row_disk(r, b), r->blk[b], r->len, r->devoff);
		r->rewrite[b] = false;
	}
	return 0;
}

/* Writes the blocks in mask, and parity (regenerated when gen), to their members. */
static int row_store(struct volume_seg *s, struct row *r, const bool *mask, bool gen)
{
	struct parity_stripe ps = row_parity(r);
	struct volume_batch batch;

	if (gen)
		s->parity->gen(&ps);
	volume_batch_init(&batch, s);
	for (unsigned b = 0; b < r->nb; b++)
		if (mask[b] || b >= r->k)
			volume_batch_add(&batch, row_disk(r, b), true, r->blk[b], r->len, r->devoff);
	volume_batch_run(&batch);
	volume_batch_done(&batch);
	return volume_seg_degraded(s) > r->nb - r->k ? -EIO : 0;
}

static int raid_check(struct volume_seg *s)
{
	int r = layout_geom_check(&s->geom);

	if (r < 0)
		return r;
	if (layout_ndata(&s->geom) > PARITY_MAX_DATA)
		return -EINVAL;
	return s->len <= layout_array_size(&s->geom) ? 0 : -ENOSPC;
}

/* Reads the piece pl names into buf, reconstructing if need be. */
static int raid_read_piece(struct volume_seg *s, const struct volume_place *pl, uint8_t *buf)
{
	size_t len = (size_t)pl->len;
	struct row r;
	int ret;

	if (volume_mread(s, pl->disk[0], buf, len, pl->dev_off[0]) == 0)
		return 0;
	pthread_mutex_lock(&s->lock);
	ret = row_init(s, &r, pl->stripe, pl->in, len);
	if (ret >= 0)
		ret = row_solve(s, &r, true);
	if (ret >= 0)
		memcpy(buf, r.blk[pl->block], len);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* The fused kernels' instructions: the SWAR engine's users get the portable path too. */
static enum raid6_fused_isa raid_fused_isa(const struct volume_seg *s)
{
	return s->parity == &parity_swar_ops ? RAID6_FUSED_SWAR : RAID6_FUSED_BEST;
}

/*
 * Maps the blocks of stripe's row on members that lend their memory, for a
 * read or a write: 0 and ptr[] (NULL for a block that may not be read or
 * written), or 1 when a member that takes part cannot lend its storage (the
 * caller then goes through member I/O).
 */
static int raid_row_map(struct volume_seg *s, const struct layout_stripe *st, uint64_t devoff,
			bool write, uint8_t **ptr)
{
	unsigned k = st->ndata;

	for (unsigned b = 0; b < k + 2; b++) {
		unsigned d = b < k ? st->disk[b] : (unsigned)(b == k ? st->pd : st->qd);
		int r = volume_mmap(s, d, s->geom.chunk, devoff, write, &ptr[b]);

		if (r == -EIO)
			ptr[b] = NULL;
		else if (r < 0)
			return 1;
	}
	return 0;
}

/*
 * A whole raid6 stripe read in one pass over mapped members (survivors
 * copied to buf, up to two lost data blocks rebuilt on the way): 0, or 1
 * when the members do not allow it (the caller takes the row path).
 * Called with s->lock held.
 */
static int raid_read_full_mapped(struct volume_seg *s, uint64_t stripe, uint8_t *buf)
{
	struct layout_stripe st;
	uint8_t *src[LAYOUT_MAX_DISKS], *dst[PARITY_MAX_DATA];
	unsigned nlost = 0;

	layout_raid456_stripe(&s->geom, stripe, &st);
	if (st.qd < 0 || raid_row_map(s, &st, stripe * s->geom.chunk, false, src))
		return 1;
	for (unsigned b = 0; b < st.ndata + 2; b++)
		nlost += !src[b];
	if (nlost > 2)
		return -EIO;
	for (unsigned b = 0; b < st.ndata; b++)
		dst[b] = buf + b * s->geom.chunk;
	return raid6_fused_read(&(struct raid6_fused_stripe){ .ndata = st.ndata, .len = s->geom.chunk,
							     .qexp = st.qexp, .isa = raid_fused_isa(s) },
				(const uint8_t *const *)src, dst) < 0 ? 1 : 0;
}

/*
 * A whole raid6 stripe written in one pass to mapped members: 0, or 1 when
 * a member is out, has a bad range here or lends no memory (the caller then
 * writes through member I/O, which handles each). Called with s->lock held.
 */
static int raid_write_full_mapped(struct volume_seg *s, uint64_t stripe, const uint8_t *buf)
{
	struct layout_stripe st;
	uint8_t *dst[LAYOUT_MAX_DISKS];
	const uint8_t *src[PARITY_MAX_DATA];

	layout_raid456_stripe(&s->geom, stripe, &st);
	/* More members out than parity covers: the row path writes, then says -EIO. */
	if (st.qd < 0 || volume_seg_degraded(s) > 2 ||
	    raid_row_map(s, &st, stripe * s->geom.chunk, true, dst))
		return 1;
	for (unsigned b = 0; b < st.ndata + 2; b++)
		if (!dst[b])
			return 1;
	for (unsigned b = 0; b < st.ndata; b++)
		src[b] = buf + b * s->geom.chunk;
	return raid6_fused_write(&(struct raid6_fused_stripe){ .ndata = st.ndata, .len = s->geom.chunk,
							      .qexp = st.qexp, .isa = raid_fused_isa(s) },
				 src, dst) < 0 ? 1 : 0;
}

/*
 * A whole stripe read while a data member is out: solve the row once. The
 * data blocks are read (and the lost ones rebuilt) straight into an aligned
 * caller's buffer; only parity goes through scratch.
 */
static int raid_read_full_degraded(struct volume_seg *s, uint64_t stripe, uint8_t *buf)
{
	bool direct = (uintptr_t)buf % PARITY_ALIGN == 0;
	struct row r;
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = raid_read_full_mapped(s, stripe, buf);
	if (ret <= 0)
		goto out;
	ret = row_init(s, &r, stripe, 0, s->geom.chunk);
	for (unsigned b = 0; ret >= 0 && direct && b < r.k; b++)
		r.blk[b] = buf + b * r.len;
	if (ret >= 0)
		ret = row_solve(s, &r, true);
	for (unsigned b = 0; ret >= 0 && !direct && b < r.k; b++)
		memcpy(buf + b * r.len, r.blk[b], r.len);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

bool raid_stripe_degraded(struct volume_seg *s, uint64_t stripe)
{
	struct layout_stripe st;

	layout_raid456_stripe(&s->geom, stripe, &st);
	for (unsigned b = 0; b < st.ndata; b++)
		if (volume_mstate(s, st.disk[b]) != VOLUME_MEMBER_OK)
			return true;
	return false;
}

/* A whole stripe through member I/O: parity from the new data alone. */
static int raid_write_full_rows(struct volume_seg *s, uint64_t stripe, const uint8_t *buf)
{
	bool all[LAYOUT_MAX_DISKS];
	struct row r;
	int ret = row_init(s, &r, stripe, 0, s->geom.chunk);

	if (ret < 0)
		return ret;
	for (unsigned b = 0; b < r.k; b++) {
		/* Aligned caller data feeds the parity engine directly. */
		if ((uintptr_t)buf % PARITY_ALIGN == 0)
			r.blk[b] = (uint8_t *)buf + b * r.len;
		else
			memcpy(r.blk[b], buf + b * r.len, r.len);
	}
	memset(all, 1, sizeof(all));
	return row_store(s, &r, all, true);
}

static int raid_write_full(struct volume_seg *s, uint64_t stripe, const uint8_t *buf)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = raid_write_full_mapped(s, stripe, buf);
	if (ret > 0)
		ret = raid_write_full_rows(s, stripe, buf);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* dst = a ^ b, a word at a time (len is whole sectors; b may be unaligned). */
static void xor_words(uint8_t *restrict dst, const uint8_t *restrict a, const uint8_t *restrict b,
		      size_t len)
{
	for (size_t i = 0; i < len; i += sizeof(uint64_t)) {
		uint64_t x, y;

		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, b + i, sizeof(y));
		x ^= y;
		memcpy(dst + i, &x, sizeof(x));
	}
}

/*
 * Read-modify-write of block b: read old data, P and Q, fold the change
 * into parity. 1 when it cannot be done this way (a needed member is out):
 * the caller then reconstruct-writes.
 */
static int raid_write_rmw(struct volume_seg *s, struct row *r, unsigned b, const uint8_t *buf)
{
	bool want[LAYOUT_MAX_DISKS] = { false }, mask[LAYOUT_MAX_DISKS] = { false };
	uint8_t *delta = r->extra;
	struct parity_stripe ps = row_parity(r);

	want[b] = true;
	for (unsigned p = r->k; p < r->nb; p++)
		want[p] = true;
	row_load(s, r, want);
	for (unsigned i = 0; i < r->nb; i++)
		if (want[i] && r->lost[i])
			return 1;
	xor_words(delta, r->blk[b], buf, r->len);
	s->parity->update(&ps, b, delta);
	memcpy(r->blk[b], buf, r->len);
	mask[b] = true;
	return row_store(s, r, mask, false);
}

static int raid_scrub_row(struct volume_seg *s, struct row *r, uint64_t stripe,
			  struct volume_scrub *sc);

/*
 * Loads the rest of a raid6 row for a reconstruct-write of block b, and
 * first checks the whole row against its P and Q: a block that went bad
 * silently would otherwise be folded into the new parity and could never
 * be found again (the soak saw it). A located bad block is rewritten and
 * logged as scrub does; an unlocatable row is logged and written as it is.
 * Returns 1 when a member is out (the caller solves the row instead).
 */
static int raid6_load_verified(struct volume_seg *s, struct row *r, uint64_t stripe)
{
	struct volume_scrub sc = { .mode = VOLUME_SCRUB_REPAIR };

	row_load(s, r, row_all);
	for (unsigned j = 0; j < r->nb; j++)
		if (r->lost[j])
			return 1;
	/* A repair that cannot be written fails its member; the write goes on. */
	raid_scrub_row(s, r, stripe, &sc);
	return 0;
}

/*
 * The piece pl names. raid6 reads the whole row, checks it and
 * reconstruct-writes; raid4/5 (which cannot tell a bad block from its
 * parity) read-modify-write when that reads less, else reconstruct-write,
 * which never reads a failed member.
 */
static int raid_write_piece(struct volume_seg *s, const struct volume_place *pl,
			    const uint8_t *buf)
{
	bool mask[LAYOUT_MAX_DISKS] = { false };
	bool raid6 = s->geom.level == 6;
	uint64_t stripe = pl->stripe, in = pl->in;
	unsigned b = pl->block;
	size_t len = (size_t)pl->len;
	struct row r;
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = row_init(s, &r, stripe, in, len);
	if (ret >= 0 && !raid6 && r.nb - r.k + 1 < r.k - 1) {
		ret = raid_write_rmw(s, &r, b, buf);
		if (ret <= 0)
			goto out;
		ret = row_init(s, &r, stripe, in, len);        /* start over: RCW */
	}
	if (ret >= 0 && raid6)
		ret = raid6_load_verified(s, &r, stripe);
	if (ret > 0 || (ret >= 0 && !raid6)) {
		bool others[LAYOUT_MAX_DISKS] = { false };
		bool lost = false;

		for (unsigned j = 0; j < r.k; j++)
			others[j] = j != b;
		row_load(s, &r, others);
		for (unsigned j = 0; j < r.k; j++)
			lost |= j != b && r.lost[j];
		ret = lost ? row_solve(s, &r, false) : 0;
	}
	if (ret >= 0) {
		memcpy(r.blk[b], buf, len);
		mask[b] = true;
		ret = row_store(s, &r, mask, true);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static uint64_t raid_unit_width(const struct volume_seg *s)
{
	return s->geom.chunk * layout_ndata(&s->geom);
}

/* A whole stripe when the range covers one, else a piece of one chunk. */
static ssize_t raid_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t width = raid_unit_width(s);
	struct volume_place p;
	ssize_t n;
	int r;

	volume_seg_place(s, off, len, &p);
	if (p.block == 0 && p.in == 0 && len >= width &&
	    (write || raid_stripe_degraded(s, p.stripe))) {
		p.len = width;
		r = write ? raid_write_full(s, p.stripe, buf) : raid_read_full_degraded(s, p.stripe, buf);
	} else if (!write && len > p.len && (n = raid_read_span(s, buf, len, off)) > 0) {
		return n;
	} else {
		r = write ? raid_write_piece(s, &p, buf) : raid_read_piece(s, &p, buf);
	}
	return r < 0 ? r : (ssize_t)p.len;
}

static uint64_t raid_unit(const struct volume_seg *s)
{
	return raid_unit_width(s);
}

static int raid_rebuild(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len)
{
	uint64_t width = raid_unit(s);
	int ret = 0;

	for (uint64_t st = off / width; ret >= 0 && st < DIV_ROUND_UP(off + len, width); st++) {
		struct row r;

		ret = row_init(s, &r, st, 0, s->geom.chunk);
		for (unsigned b = 0; ret >= 0 && b < r.nb; b++) {
			r.lost[b] = row_disk(&r, b) == m;
			if (r.lost[b])
				r.only = (int)b;        /* another lost block need not be solved */
		}
		if (ret >= 0)
			ret = row_solve(s, &r, false);
		for (unsigned b = 0; ret >= 0 && b < r.nb; b++)
			if (row_disk(&r, b) == m)
				ret = volume_mwrite(s, m, r.blk[b], r.len, r.devoff);
	}
	return ret;
}

/* A resync: stored parity that differs from the data's is rewritten. */
static int raid_resync_row(struct volume_seg *s, struct row *r, const uint8_t *p, const uint8_t *q)
{
	int ret = 0;

	for (unsigned b = r->k; ret >= 0 && b < r->nb; b++) {
		const uint8_t *want = b == r->k ? p : q;

		if (memcmp(want, r->blk[b], r->len))
			ret = volume_mwrite(s, row_disk(r, b), want, r->len, r->devoff);
	}
	return ret;
}

/*
 * The right content of block b of a row whose block b alone is wrong: P
 * or Q as the data gives them, or data rebuilt from the others and P
 * (into r->blk[b]).
 */
static const uint8_t *raid_fixed_block(struct volume_seg *s, struct row *r, unsigned b,
				       const uint8_t *p, const uint8_t *q)
{
	struct parity_stripe ps = row_parity(r);

	if (b >= r->k)
		return b == r->k ? p : q;
	ps.data_only = true;
	return s->parity->recover(&ps, 1, &b) < 0 ? NULL : r->blk[b];
}

/*
 * One whole row, every block read: stored parity against parity from the
 * data. A raid6 row names its one bad block from the P and Q syndromes
 * (parity_locate.c), which repair rewrites alone; raid4/5, or two bad
 * blocks, cannot be located and are left as they are. A resync after a
 * crash rewrites a located raid6 block the same way (a torn write's blocks
 * were never flushed, so old or new is as good, while a block gone bad at
 * rest keeps its data instead of being baked into parity); what cannot be
 * located gets parity from the data, as md does.
 */
static int raid_scrub_row(struct volume_seg *s, struct row *r, uint64_t stripe,
			  struct volume_scrub *sc)
{
	struct parity_stripe ps = row_parity(r), calc = ps;
	uint64_t width = raid_unit(s);
	struct volume_mismatch mm;
	const uint8_t *fix;
	size_t first, last;
	int b, ret = 0;

	calc.p = r->extra;
	calc.q = ps.q ? r->extra + r->len : NULL;
	s->parity->gen(&calc);
	b = parity_locate(&ps, calc.p, calc.q, &first, &last);
	if (b == -ENOENT)
		return 0;
	if (sc->mode == VOLUME_SCRUB_RESYNC && b < 0)
		return raid_resync_row(s, r, calc.p, calc.q);
	mm = (struct volume_mismatch){
		.seg = s->index, .stripe = stripe, .seg_off = stripe * width, .seg_len = width,
		.located = b >= 0, .member = b >= 0 ? row_disk(r, (unsigned)b) : 0,
	};

	volume_mismatch_narrow(&mm, r->devoff, first, last);
	if (b >= 0 && b < (int)r->k) {         /* a data block: its own bytes of the segment */
		mm.seg_off += (uint64_t)b * s->geom.chunk + (mm.dev_off - stripe * s->geom.chunk);
		mm.seg_len = mm.len;
	}
	if (b >= 0 && sc->mode != VOLUME_SCRUB_CHECK) {
		fix = raid_fixed_block(s, r, (unsigned)b, calc.p, calc.q);
		ret = fix ? volume_mwrite(s, mm.member, fix + (mm.dev_off - r->devoff), mm.len,
					  mm.dev_off) : -EIO;
		mm.repaired = ret == 0 && volume_mstate(s, mm.member) == VOLUME_MEMBER_OK;
	}
	volume_scrub_found(s, sc, &mm);
	return ret;
}

/*
 * The part of block b that its member cannot read: from its first
 * unreadable run to its last (volume_munreadable); one chunk at most,
 * rebuilt whole from the row anyway.
 */
static bool unreadable_range(struct volume_seg *s, struct row *r, unsigned b, uint64_t *ret_off,
			     uint64_t *ret_len)
{
	uint64_t at = 0, end, first = UINT64_MAX, last_end = 0;

	for (; volume_munreadable(s, row_disk(r, b), r->devoff, r->len, r->extra, &at, &end);
	     at = end) {
		first = MIN(first, at);
		last_end = end;
	}
	*ret_off = first;
	*ret_len = last_end - first;
	return first != UINT64_MAX;
}

/*
 * A row that working members could not all read (bad sectors): as md's
 * check does, each unreadable block is blamed on its member and, unless
 * only checking, rebuilt from the rest and written back, which lets a
 * disk remap the sector. Rows with failed members are rebuild's business.
 */
static int raid_scrub_unreadable(struct volume_seg *s, struct row *r, uint64_t stripe,
				 struct volume_scrub *sc)
{
	bool bad[LAYOUT_MAX_DISKS];
	uint64_t width = raid_unit(s);
	unsigned nbad = 0;
	int ret = 0;

	uint64_t at[LAYOUT_MAX_DISKS], len[LAYOUT_MAX_DISKS];

	for (unsigned b = 0; b < r->nb; b++) {
		/* Found before the rewrite, which may cure it. */
		bad[b] = r->rewrite[b] && unreadable_range(s, r, b, &at[b], &len[b]);
		nbad += bad[b];
		if (sc->mode == VOLUME_SCRUB_CHECK)
			r->rewrite[b] = false;
	}
	if (!nbad)
		return 0;       /* a failed member alone: rebuild's business */
	if (sc->mode != VOLUME_SCRUB_CHECK)
		ret = row_solve(s, r, false);
	for (unsigned b = 0; b < r->nb; b++) {
		struct volume_mismatch mm = {
			.seg = s->index, .stripe = stripe, .located = true, .member = row_disk(r, b),
			.dev_off = r->devoff + at[b], .len = len[b],
			.seg_off = stripe * width + (b < r->k ? b * s->geom.chunk + at[b] : 0),
			.seg_len = b < r->k ? len[b] : width,
		};

		if (!bad[b])
			continue;
		mm.repaired = ret == 0 && sc->mode != VOLUME_SCRUB_CHECK &&
			      volume_mstate(s, mm.member) == VOLUME_MEMBER_OK;
		volume_scrub_found(s, sc, &mm);
	}
	return ret == -EIO ? 0 : ret;   /* beyond redundancy: reported, the pass goes on */
}

static int raid_scrub(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc)
{
	uint64_t width = raid_unit(s);
	int ret = 0;

	for (uint64_t st = off / width; ret >= 0 && st < DIV_ROUND_UP(off + len, width); st++) {
		bool degraded = false;
		uint64_t found;
		struct row r;

		ret = row_init(s, &r, st, 0, s->geom.chunk);
		if (ret < 0)
			break;
		row_load(s, &r, row_all);
		for (unsigned b = 0; b < r.nb; b++)
			degraded |= r.lost[b];
		/* A degraded row has nothing to compare against, but its
		 * unreadable blocks can be written back. */
		if (degraded) {
			ret = raid_scrub_unreadable(s, &r, st, sc);
			continue;
		}
		found = sc->count;
		ret = raid_scrub_row(s, &r, st, sc);
		/* Agreed with P (and Q): the data blocks are what a read returns. */
		for (unsigned b = 0; ret >= 0 && sc->count == found && b < r.k; b++)
			volume_scrub_consistent(sc, st * width + b * s->geom.chunk, r.blk[b], r.len);
	}
	return ret;
}

/*
 * A piece read checked first: a raid6 row is read whole and compared with
 * its P and Q, and a bad block they locate is rewritten (logged as scrub
 * does) before the data is handed out; a row with a member out is solved
 * as a degraded read. raid4/5 cannot tell which block is bad: a plain read.
 */
static ssize_t raid_read_checked(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	struct volume_scrub sc = { .mode = VOLUME_SCRUB_REPAIR };
	struct volume_place p;
	bool lost = false;
	struct row r;
	int ret;

	if (s->geom.level != 6)
		return raid_io(s, false, buf, len, off);
	volume_seg_place(s, off, len, &p);
	pthread_mutex_lock(&s->lock);
	ret = row_init(s, &r, p.stripe, p.in, (size_t)p.len);
	if (ret >= 0) {
		row_load(s, &r, row_all);
		for (unsigned j = 0; j < r.nb; j++)
			lost |= r.lost[j];
		/* A repair that cannot be written fails its member; the read goes on. */
		ret = lost ? row_solve(s, &r, true) : (raid_scrub_row(s, &r, p.stripe, &sc), 0);
	}
	if (ret >= 0)
		memcpy(buf, r.blk[p.block], (size_t)p.len);
	pthread_mutex_unlock(&s->lock);
	return ret < 0 ? ret : (ssize_t)p.len;
}

const struct volume_target_ops volume_raid_ops = {
	.name = "raid",
	.check = raid_check,
	.io = raid_io,
	.rebuild = raid_rebuild,
	.scrub = raid_scrub,
	.scrub_span = raid_scrub_span,
	.unit = raid_unit,
	.read_checked = raid_read_checked,
};
