/*
 * parity.h - P and Q parity for the raid4/5/6 targets, behind one ops table so
 * that the ISA-L engine and the portable 64-bit SWAR engine are interchangeable
 * (and both are tested against the same reference).
 *
 * P is the XOR of the data blocks. Q is sum(g^e[i] * D[i]) over GF(2^8) with
 * generator g = 2 and polynomial 0x11d, as Linux md computes it; e[i] is the
 * block's syndrome slot (md numbers data blocks in disk order from the disk
 * after Q, DDF layouts by disk index), so callers pass it rather than assume i.
 */
#ifndef PONY_VOLUME_PARITY_H
#define PONY_VOLUME_PARITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARITY_MAX_DATA 64              /* data blocks in one stripe */
#define PARITY_ALIGN 64                 /* block addresses and lengths */

/*
 * One stripe's blocks. len is a multiple of PARITY_ALIGN and every pointer is
 * PARITY_ALIGN-aligned (ISA-L's requirement, kept by both engines).
 */
struct parity_stripe {
	unsigned ndata;                 /* 1..PARITY_MAX_DATA */
	size_t len;
	uint8_t **data;                 /* ndata blocks */
	uint8_t *p;
	uint8_t *q;                     /* NULL: no Q (raid4/5) */
	const uint8_t *qexp;            /* Q exponent per data block; NULL: 0..ndata-1 */
	bool data_only;                 /* recover: lost P/Q may stay stale (reads) */
	/*
	 * recover: only block `one` is wanted (a rebuild of one member while
	 * another is also out); the other lost block may stay stale. An
	 * engine may still rebuild everything.
	 */
	bool one_only;
	unsigned one;
};

/* Block indexes in a lost[] list: data 0..ndata-1, then these. */
#define PARITY_P(s) ((s)->ndata)
#define PARITY_Q(s) ((s)->ndata + 1)

struct parity_ops {
	const char *name;
	/* Writes P, and Q when s->q is set, from the data blocks. */
	void (*gen)(const struct parity_stripe *s);
	/*
	 * Rebuilds nlost blocks (distinct indexes as above) in place from the
	 * others (only the data blocks when s->data_only: a read needs no
	 * parity). 0, or -EINVAL when more are lost than the parity covers.
	 */
	int (*recover)(const struct parity_stripe *s, unsigned nlost, const unsigned *lost);
	/*
	 * Read-modify-write: data block idx changed by delta (old ^ new);
	 * brings P (and Q) up to date without reading the other blocks.
	 */
	void (*update)(const struct parity_stripe *s, unsigned idx, const uint8_t *delta);
};

extern const struct parity_ops parity_isal_ops;
extern const struct parity_ops parity_swar_ops;

/*
 * The engine to use: "isal" or "swar" by name (NULL: the default, which is
 * ISA-L unless the environment variable PONY_PARITY names another).
 * NULL for an unknown name.
 */
const struct parity_ops *parity_ops_get(const char *name);

/* Scalar GF(2^8) arithmetic (poly 0x11d) for coefficients, not for data. */
uint8_t parity_gf_mul(uint8_t a, uint8_t b);
uint8_t parity_gf_pow2(unsigned e);     /* g^e */
uint8_t parity_gf_inv(uint8_t a);       /* a != 0 */

/*
 * Which one block of s is wrong (parity_locate.c): s->p and s->q are the
 * stored parity, p and q the parity computed from s's data. The block's
 * index (data 0..ndata-1, PARITY_P, PARITY_Q), -ENOENT when everything
 * agrees, -EUCLEAN when no single block explains the difference (two or
 * more are bad, or there is no Q to tell). Unless -ENOENT, the first and
 * last byte that differ go to *ret_first and *ret_last.
 */
int parity_locate(const struct parity_stripe *s, const uint8_t *p, const uint8_t *q,
		  size_t *ret_first, size_t *ret_last);

/* Sorts lost[] and checks it against the stripe; 0 or -EINVAL. */
int parity_check_lost(const struct parity_stripe *s, unsigned nlost, unsigned *lost);

#endif
