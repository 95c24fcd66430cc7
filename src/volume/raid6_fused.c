/*
 * raid6_fused.c - RAID6 full-stripe write and degraded read in one pass over
 * memory members (see raid6_fused.h for why). Q is computed by Horner's
 * rule over the data blocks, highest Q exponent first: q = q * 2 ^ D. A
 * write goes a round of a few KiB at a time: each data block's piece is
 * loaded once, streamed to its member and folded into P and Q accumulators
 * that stay in L1, then P and Q are streamed out; a read loads a few cache
 * lines of every surviving block a step and rebuilds in registers. Either
 * way the parity work overlaps the stores instead of following them.
 *
 * Three paths make the same bytes: AVX-512 (F + BW), AVX2 and portable
 * 64-bit SWAR words (gf_swar.h), chosen at run time by what the CPU has. The
 * vector paths do whole vector lines; the SWAR words finish the rest, so any
 * length and alignment works. The vector loops live in raid6_fused_x86.c.
 *
 * Stores, measured (8 + 2 members of 16 MiB, 256 KiB chunks, ratios to
 * pq_gen; writes in a loop over the members beside the engine, reads in
 * bench/volume --quick): writes into member memory reach 0.47-0.53 with
 * streaming (non-temporal) stores and 0.21-0.25 with ordinary ones, which
 * read each line for ownership first; 2-member-degraded reads reach
 * 0.39-0.43 streaming into the caller's buffer and 0.30-0.36 with ordinary
 * stores. A stripe (2 MiB here) does not fit the core's L2 either way, so
 * the caller loses little by finding it in memory rather than cache.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "gf_swar.h"
#include "parity.h"
#include "raid6_fused.h"

#define FUSED_STREAM_WRITE true         /* member memory: streaming stores */
#define FUSED_STREAM_READ true          /* the caller's buffer: streaming too */

static unsigned fused_qexp(const struct raid6_fused_stripe *s, unsigned i)
{
	return s->qexp ? s->qexp[i] : i;
}

/* Horner order of the data blocks; -EINVAL on a repeated exponent. */
static int plan_order(const struct raid6_fused_stripe *s, struct raid6_fused_plan *pl)
{
	unsigned top = 0;

	if (s->ndata < 1 || s->ndata > PARITY_MAX_DATA)
		return -EINVAL;
	for (unsigned i = 0; i < s->ndata; i++)
		if (fused_qexp(s, i) + 1 > top)
			top = fused_qexp(s, i) + 1;
	memset(pl->order, 0xff, sizeof(pl->order));
	for (unsigned i = 0; i < s->ndata; i++) {
		unsigned t = top - 1 - fused_qexp(s, i);

		if (pl->order[t] >= 0)
			return -EINVAL;
		pl->order[t] = (int16_t)i;
	}
	pl->nsteps = top;
	pl->ndata = s->ndata;
	pl->len = s->len;
	return 0;
}

static void plan_table(uint8_t tab[32], uint8_t c)
{
	for (unsigned n = 0; n < 16; n++) {
		tab[n] = parity_gf_mul(c, (uint8_t)n);
		tab[16 + n] = parity_gf_mul(c, (uint8_t)(n << 4));
	}
}

/*
 * Sets up a read: which blocks are lost and how to solve them. Lost data
 * blocks drop out of the Horner order (they add nothing to P' and Q').
 */
static int plan_read(const struct raid6_fused_stripe *s, const uint8_t *const *src,
		     struct raid6_fused_plan *pl)
{
	const uint8_t *p = src[s->ndata], *q = src[s->ndata + 1];
	unsigned lost[2], nlost = 0;

