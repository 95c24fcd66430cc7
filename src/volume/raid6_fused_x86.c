/*
 * raid6_fused_x86.c - the vector loops of the fused RAID6 kernels
 * (raid6_fused.c plans them and picks one by what the CPU has): AVX-512
 * (F + BW) two 64-byte lines a step, AVX2 two 32-byte lines, so two
 * independent Horner chains keep the core busy while lines stream in and
 * out. Times 2 in GF(2^8) is a byte add plus 0x1d where the top bit fell
 * out; times a constant (recovery) is two 16-entry nibble lookups (pshufb).
 * Each loop is built for each store kind and, for reads, with and without
 * Q, so the inner loop carries no tests.
 */
#ifdef __x86_64__
#include <immintrin.h>
#include <stdbool.h>

#include "raid6_fused.h"

#define INLINE static inline __attribute__((always_inline))
#define T512 __attribute__((target("avx512f,avx512bw")))
#define T256 __attribute__((target("avx2")))

/*
 * Lines of each block a write step handles. Measured on this machine (a
 * throwaway loop over ten 16 MiB members, medians of 11, ratio to pq_gen):
 * one line a step 0.41-0.44 (ten streaming-store streams switching every
 * line), two 0.47-0.51, four 0.44-0.49. Loads plus streaming stores, not
 * the parity arithmetic, set the pace: the same loop without P and Q, or
 * with GFNI's one-instruction multiply by 2, runs no faster.
 */
#define Z_LINES 2
/*
 * Reads prefetch this far ahead in each surviving block (member memory, not
 * cache): two lost data blocks a stripe went from 0.37-0.39 to 0.40-0.43 of
 * pq_gen in the same loop; writes (their source is in cache) did not gain.
 */
#define READ_AHEAD 1024

/* AVX-512 */

T512 INLINE __m512i z_mul2(__m512i v)
{
	__mmask64 hi = _mm512_movepi8_mask(v);

	v = _mm512_add_epi8(v, v);
	return _mm512_xor_si512(v, _mm512_maskz_mov_epi8(hi, _mm512_set1_epi8(0x1d)));
}

/* v times the constant whose nibble products tab holds. */
T512 INLINE __m512i z_mulc(__m512i v, const uint8_t *tab)
{
	__m512i m = _mm512_set1_epi8(0x0f);
	__m512i lo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)tab));
	__m512i hi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(tab + 16)));

	return _mm512_xor_si512(_mm512_shuffle_epi8(lo, _mm512_and_si512(v, m)),
				_mm512_shuffle_epi8(hi, _mm512_and_si512(_mm512_srli_epi16(v, 4), m)));
}

T512 INLINE void z_put(uint8_t *d, __m512i v, bool stream)
{
	if (stream)
		_mm512_stream_si512((void *)d, v);
	else
		_mm512_storeu_si512(d, v);
}

T512 INLINE void z_write(const struct raid6_fused_plan *pl, size_t end, bool stream)
{
	for (size_t i = 0; i < end; i += 64 * Z_LINES) {
		__m512i p[Z_LINES], q[Z_LINES];

		for (int l = 0; l < Z_LINES; l++)
			p[l] = q[l] = _mm512_setzero_si512();
		for (unsigned t = 0; t < pl->nsteps; t++) {
			int b = pl->order[t];

			for (int l = 0; l < Z_LINES; l++)
				q[l] = z_mul2(q[l]);
			if (b < 0)
				continue;
			for (int l = 0; l < Z_LINES; l++) {
				__m512i x = _mm512_loadu_si512(pl->src[b] + i + 64 * l);

				z_put(pl->dst[b] + i + 64 * l, x, stream);
				p[l] = _mm512_xor_si512(p[l], x);
				q[l] = _mm512_xor_si512(q[l], x);
			}
		}
		for (int l = 0; l < Z_LINES; l++) {
			z_put(pl->dst[pl->ndata] + i + 64 * l, p[l], stream);
			z_put(pl->dst[pl->ndata + 1] + i + 64 * l, q[l], stream);
		}
	}
}

