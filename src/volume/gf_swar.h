/*
 * gf_swar.h - GF(2^8) arithmetic (polynomial 0x11d, md's field) on eight
 * bytes at once in a 64-bit word, SIMD within a register as Linux's
 * lib/raid6 int64 code does it: several times faster than a byte lookup
 * table. Shared by the SWAR parity engine and the fused RAID6 kernels'
 * portable path, which must produce the same bytes.
 */
#ifndef PONY_VOLUME_GF_SWAR_H
#define PONY_VOLUME_GF_SWAR_H

#include <stdint.h>

#define GF_SWAR_LOW7 0xfefefefefefefefeull
#define GF_SWAR_HIGH 0x8080808080808080ull
#define GF_SWAR_POLY 0x1d1d1d1d1d1d1d1dull

/* Every byte times g (= 2): shift, and fold in 0x1d where the top bit fell out. */
static inline uint64_t swar_mul2(uint64_t v)
{
	uint64_t hi = v & GF_SWAR_HIGH;
	uint64_t mask = (hi << 1) - (hi >> 7);  /* 0xff in each byte whose top bit was set */

	return ((v << 1) & GF_SWAR_LOW7) ^ (mask & GF_SWAR_POLY);
}

/* Every byte times the constant c, by shift-and-add over c's bits. */
static inline uint64_t swar_mulc(uint64_t v, uint8_t c)
{
	uint64_t r = 0;

	for (int bit = 7; bit >= 0; bit--) {
		r = swar_mul2(r);
		if (c >> bit & 1)
			r ^= v;
	}
	return r;
}

#endif
