/*
 * parity_swar.c - the portable parity engine: GF(2^8) arithmetic on eight
 * bytes at once in a 64-bit word (SIMD within a register), the way Linux's
 * lib/raid6 int64 code does it, instead of a byte lookup table, which is
 * several times slower. Recovery works word by word too, so it needs no
 * scratch buffers: partial syndromes are formed in registers and solved.
 */
#include <errno.h>
#include <string.h>

#include "gf_swar.h"
#include "parity.h"

/*
 * Data block index for each Q exponent, highest first, so Horner's rule can
 * run over them: Q = (((D_max * g) ^ D_max-1) * g ...). Gaps (exponents no
 * block has, as in DDF layouts) are -1. Returns the highest exponent + 1.
 */
static unsigned swar_order(const struct parity_stripe *s, int16_t order[256])
{
	unsigned top = 0;

	memset(order, 0xff, 256 * sizeof(order[0]));
	for (unsigned i = 0; i < s->ndata; i++) {
		unsigned e = s->qexp && s->q ? s->qexp[i] : i;
		order[e] = (int16_t)i;
		if (e + 1 > top)
			top = e + 1;
	}
	return top;
}

static inline uint64_t word(const uint8_t *block, size_t w)
{
	uint64_t v;

	memcpy(&v, block + w * 8, 8);
	return v;
}

static inline void put_word(uint8_t *block, size_t w, uint64_t v)
{
	memcpy(block + w * 8, &v, 8);
}

/*
 * P and Q of word w over every data block except skip0/skip1 (taken as 0);
 * q may be NULL.
 */
static inline void swar_syndrome(const struct parity_stripe *s, const int16_t *order,
				 unsigned top, size_t w, int skip0, int skip1,
				 uint64_t *p, uint64_t *q)
{
	uint64_t pp = 0, qq = 0;

	for (int e = (int)top - 1; e >= 0; e--) {
		int i = order[e];
		uint64_t d = i < 0 || i == skip0 || i == skip1 ? 0 : word(s->data[i], w);

		pp ^= d;
		qq = swar_mul2(qq) ^ d;
	}
	*p = pp;
	if (q)
		*q = qq;
}

static void swar_gen(const struct parity_stripe *s)
{
	int16_t order[256];
	unsigned top = swar_order(s, order);
	size_t words = s->len / 8;

	for (size_t w = 0; w < words; w++) {
		uint64_t p, q;

		swar_syndrome(s, order, top, w, -1, -1, &p, s->q ? &q : NULL);
		put_word(s->p, w, p);
		if (s->q)
			put_word(s->q, w, q);
	}
}

static unsigned qexp_of(const struct parity_stripe *s, unsigned i)
{
	return s->qexp ? s->qexp[i] : i;
}

/* One data block x from P (and the other data); Q too, if it is lost as well. */
static void swar_recover_from_p(const struct parity_stripe *s, const int16_t *order,
				unsigned top, unsigned x, int q_lost)
{
	for (size_t w = 0; w < s->len / 8; w++) {
		uint64_t p, q;

		swar_syndrome(s, order, top, w, (int)x, -1, &p, NULL);
		put_word(s->data[x], w, p ^ word(s->p, w));
		if (q_lost) {
			swar_syndrome(s, order, top, w, -1, -1, &p, &q);
			put_word(s->q, w, q);
		}
	}
}

/* Data block x and P: Q ^ Q(without x) = g^e * Dx. */
static void swar_recover_data_p(const struct parity_stripe *s, const int16_t *order,
				unsigned top, unsigned x)
{
	uint8_t inv = parity_gf_inv(parity_gf_pow2(qexp_of(s, x)));

	for (size_t w = 0; w < s->len / 8; w++) {
		uint64_t p, q, dx;

		swar_syndrome(s, order, top, w, (int)x, -1, &p, &q);
		dx = swar_mulc(q ^ word(s->q, w), inv);
		put_word(s->data[x], w, dx);
		put_word(s->p, w, p ^ dx);
	}
}

/*
 * Data blocks x and y: with Pxy = Dx ^ Dy and Qxy = gx*Dx ^ gy*Dy,
 * Dx = (Qxy ^ gy*Pxy) / (gx ^ gy) and Dy = Pxy ^ Dx.
 */
static void swar_recover_two_data(const struct parity_stripe *s, const int16_t *order,
				  unsigned top, unsigned x, unsigned y)
{
	uint8_t gx = parity_gf_pow2(qexp_of(s, x)), gy = parity_gf_pow2(qexp_of(s, y));
	uint8_t inv = parity_gf_inv(gx ^ gy);

	for (size_t w = 0; w < s->len / 8; w++) {
		uint64_t p, q, pxy, qxy, dx;

		swar_syndrome(s, order, top, w, (int)x, (int)y, &p, &q);
		pxy = p ^ word(s->p, w);
		qxy = q ^ word(s->q, w);
		dx = swar_mulc(qxy ^ swar_mulc(pxy, gy), inv);
		put_word(s->data[x], w, dx);
		put_word(s->data[y], w, pxy ^ dx);
	}
}

static int swar_recover(const struct parity_stripe *s, unsigned nlost, const unsigned *lost_in)
{
	unsigned lost[2] = { 0, 0 };
	int16_t order[256];
	unsigned top;
	int r;

	memcpy(lost, lost_in, (nlost < 2 ? nlost : 2) * sizeof(lost[0]));
	r = parity_check_lost(s, nlost, lost);
	if (r < 0 || nlost == 0)
		return r;
	top = swar_order(s, order);
	if (lost[0] >= s->ndata) {      /* only parity lost */
		if (!s->data_only)
			swar_gen(s);
		return 0;
	}
	if (nlost == 1 || lost[1] == PARITY_Q(s))
		swar_recover_from_p(s, order, top, lost[0], nlost == 2 && !s->data_only);
	else if (lost[1] == PARITY_P(s))
		swar_recover_data_p(s, order, top, lost[0]);
	else
		swar_recover_two_data(s, order, top, lost[0], lost[1]);
	return 0;
}

static void swar_update(const struct parity_stripe *s, unsigned idx, const uint8_t *delta)
{
	uint8_t c = parity_gf_pow2(qexp_of(s, idx));

	for (size_t w = 0; w < s->len / 8; w++) {
		uint64_t d = word(delta, w);

		put_word(s->p, w, word(s->p, w) ^ d);
		if (s->q)
			put_word(s->q, w, word(s->q, w) ^ swar_mulc(d, c));
	}
}

const struct parity_ops parity_swar_ops = {
	.name = "swar",
	.gen = swar_gen,
	.recover = swar_recover,
	.update = swar_update,
};