/* Solves one line from P' and Q' into the lost blocks' buffers at i. */
T512 INLINE void z_solve(const struct raid6_fused_plan *pl, size_t i, __m512i p, __m512i q,
			 bool stream)
{
	__m512i dx;

	switch (pl->solve) {
	case RAID6_SOLVE_NONE:
		break;
	case RAID6_SOLVE_P:
		z_put(pl->dst[pl->x] + i, p, stream);
		break;
	case RAID6_SOLVE_Q:
		z_put(pl->dst[pl->x] + i, z_mulc(q, pl->tab_a), stream);
		break;
	case RAID6_SOLVE_PQ:
		dx = _mm512_xor_si512(z_mulc(q, pl->tab_a), z_mulc(p, pl->tab_b));
		z_put(pl->dst[pl->x] + i, dx, stream);
		z_put(pl->dst[pl->y] + i, _mm512_xor_si512(p, dx), stream);
		break;
	}
}

T512 INLINE void z_read(const struct raid6_fused_plan *pl, size_t end, bool stream, bool want_q)
{
	for (size_t i = 0; i < end; i += 128) {
		__m512i p0 = _mm512_setzero_si512(), p1 = p0, q0 = p0, q1 = p0;

		if (pl->p) {
			p0 = _mm512_loadu_si512(pl->p + i);
			p1 = _mm512_loadu_si512(pl->p + i + 64);
		}
		for (unsigned t = 0; t < pl->nsteps; t++) {
			int b = pl->order[t];
			__m512i x0, x1;

			if (want_q) {
				q0 = z_mul2(q0);
				q1 = z_mul2(q1);
			}
			if (b < 0)
				continue;
			_mm_prefetch((const char *)pl->src[b] + i + READ_AHEAD, _MM_HINT_T0);
			_mm_prefetch((const char *)pl->src[b] + i + 64 + READ_AHEAD, _MM_HINT_T0);
			x0 = _mm512_loadu_si512(pl->src[b] + i);
			x1 = _mm512_loadu_si512(pl->src[b] + i + 64);
			z_put(pl->dst[b] + i, x0, stream);
			z_put(pl->dst[b] + i + 64, x1, stream);
			p0 = _mm512_xor_si512(p0, x0);
			p1 = _mm512_xor_si512(p1, x1);
			if (want_q) {
				q0 = _mm512_xor_si512(q0, x0);
				q1 = _mm512_xor_si512(q1, x1);
			}
		}
		if (want_q) {
			q0 = _mm512_xor_si512(q0, _mm512_loadu_si512(pl->q + i));
			q1 = _mm512_xor_si512(q1, _mm512_loadu_si512(pl->q + i + 64));
		}
		z_solve(pl, i, p0, q0, stream);
		z_solve(pl, i + 64, p1, q1, stream);
	}
}

T512 size_t raid6_fused_write_avx512(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / (64 * Z_LINES) * (64 * Z_LINES);

	if (pl->stream) {
		z_write(pl, end, true);
		_mm_sfence();   /* streamed stores are weakly ordered: order them now */
	} else {
		z_write(pl, end, false);
	}
	return end;
}

T512 size_t raid6_fused_read_avx512(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / 128 * 128;

	if (pl->stream && pl->want_q)
		z_read(pl, end, true, true);
	else if (pl->stream)
		z_read(pl, end, true, false);
	else if (pl->want_q)
		z_read(pl, end, false, true);
	else
		z_read(pl, end, false, false);
	if (pl->stream)
		_mm_sfence();
	return end;
}

/* AVX2 */

T256 INLINE __m256i y_mul2(__m256i v)
{
	__m256i hi = _mm256_cmpgt_epi8(_mm256_setzero_si256(), v);

	v = _mm256_add_epi8(v, v);
	return _mm256_xor_si256(v, _mm256_and_si256(hi, _mm256_set1_epi8(0x1d)));
}

T256 INLINE __m256i y_mulc(__m256i v, const uint8_t *tab)
{
	__m256i m = _mm256_set1_epi8(0x0f);
	__m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
	__m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tab + 16)));

	return _mm256_xor_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, m)),
				_mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), m)));
}

T256 INLINE __m256i y_get(const uint8_t *s)
{
	return _mm256_loadu_si256((const __m256i *)s);
}

T256 INLINE void y_put(uint8_t *d, __m256i v, bool stream)
{
	if (stream)
		_mm256_stream_si256((__m256i *)d, v);
	else
		_mm256_storeu_si256((__m256i *)d, v);
}

