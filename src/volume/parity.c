/*
 * parity.c - engine selection and the scalar GF(2^8) helpers both engines use
 * to work out coefficients (a few per stripe, so plain loops suffice).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"

uint8_t parity_gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
		b >>= 1;
	}
	return r;
}

uint8_t parity_gf_pow2(unsigned e)
{
	uint8_t r = 1;

	for (e %= 255; e; e--)
		r = parity_gf_mul(r, 2);
	return r;
}

uint8_t parity_gf_inv(uint8_t a)
{
	/* a^254 = a^-1 in GF(2^8): square-and-multiply over 254 = 0b11111110. */
	uint8_t r = 1, x = a;

	for (unsigned e = 254; e; e >>= 1) {
		if (e & 1)
			r = parity_gf_mul(r, x);
		x = parity_gf_mul(x, x);
	}
	return r;
}

int parity_check_lost(const struct parity_stripe *s, unsigned nlost, unsigned *lost)
{
	unsigned nblocks = s->ndata + (s->q ? 2 : 1);

	if (nlost > (s->q ? 2u : 1u))
		return -EINVAL;
	if (nlost == 2 && lost[0] > lost[1]) {
		unsigned t = lost[0];
		lost[0] = lost[1];
		lost[1] = t;
	}
	for (unsigned i = 0; i < nlost; i++)
		if (lost[i] >= nblocks || (i && lost[i] == lost[i - 1]))
			return -EINVAL;
	return 0;
}

const struct parity_ops *parity_ops_get(const char *name)
{
	if (!name)
		name = getenv("PONY_PARITY");
	if (!name || !*name || !strcmp(name, "isal"))
		return &parity_isal_ops;
	if (!strcmp(name, "swar"))
		return &parity_swar_ops;
	return NULL;
}
