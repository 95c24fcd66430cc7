/*
 * gf_ref.h - what the volume's parity tests check against: GF(2^8)
 * arithmetic (polynomial 0x11d, generator 2) one bit at a time, written
 * plainly so that it shares nothing with the engines under test, and a
 * small seeded generator for random stripes.
 */
#ifndef PONY_TESTS_VOLUME_GF_REF_H
#define PONY_TESTS_VOLUME_GF_REF_H

#include <stdint.h>

static inline uint8_t ref_mul(uint8_t a, uint8_t b)
{
	unsigned r = 0, x = a;

	for (int i = 0; i < 8; i++) {
		if (b & (1u << i))
			r ^= x;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	return (uint8_t)r;
}

static inline uint8_t ref_pow2(unsigned e)
{
	uint8_t r = 1;

	while (e--)
		r = ref_mul(r, 2);
	return r;
}

/* xorshift64: the same sequence on every run and machine. */
static inline uint64_t ref_rnd(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
