/*
 * raid6_fused_x86.c - the vector loops of the fused RAID6 kernels
 * (raid6_fused.c plans them and picks one by what the CPU has), made from
 * one template (raid6_fused_loop.h) for AVX-512 (F + BW, 64-byte vectors)
 * and AVX2 (32-byte vectors).
 *
 * Two lines of each block a step (raid6_fused_loop.h). Measured on this machine (a
 * throwaway loop over ten 16 MiB members, medians of 11, ratio to pq_gen):
 * one 64-byte line a step 0.41-0.44 (ten streams of streaming stores
 * switching every line), two 0.47-0.51, four 0.44-0.49. Loads plus
 * streaming stores, not the parity arithmetic, set the pace: the same loop
 * without P and Q, or with GFNI's one-instruction multiply by 2, runs no
 * faster. Reads prefetch each surviving block (member memory, not cache)
 * READ_AHEAD bytes ahead: two lost data blocks a stripe went from
 * 0.37-0.39 to 0.40-0.43 of pq_gen in the same loop; writes (their source
 * is in cache) did not gain.
 */
#ifdef __x86_64__
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "raid6_fused.h"

#define INLINE static inline __attribute__((always_inline))
#define READ_AHEAD 1024

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
#include "raid6_fused_loop.h"
#undef VEC
#undef SVEC
#undef W
#undef TGT
#undef SFX
#undef V_STREAM
#undef V_SHUF
#undef V_TAB

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