	for (unsigned i = 0; i < s->ndata; i++)
		if (!src[i] && nlost++ < 2)
			lost[nlost - 1] = i;
	if (nlost + !p + !q > 2)
		return -EINVAL;
	for (unsigned t = 0; t < pl->nsteps; t++)
		if (pl->order[t] >= 0 && !src[pl->order[t]])
			pl->order[t] = -1;
	pl->x = nlost > 0 ? lost[0] : 0;
	pl->y = nlost > 1 ? lost[1] : 0;
	if (nlost == 0) {
		pl->solve = RAID6_SOLVE_NONE;
	} else if (nlost == 1 && p) {
		pl->solve = RAID6_SOLVE_P;
		pl->p = p;
	} else if (nlost == 1) {
		pl->solve = RAID6_SOLVE_Q;    /* g^ex * Dx = Q' */
		pl->q = q;
		pl->a = parity_gf_inv(parity_gf_pow2(fused_qexp(s, pl->x)));
	} else {
		/* Dx ^ Dy = P', gx * Dx ^ gy * Dy = Q': Dx = (Q' ^ gy * P') / (gx ^ gy). */
		uint8_t gx = parity_gf_pow2(fused_qexp(s, pl->x));
		uint8_t gy = parity_gf_pow2(fused_qexp(s, pl->y));

		pl->solve = RAID6_SOLVE_PQ;
		pl->p = p;
		pl->q = q;
		pl->a = parity_gf_inv(gx ^ gy);
		pl->b = parity_gf_mul(pl->a, gy);
	}
	pl->want_q = pl->q != NULL;
	plan_table(pl->tab_a, pl->a);
	plan_table(pl->tab_b, pl->b);
	return 0;
}

/* The portable path, a 64-bit word at a time; the last word may be short. */

static inline uint64_t ld(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	if (n == 8)
		memcpy(&v, p, 8);
	else
		memcpy(&v, p, n);
	return v;
}

static inline void st(uint8_t *p, uint64_t v, size_t n)
{
	if (n == 8)
		memcpy(p, &v, 8);
	else
		memcpy(p, &v, n);
}

/* Horner step t at byte i (n bytes): Q' times 2, block t copied and folded in. */
static inline void swar_step(const struct raid6_fused_plan *pl, unsigned t, size_t i, size_t n,
			     uint64_t *p, uint64_t *q)
{
	int b = pl->order[t];
	uint64_t x;

	*q = swar_mul2(*q);
	if (b < 0)
		return;
	x = ld(pl->src[b] + i, n);
	st(pl->dst[b] + i, x, n);
	*p ^= x;
	*q ^= x;
}

static void swar_write_from(const struct raid6_fused_plan *pl, size_t from)
{
	for (size_t i = from; i < pl->len; i += 8) {
		size_t n = pl->len - i < 8 ? pl->len - i : 8;
		uint64_t p = 0, q = 0;

		for (unsigned t = 0; t < pl->nsteps; t++)
			swar_step(pl, t, i, n, &p, &q);
		st(pl->dst[pl->ndata] + i, p, n);
		st(pl->dst[pl->ndata + 1] + i, q, n);
	}
}

static void swar_read_from(const struct raid6_fused_plan *pl, size_t from)
{
	for (size_t i = from; i < pl->len; i += 8) {
		size_t n = pl->len - i < 8 ? pl->len - i : 8;
		uint64_t p = pl->p ? ld(pl->p + i, n) : 0, q = 0, dx;

		for (unsigned t = 0; t < pl->nsteps; t++)
			swar_step(pl, t, i, n, &p, &q);     /* Q' unused when not wanted */
		if (pl->q)
			q ^= ld(pl->q + i, n);
		switch (pl->solve) {
		case RAID6_SOLVE_NONE:
			break;
		case RAID6_SOLVE_P:
			st(pl->dst[pl->x] + i, p, n);
			break;
		case RAID6_SOLVE_Q:
			st(pl->dst[pl->x] + i, swar_mulc(q, pl->a), n);
			break;
		case RAID6_SOLVE_PQ:
			dx = swar_mulc(q, pl->a) ^ swar_mulc(p, pl->b);
			st(pl->dst[pl->x] + i, dx, n);
			st(pl->dst[pl->y] + i, p ^ dx, n);
			break;
		}
	}
}

/* Whether every block written lies on a width boundary (streaming stores need it). */
static bool plan_aligned(uint8_t *const *dst, unsigned n, size_t width)
{
	for (unsigned i = 0; i < n; i++)
		if ((uintptr_t)dst[i] % width)
			return false;
	return true;
}