T256 INLINE void y_write(const struct raid6_fused_plan *pl, size_t end, bool stream)
{
	for (size_t i = 0; i < end; i += 64) {
		__m256i p0 = _mm256_setzero_si256(), p1 = p0, q0 = p0, q1 = p0;

		for (unsigned t = 0; t < pl->nsteps; t++) {
			int b = pl->order[t];
			__m256i x0, x1;

			q0 = y_mul2(q0);
			q1 = y_mul2(q1);
			if (b < 0)
				continue;
			x0 = y_get(pl->src[b] + i);
			x1 = y_get(pl->src[b] + i + 32);
			y_put(pl->dst[b] + i, x0, stream);
			y_put(pl->dst[b] + i + 32, x1, stream);
			p0 = _mm256_xor_si256(p0, x0);
			p1 = _mm256_xor_si256(p1, x1);
			q0 = _mm256_xor_si256(q0, x0);
			q1 = _mm256_xor_si256(q1, x1);
		}
		y_put(pl->dst[pl->ndata] + i, p0, stream);
		y_put(pl->dst[pl->ndata] + i + 32, p1, stream);
		y_put(pl->dst[pl->ndata + 1] + i, q0, stream);
		y_put(pl->dst[pl->ndata + 1] + i + 32, q1, stream);
	}
}

T256 INLINE void y_solve(const struct raid6_fused_plan *pl, size_t i, __m256i p, __m256i q,
			 bool stream)
{
	__m256i dx;

	switch (pl->solve) {
	case RAID6_SOLVE_NONE:
		break;
	case RAID6_SOLVE_P:
		y_put(pl->dst[pl->x] + i, p, stream);
		break;
	case RAID6_SOLVE_Q:
		y_put(pl->dst[pl->x] + i, y_mulc(q, pl->tab_a), stream);
		break;
	case RAID6_SOLVE_PQ:
		dx = _mm256_xor_si256(y_mulc(q, pl->tab_a), y_mulc(p, pl->tab_b));
		y_put(pl->dst[pl->x] + i, dx, stream);
		y_put(pl->dst[pl->y] + i, _mm256_xor_si256(p, dx), stream);
		break;
	}
}

T256 INLINE void y_read(const struct raid6_fused_plan *pl, size_t end, bool stream, bool want_q)
{
	for (size_t i = 0; i < end; i += 64) {
		__m256i p0 = _mm256_setzero_si256(), p1 = p0, q0 = p0, q1 = p0;

		if (pl->p) {
			p0 = y_get(pl->p + i);
			p1 = y_get(pl->p + i + 32);
		}
		for (unsigned t = 0; t < pl->nsteps; t++) {
			int b = pl->order[t];
			__m256i x0, x1;

			if (want_q) {
				q0 = y_mul2(q0);
				q1 = y_mul2(q1);
			}
			if (b < 0)
				continue;
			_mm_prefetch((const char *)pl->src[b] + i + READ_AHEAD, _MM_HINT_T0);
			x0 = y_get(pl->src[b] + i);
			x1 = y_get(pl->src[b] + i + 32);
			y_put(pl->dst[b] + i, x0, stream);
			y_put(pl->dst[b] + i + 32, x1, stream);
			p0 = _mm256_xor_si256(p0, x0);
			p1 = _mm256_xor_si256(p1, x1);
			if (want_q) {
				q0 = _mm256_xor_si256(q0, x0);
				q1 = _mm256_xor_si256(q1, x1);
			}
		}
		if (want_q) {
			q0 = _mm256_xor_si256(q0, y_get(pl->q + i));
			q1 = _mm256_xor_si256(q1, y_get(pl->q + i + 32));
		}
		y_solve(pl, i, p0, q0, stream);
		y_solve(pl, i + 32, p1, q1, stream);
	}
}

T256 size_t raid6_fused_write_avx2(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / 64 * 64;

	if (pl->stream) {
		y_write(pl, end, true);
		_mm_sfence();
	} else {
		y_write(pl, end, false);
	}
	return end;
}

T256 size_t raid6_fused_read_avx2(const struct raid6_fused_plan *pl)
{
	size_t end = pl->len / 64 * 64;

	if (pl->stream && pl->want_q)
		y_read(pl, end, true, true);
	else if (pl->stream)
		y_read(pl, end, true, false);
	else if (pl->want_q)
		y_read(pl, end, false, true);
	else
		y_read(pl, end, false, false);
	if (pl->stream)
		_mm_sfence();
	return end;
}
#endif
