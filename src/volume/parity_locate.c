/*
 * parity_locate.c - which one block of a raid6 stripe is wrong, from its P
 * and Q syndromes, as mdadm's raid6check does. With stored parity P', Q'
 * and parity P, Q computed from the stored data, data block z carrying an
 * error E gives P ^ P' = E and Q ^ Q' = g^e[z] * E: their quotient names z.
 * P alone wrong leaves Q's syndrome zero, Q alone P's. Every byte that
 * differs must name the same block, or no single block explains the
 * stripe (two or more are bad) and nothing may be repaired from a guess.
 * raid4/5 have one syndrome, which cannot name a block.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "parity.h"

static uint8_t gf_log[256];
static pthread_once_t gf_log_once = PTHREAD_ONCE_INIT;

static void gf_log_init(void)
{
	uint8_t x = 1;

	for (unsigned e = 0; e < 255; e++) {
		gf_log[x] = (uint8_t)e;
		x = parity_gf_mul(x, 2);
	}
}

/* The block byte i of the stripe blames: -1 none (it agrees), -2 none can. */
static int locate_byte(const struct parity_stripe *s, uint8_t ps, uint8_t qs)
{
	unsigned e;

	if (!ps && !qs)
		return -1;
	if (!qs)
		return (int)PARITY_P(s);
	if (!ps)
		return (int)PARITY_Q(s);
	e = (255u + gf_log[qs] - gf_log[ps]) % 255u;
	for (unsigned b = 0; b < s->ndata; b++)
		if ((s->qexp ? s->qexp[b] : b) == e)
			return (int)b;
	return -2;
}

int parity_locate(const struct parity_stripe *s, const uint8_t *p, const uint8_t *q,
		  size_t *ret_first, size_t *ret_last)
{
	size_t first = SIZE_MAX, last = 0;
	int who = -1;

	/* The common case, a stripe that agrees, at memcmp's speed: the byte
	 * loop below is only for stripes that differ somewhere. */
	if (!memcmp(p, s->p, s->len) && (!s->q || !memcmp(q, s->q, s->len)))
		return -ENOENT;
	pthread_once(&gf_log_once, gf_log_init);
	for (size_t i = 0; i < s->len; i++) {
		uint8_t ps = p[i] ^ s->p[i], qs = s->q ? q[i] ^ s->q[i] : 0;
		int b;

		if (!ps && !qs)
			continue;
		if (first == SIZE_MAX)
			first = i;
		last = i;
		b = s->q ? locate_byte(s, ps, qs) : -2;
		if (who == -1)
			who = b;
		else if (b != who)
			who = -2;
	}
	if (first == SIZE_MAX)
		return -ENOENT;
	*ret_first = first;
	*ret_last = last;
	return who >= 0 ? who : -EUCLEAN;
}
