/*
 * raid6_fused_x86.c - the vector loops of the fused RAID6 kernels
 * (raid6_fused.c plans them and picks one by what the CPU has), made from
 * one template (raid6_fused_loop.h) for AVX-512 (F + BW, 64-byte vectors)
 * and AVX2 (32-byte vectors).
 *
 * Writes go a 4 KiB round at a time, one member's stream of stores after
 * the other, P and Q gathered in L1 (raid6_fused_loop.h). Measured on this
 * machine (a loop over ten 64 MiB members in huge pages, 256 KiB chunks,
 * CPU time, medians of 9 against pq_gen in the same run, four alternations):
 * the earlier loop over all ten blocks two lines a step, ten streams of
 * streaming stores interleaved, 0.48-0.52; rounds of 4 KiB 0.51-0.55,
 * the speed of the same loop with no P and Q at all (loads and streamed
 * stores only: 0.51-0.56); rounds of 2 KiB 0.48-0.51, 8 KiB 0.52, 16 KiB
 * 0.47, 32 KiB 0.41 (P and Q spill from L1). Streamed stores with no
 * loads reach 0.66-0.72, and with the loads served from L2 or L1 (a source
 * of 256 KiB or 4 KiB) 0.60 and 0.69: the 2 MiB source, which does not stay
 * in the core's 2 MiB of L2, sets the pace, not the parity arithmetic.
 * Prefetching the piece loaded next while a piece is copied gains about
 * 0.02 here (0.50-0.53 -> 0.52-0.56 in three alternations) and 0.01-0.03
 * when each stripe's source is new data from L3 rather than one buffer
 * rewritten (a 16 MiB source: 0.46-0.49 -> 0.47-0.50); into L1 or L2 alike.
 * A source in huge pages did not gain.
 *
 * Reads still do two lines of every block a step, and prefetch each
 * surviving block (member memory, not cache) READ_AHEAD bytes ahead: two
 * lost data blocks a stripe went from 0.37-0.39 to 0.40-0.43 of pq_gen.
 * Multiplying by 2 is add, sign-to-mask and a masked 0x1d (V_MUL2 for
 * AVX-512: GCC's generic vector compare left a second load and an AND in
 * the loop).
 */
#ifdef __x86_64__
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "pony/util.h"
#include "raid6_fused.h"

#define INLINE static inline __attribute__((always_inline))
#define READ_AHEAD 1024
#define FUSED_BLOCK 4096                /* bytes of each block a round of a write */

typedef uint8_t v64u __attribute__((vector_size(64)));
typedef int8_t v64s __attribute__((vector_size(64)));
typedef uint8_t v32u __attribute__((vector_size(32)));
typedef int8_t v32s __attribute__((vector_size(32)));

#define VEC v64u
#define SVEC v64s
#define W 64
#define TGT __attribute__((target("avx512f,avx512bw")))
#define SFX(name) name##_avx512
#define V_STREAM(p, v) _mm512_stream_si512((void *)(p), (__m512i)(v))
#define V_SHUF(t, i) ((VEC)_mm512_shuffle_epi8((__m512i)(t), (__m512i)(i)))
#define V_TAB(p) ((VEC)_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(p))))
#define V_MUL2(v) ((v + v) ^ (VEC)_mm512_maskz_mov_epi8(_mm512_movepi8_mask((__m512i)(v)), \
							  _mm512_set1_epi8(0x1d)))
#include "raid6_fused_loop.h"
#undef VEC
#undef SVEC
#undef W
#undef TGT
#undef SFX
#undef V_STREAM
#undef V_SHUF
#undef V_TAB
#undef V_MUL2

#define VEC v32u
#define SVEC v32s
#define W 32
#define TGT __attribute__((target("avx2")))
#define SFX(name) name##_avx2
#define V_STREAM(p, v) _mm256_stream_si256((__m256i *)(p), (__m256i)(v))
#define V_SHUF(t, i) ((VEC)_mm256_shuffle_epi8((__m256i)(t), (__m256i)(i)))
#define V_TAB(p) ((VEC)_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p))))
#include "raid6_fused_loop.h"
#endif
