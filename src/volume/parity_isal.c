/*
 * parity_isal.c - the parity engine on ISA-L: xor_gen and pq_gen for P and Q
 * in md's slot order, ec_encode_data with a generator matrix for DDF-style
 * exponents and for recovery. Recovery solves the lost data blocks from any
 * ndata surviving rows of the (ndata + 2) x ndata generator matrix (identity,
 * P row of ones, Q row of g^e), then regenerates lost parity.
 */
#include <errno.h>
#include <isa-l.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "parity.h"

static void isal_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
	if (dst != src)
		memcpy(dst, src, len);
}

static void isal_gen_p(const struct parity_stripe *s)
{
	void *v[PARITY_MAX_DATA + 1];

	if (s->ndata == 1) {    /* xor_gen wants two sources at least */
		isal_copy(s->p, s->data[0], s->len);
		return;
	}
	memcpy(v, s->data, s->ndata * sizeof(v[0]));
	v[s->ndata] = s->p;
	xor_gen((int)s->ndata + 1, (int)s->len, v);
}

static bool isal_qexp_is_plain(const struct parity_stripe *s)
{
	if (!s->qexp)
		return true;
	for (unsigned i = 0; i < s->ndata; i++)
		if (s->qexp[i] != i)
			return false;
	return true;
}

/* P and Q through a 2 x ndata matrix, for exponents pq_gen cannot express. */
static void isal_gen_matrix(const struct parity_stripe *s)
{
	uint8_t m[2 * PARITY_MAX_DATA], tbls[32 * 2 * PARITY_MAX_DATA];
	uint8_t *out[2] = { s->p, s->q };

	for (unsigned i = 0; i < s->ndata; i++) {
		m[i] = 1;
		m[s->ndata + i] = parity_gf_pow2(s->qexp ? s->qexp[i] : i);
	}
	ec_init_tables((int)s->ndata, 2, m, tbls);
	ec_encode_data((int)s->len, (int)s->ndata, 2, tbls, s->data, out);
}

static void isal_gen(const struct parity_stripe *s)
{
	void *v[PARITY_MAX_DATA + 2];

	if (!s->q) {
		isal_gen_p(s);
		return;
	}
	if (s->ndata < 2 || !isal_qexp_is_plain(s)) {
		isal_gen_matrix(s);
		return;
	}
	memcpy(v, s->data, s->ndata * sizeof(v[0]));
	v[s->ndata] = s->p;
	v[s->ndata + 1] = s->q;
	pq_gen((int)s->ndata + 2, (int)s->len, v);
}

/* Row r of the generator matrix: data rows are unit vectors. */
static void isal_gen_row(const struct parity_stripe *s, unsigned r, uint8_t *row)
{
	for (unsigned i = 0; i < s->ndata; i++) {
		if (r < s->ndata)
			row[i] = i == r;
		else if (r == PARITY_P(s))
			row[i] = 1;
		else
			row[i] = parity_gf_pow2(s->qexp ? s->qexp[i] : i);
	}
}

static uint8_t *isal_block(const struct parity_stripe *s, unsigned r)
{
	return r < s->ndata ? s->data[r] : r == PARITY_P(s) ? s->p : s->q;
}

/*
 * The decoding tables of the last failure patterns solved on this thread: a
 * degraded array meets the same few patterns stripe after stripe (two lost
 * members give one pattern per parity rotation), so the matrix inversion
 * and table expansion are done once per pattern, not per stripe. The key
 * is everything the tables depend on.
 */
#define ISAL_CACHE_SLOTS 16
struct isal_decode_cache {
	bool valid, has_q;
	unsigned k, ndl, nlost, lost[2];
	uint8_t qexp[PARITY_MAX_DATA];
	uint8_t tbls[32 * 2 * PARITY_MAX_DATA];
};
static _Thread_local struct isal_decode_cache isal_cache[ISAL_CACHE_SLOTS];
static _Thread_local unsigned isal_cache_next;

static void isal_key(const struct parity_stripe *s, unsigned ndl, const unsigned *lost,
		     unsigned nlost, struct isal_decode_cache *key)
{
	memset(key, 0, offsetof(struct isal_decode_cache, tbls));
	key->valid = true;
	key->has_q = s->q != NULL;
	key->k = s->ndata;
	key->ndl = ndl;
	key->nlost = nlost;
	memcpy(key->lost, lost, nlost * sizeof(lost[0]));
	for (unsigned i = 0; i < s->ndata; i++)
		key->qexp[i] = s->qexp ? s->qexp[i] : (uint8_t)i;
}

/* Fills cache->tbls for the key in it: decoding rows for the lost data blocks. */
static int isal_decode_tables(const struct parity_stripe *s, unsigned ndl,
			      struct isal_decode_cache *c)
{
	unsigned k = s->ndata, nb = k + (s->q ? 2 : 1), rows = 0;
	uint8_t b[PARITY_MAX_DATA * PARITY_MAX_DATA], inv[PARITY_MAX_DATA * PARITY_MAX_DATA];
	uint8_t dec[2 * PARITY_MAX_DATA];

