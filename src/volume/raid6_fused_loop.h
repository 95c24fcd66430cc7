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
 * Two lines of W bytes go to a block a step: two independent Horner
 * chains, and two lines in a row to each member's stream of stores.
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
	VEC hi = (VEC)((SVEC)v < 0);

	return (v + v) ^ (hi & 0x1d);
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
			  VEC *p1, VEC *q0, VEC *q1, bool stream, bool want_q, bool ahead)
{
	int b = pl->order[t];
	VEC x0, x1;

	if (want_q) {
		*q0 = SFX(mul2)(*q0);
		*q1 = SFX(mul2)(*q1);
	}
	if (b < 0)
		return;
	for (size_t a = 0; ahead && a < 2 * W; a += 64)
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

TGT INLINE void SFX(write)(const struct raid6_fused_plan *pl, size_t end, bool stream)
{
	for (size_t i = 0; i < end; i += 2 * W) {
		VEC p0 = { 0 }, p1 = p0, q0 = p0, q1 = p0;

		for (unsigned t = 0; t < pl->nsteps; t++)
			SFX(step)(pl, t, i, &p0, &p1, &q0, &q1, stream, true, false);
		SFX(put)(pl->dst[pl->ndata] + i, p0, stream);
		SFX(put)(pl->dst[pl->ndata] + i + W, p1, stream);
		SFX(put)(pl->dst[pl->ndata + 1] + i, q0, stream);
		SFX(put)(pl->dst[pl->ndata + 1] + i + W, q1, stream);
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
			SFX(step)(pl, t, i, &p0, &p1, &q0, &q1, stream, want_q, true);
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
