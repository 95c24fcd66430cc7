/*
 * raid6_fused_loop.h - the fused RAID6 vector loops, written once for any
 * vector width and included by raid6_fused_x86.c once per instruction set
 * (as Linux's lib/raid6 makes its loops for each width from one template).
 * The includer defines VEC and SVEC (GCC vectors of W uint8_t and int8_t),
 * W, TGT (the target attribute), SFX(name) (a per-set name), V_STREAM(p, v)
 * (a streaming store), V_SHUF(t, i) (pshufb) and V_TAB(p) (16 bytes repeated
 * across a vector).
 *
 * Times 2 in GF(2^8) is a byte add plus 0x1d where the top bit fell out;
 * times a constant (recovery) is two 16-entry nibble lookups. Each loop is
 * built for each store kind and, for reads, with and without Q (constant
 * arguments of always-inline bodies), so the inner loop carries no tests.
 * Writes go in rounds of FUSED_BLOCK bytes, one member at a time (below);
 * reads take two lines of W bytes of every block a step: two independent
 * Horner chains, and two lines in a row to each stream of stores.
 */

TGT INLINE VEC SFX(get)(const uint8_t *p)
{
	VEC v;

	memcpy(&v, p, W);
	return v;
}

TGT INLINE void SFX(put)(uint8_t *p, VEC v, bool stream)
{
	if (stream)
		V_STREAM(p, v);
	else
		memcpy(p, &v, W);
}

TGT INLINE VEC SFX(mul2)(VEC v)
{
#ifdef V_MUL2
	return V_MUL2(v);
#else
	VEC hi = (VEC)((SVEC)v < 0);

	return (v + v) ^ (hi & 0x1d);
#endif
}

/* v times the constant whose nibble products tab holds. */
TGT INLINE VEC SFX(mulc)(VEC v, const uint8_t *tab)
{
	return V_SHUF(V_TAB(tab), v & 0x0f) ^ V_SHUF(V_TAB(tab + 16), v >> 4);
}

/*
 * Horner step t over the line pair at i: Q' times 2, then block t's two
 * lines loaded once, stored where they go and folded into P' and Q'.
 */
TGT INLINE void SFX(step)(const struct raid6_fused_plan *pl, unsigned t, size_t i, VEC *p0,
			  VEC *p1, VEC *q0, VEC *q1, bool stream, bool want_q)
{
	int b = pl->order[t];
	VEC x0, x1;

	if (want_q) {
		*q0 = SFX(mul2)(*q0);
		*q1 = SFX(mul2)(*q1);
	}
	if (b < 0)
		return;
	for (size_t a = 0; a < 2 * W; a += 64)
		_mm_prefetch((const char *)pl->src[b] + i + a + READ_AHEAD, _MM_HINT_T0);
	x0 = SFX(get)(pl->src[b] + i);
	x1 = SFX(get)(pl->src[b] + i + W);
	SFX(put)(pl->dst[b] + i, x0, stream);
	SFX(put)(pl->dst[b] + i + W, x1, stream);
	*p0 ^= x0;
	*p1 ^= x1;
	if (want_q) {
		*q0 ^= x0;
		*q1 ^= x1;
	}
}

/*
 * Writes go a round of FUSED_BLOCK bytes at a time: each data block's piece
 * is loaded once, streamed to its member and folded into P and Q
 * accumulators that stay in L1, one member after the other; then P and Q
 * are streamed out. One stream of stores at a time rather than ten
 * interleaved ones. While a piece is copied, the piece loaded after it is
 * prefetched line by line (the hardware's prefetchers stop at each 4 KiB
 * page, and each piece starts a page of its own). Steps with nothing to
 * fold are extra doublings of Q (DDF's gaps), done over the accumulator on
 * their own. wpiece copies one piece and folds it in; the first of a round
 * (a constant argument) starts P and Q instead.
 */
TGT INLINE void SFX(wpiece)(const uint8_t *s, uint8_t *d, const uint8_t *pf, VEC *p, VEC *q,
			    size_t n, bool first, bool stream)
{
	for (size_t j = 0; j < n / W; j++) {
		VEC x = SFX(get)(s + j * W);

		if (j % (64 / W) == 0)
			_mm_prefetch((const char *)pf + j * W, _MM_HINT_T0);
		SFX(put)(d + j * W, x, stream);
		p[j] = first ? x : p[j] ^ x;
		q[j] = first ? x : SFX(mul2)(q[j]) ^ x;
	}
}

TGT INLINE void SFX(wdouble)(VEC *q, size_t n, unsigned times)
{
	for (unsigned k = 0; k < times; k++)
		for (size_t j = 0; j < n / W; j++)
			q[j] = SFX(mul2)(q[j]);
}

TGT INLINE void SFX(wout)(uint8_t *d, const VEC *v, size_t n, bool stream)
{
	for (size_t j = 0; j < n / W; j++)
		SFX(put)(d + j * W, v[j], stream);
}