/*
 * libgcc reads the CPU's features in a constructor, before any stripe is
 * written, so no __builtin_cpu_init() here (it would rewrite that shared
 * state from every thread).
 */
static enum raid6_fused_isa fused_best(void)
{
#ifdef __x86_64__
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		return RAID6_FUSED_AVX512;
	if (__builtin_cpu_supports("avx2"))
		return RAID6_FUSED_AVX2;
#endif
	return RAID6_FUSED_SWAR;
}

bool raid6_fused_isa_available(enum raid6_fused_isa isa)
{
	enum raid6_fused_isa best = fused_best();

	switch (isa) {
	case RAID6_FUSED_BEST:
	case RAID6_FUSED_SWAR:
		return true;
	case RAID6_FUSED_AVX2:
		return best >= RAID6_FUSED_AVX2;
	case RAID6_FUSED_AVX512:
		return best == RAID6_FUSED_AVX512;
	}
	return false;
}

/* The isa to run and whether to stream into dst[0..n-1]; -EOPNOTSUPP if absent. */
static int plan_isa(const struct raid6_fused_stripe *s, struct raid6_fused_plan *pl, unsigned n,
		    bool stream_default, enum raid6_fused_isa *ret)
{
	enum raid6_fused_isa isa = s->isa == RAID6_FUSED_BEST ? fused_best() : s->isa;

	if (!raid6_fused_isa_available(isa))
		return -EOPNOTSUPP;
	pl->stream = s->store == RAID6_FUSED_STORE_AUTO ? stream_default
		     : s->store == RAID6_FUSED_STORE_STREAM;
	pl->stream = pl->stream && isa != RAID6_FUSED_SWAR &&
		     plan_aligned(pl->dst, n, isa == RAID6_FUSED_AVX512 ? 64 : 32);
	*ret = isa;
	return 0;
}

/* One direction's loops: the vector ones by isa (NULL: none), then the portable rest. */
struct fused_loops {
	size_t (*vec[RAID6_FUSED_AVX512 + 1])(const struct raid6_fused_plan *pl);
	void (*rest)(const struct raid6_fused_plan *pl, size_t from);
	unsigned nparity;               /* blocks written after the data: P and Q, or none */
	bool stream;                    /* the measured store kind */
};

static const struct fused_loops fused_write_loops = {
#ifdef __x86_64__
	.vec = { [RAID6_FUSED_AVX2] = raid6_fused_write_avx2,
		 [RAID6_FUSED_AVX512] = raid6_fused_write_avx512 },
#endif
	.rest = swar_write_from,
	.nparity = 2,
	.stream = FUSED_STREAM_WRITE,
};

static const struct fused_loops fused_read_loops = {
#ifdef __x86_64__
	.vec = { [RAID6_FUSED_AVX2] = raid6_fused_read_avx2,
		 [RAID6_FUSED_AVX512] = raid6_fused_read_avx512 },
#endif
	.rest = swar_read_from,
	.stream = FUSED_STREAM_READ,
};

static int fused_run(const struct raid6_fused_stripe *s, struct raid6_fused_plan *pl,
		     const struct fused_loops *f)
{
	enum raid6_fused_isa isa;
	size_t done = 0;
	int r = plan_isa(s, pl, s->ndata + f->nparity, f->stream, &isa);

	if (r < 0)
		return r;
	if (f->vec[isa])
		done = f->vec[isa](pl);
	f->rest(pl, done);
	return 0;
}

int raid6_fused_write(const struct raid6_fused_stripe *s, const uint8_t *const *src,
		      uint8_t *const *dst)
{
	struct raid6_fused_plan pl = { .src = src, .dst = dst };
	int r = plan_order(s, &pl);

	return r < 0 ? r : fused_run(s, &pl, &fused_write_loops);
}

int raid6_fused_read(const struct raid6_fused_stripe *s, const uint8_t *const *src,
		     uint8_t *const *dst)
{
	struct raid6_fused_plan pl = { .src = src, .dst = dst };
	int r = plan_order(s, &pl);

	if (r >= 0)
		r = plan_read(s, src, &pl);
	return r < 0 ? r : fused_run(s, &pl, &fused_read_loops);
}