	for (unsigned r = 0; r < nb && rows < k; r++) {
		bool gone = false;

		for (unsigned j = 0; j < c->nlost; j++)
			gone |= c->lost[j] == r;
		if (!gone)
			isal_gen_row(s, r, b + rows++ * k);
	}
	if (rows < k || gf_invert_matrix(b, inv, (int)k) < 0)
		return -EINVAL;
	for (unsigned j = 0; j < ndl; j++)
		memcpy(dec + j * k, inv + c->lost[j] * k, k);
	ec_init_tables((int)k, (int)ndl, dec, c->tbls);
	return 0;
}

/*
 * Solves the lost data blocks lost[0..ndl-1] (all < ndata) in one pass;
 * lost[ndl..nlost-1] are lost too but not wanted.
 */
static int isal_solve_data(const struct parity_stripe *s, unsigned ndl, const unsigned *lost,
			   unsigned nlost)
{
	unsigned k = s->ndata, nb = k + (s->q ? 2 : 1), rows = 0;
	struct isal_decode_cache key, *c = NULL;
	uint8_t *src[PARITY_MAX_DATA], *out[2];

	isal_key(s, ndl, lost, nlost, &key);
	for (unsigned i = 0; i < ISAL_CACHE_SLOTS && !c; i++)
		if (!memcmp(&key, &isal_cache[i], offsetof(struct isal_decode_cache, tbls)))
			c = &isal_cache[i];
	if (!c) {
		int r = isal_decode_tables(s, ndl, &key);

		if (r < 0)
			return r;
		c = &isal_cache[isal_cache_next++ % ISAL_CACHE_SLOTS];
		*c = key;
	}
	for (unsigned r = 0; r < nb && rows < k; r++) {
		bool gone = false;

		for (unsigned j = 0; j < nlost; j++)
			gone |= lost[j] == r;
		if (!gone)
			src[rows++] = isal_block(s, r);
	}
	for (unsigned j = 0; j < ndl; j++)
		out[j] = s->data[lost[j]];
	ec_encode_data((int)s->len, (int)k, (int)ndl, c->tbls, src, out);
	return 0;
}

static int isal_recover(const struct parity_stripe *s, unsigned nlost, const unsigned *lost_in)
{
	unsigned lost[2] = { 0, 0 }, ndl = 0;
	bool one_data = s->one_only && s->one < s->ndata;
	int r;

	memcpy(lost, lost_in, (nlost < 2 ? nlost : 2) * sizeof(lost[0]));
	r = parity_check_lost(s, nlost, lost);
	if (r < 0 || nlost == 0)
		return r;
	while (ndl < nlost && lost[ndl] < s->ndata)
		ndl++;
	if (one_data && ndl == 2 && (lost[0] == s->one || lost[1] == s->one)) {
		/* One of two lost data blocks: one decoding row instead of two. */
		unsigned order[2] = { s->one, lost[0] == s->one ? lost[1] : lost[0] };

		return isal_solve_data(s, 1, order, 2);
	}
	if (ndl == 1 && (nlost == 1 || lost[1] == PARITY_Q(s))) {
		/* The common degraded read: plain XOR of the rest and P. */
		void *v[PARITY_MAX_DATA + 1];
		unsigned n = 0;

		for (unsigned i = 0; i < s->ndata; i++)
			if (i != lost[0])
				v[n++] = s->data[i];
		v[n++] = s->p;
		if (n == 1)
			isal_copy(s->data[lost[0]], s->p, s->len);
		else {
			v[n] = s->data[lost[0]];
			xor_gen((int)n + 1, (int)s->len, v);
		}
	} else if (ndl) {
		r = isal_solve_data(s, ndl, lost, nlost);
		if (r < 0)
			return r;
	}
	if (ndl < nlost && !s->data_only && !one_data)
		isal_gen(s);
	return 0;
}

static void isal_update(const struct parity_stripe *s, unsigned idx, const uint8_t *delta)
{
	uint8_t tbl[32];

	/* dest ^= c * delta: c = 1 for P, g^e for Q. */
	gf_vect_mul_init(1, tbl);
	gf_vect_mad((int)s->len, 1, 0, tbl, (uint8_t *)delta, s->p);
	if (s->q) {
		gf_vect_mul_init(parity_gf_pow2(s->qexp ? s->qexp[idx] : idx), tbl);
		gf_vect_mad((int)s->len, 1, 0, tbl, (uint8_t *)delta, s->q);
	}
}

const struct parity_ops parity_isal_ops = {
	.name = "isal",
	.gen = isal_gen,
	.recover = isal_recover,
	.update = isal_update,
};