/*
 * The piece loaded after piece k (in Horner order) of the round at i: the
 * next block's in this round, or the first block's in the next round when
 * that round is whole; otherwise piece k itself (nothing past the end).
 */
TGT INLINE const uint8_t *SFX(wnext)(const struct raid6_fused_plan *pl, const unsigned *seq,
				     unsigned nseq, unsigned k, size_t i, size_t end)
{
	if (k + 1 < nseq)
		return pl->src[seq[k + 1]] + i;
	if (i + 2 * FUSED_BLOCK <= end)
		return pl->src[seq[0]] + i + FUSED_BLOCK;
	return pl->src[seq[k]] + i;
}

TGT INLINE void SFX(write)(const struct raid6_fused_plan *pl, size_t end, bool stream)
{
	VEC p[FUSED_BLOCK / W], q[FUSED_BLOCK / W];
	unsigned seq[ARRAY_SIZE(pl->order)], nseq = 0;

	for (unsigned t = 0; t < pl->nsteps; t++)
		if (pl->order[t] >= 0)
			seq[nseq++] = (unsigned)pl->order[t];
	for (size_t i = 0; i < end; i += FUSED_BLOCK) {
		size_t n = end - i < FUSED_BLOCK ? end - i : FUSED_BLOCK;
		unsigned gaps = 0, k = 0;

		for (unsigned t = 0; t < pl->nsteps; t++) {
			int b = pl->order[t];
			const uint8_t *pf;

			if (b < 0) {
				gaps += k > 0;          /* doublings of zero: nothing */
				continue;
			}
			pf = SFX(wnext)(pl, seq, nseq, k, i, end);
			if (k++ == 0) {
				SFX(wpiece)(pl->src[b] + i, pl->dst[b] + i, pf, p, q, n, true, stream);
			} else {
				SFX(wdouble)(q, n, gaps);
				SFX(wpiece)(pl->src[b] + i, pl->dst[b] + i, pf, p, q, n, false, stream);
			}
			gaps = 0;
		}
		SFX(wdouble)(q, n, gaps);
		SFX(wout)(pl->dst[pl->ndata] + i, p, n, stream);
		SFX(wout)(pl->dst[pl->ndata + 1] + i, q, n, stream);
	}
}

/* Solves one line from P' and Q' into the lost blocks' buffers at i. */
TGT INLINE void SFX(solve)(const struct raid6_fused_plan *pl, size_t i, VEC p, VEC q, bool stream)
{
	VEC dx;

	switch (pl->solve) {
	case RAID6_SOLVE_NONE:
		break;
	case RAID6_SOLVE_P:
		SFX(put)(pl->dst[pl->x] + i, p, stream);
		break;
	case RAID6_SOLVE_Q:
		SFX(put)(pl->dst[pl->x] + i, SFX(mulc)(q, pl->tab_a), stream);
		break;
	case RAID6_SOLVE_PQ:
		dx = SFX(mulc)(q, pl->tab_a) ^ SFX(mulc)(p, pl->tab_b);
		SFX(put)(pl->dst[pl->x] + i, dx, stream);
		SFX(put)(pl->dst[pl->y] + i, p ^ dx, stream);
		break;
	}
}

TGT INLINE void SFX(read)(const struct raid6_fused_plan *pl, size_t end, bool stream, bool want_q)
{
	for (size_t i = 0; i < end; i += 2 * W) {
		VEC p0 = { 0 }, p1 = p0, q0 = p0, q1 = p0;

		if (pl->p) {
			p0 = SFX(get)(pl->p + i);
			p1 = SFX(get)(pl->p + i + W);
		}
		for (unsigned t = 0; t < pl->nsteps; t++)
			SFX(step)(pl, t, i, &p0, &p1, &q0, &q1, stream, want_q);
		if (want_q) {
			q0 ^= SFX(get)(pl->q + i);
			q1 ^= SFX(get)(pl->q + i + W);
		}
		SFX(solve)(pl, i, p0, q0, stream);
		SFX(solve)(pl, i + W, p1, q1, stream);
	}
}

TGT size_t SFX(raid6_fused_write)(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / (2 * W) * (2 * W);

	if (pl->stream) {
		SFX(write)(pl, end, true);
		_mm_sfence();   /* streamed stores are weakly ordered: order them now */
	} else {
		SFX(write)(pl, end, false);
	}
	return end;
}

TGT size_t SFX(raid6_fused_read)(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / (2 * W) * (2 * W);

	if (pl->stream && pl->want_q)
		SFX(read)(pl, end, true, true);
	else if (pl->stream)
		SFX(read)(pl, end, true, false);
	else if (pl->want_q)
		SFX(read)(pl, end, false, true);
	else
		SFX(read)(pl, end, false, false);
	if (pl->stream)
		_mm_sfence();
	return end;
}
