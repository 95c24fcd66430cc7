/*
 * raid6_fused.h - RAID6 kernels that touch each byte of a full stripe once,
 * for members whose storage is memory the engine can address (bdev_map).
 * A write reads each data block once, stores it to its member and folds it
 * into P and Q in the same pass, then stores P and Q; a degraded read reads
 * each surviving block once, copies the data to the caller and rebuilds up
 * to two lost data blocks on the way. The separate passes (parity, then a
 * copy per member) cost the sum of their memory traffic; fused, the parity
 * work hides under the stores.
 *
 * P and Q are md's (generator 2, polynomial 0x11d), byte for byte those of
 * the parity engines. Blocks may have any length and alignment.
 */
#ifndef PONY_VOLUME_RAID6_FUSED_H
#define PONY_VOLUME_RAID6_FUSED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which instructions: the best the CPU has, or one forced (tests, bench). */
enum raid6_fused_isa {
	RAID6_FUSED_BEST,
	RAID6_FUSED_SWAR,               /* portable: 64-bit words */
	RAID6_FUSED_AVX2,
	RAID6_FUSED_AVX512,             /* AVX-512 F + BW */
};

/* How results are stored: the measured default, or one forced. */
enum raid6_fused_store {
	RAID6_FUSED_STORE_AUTO,
	RAID6_FUSED_STORE_STREAM,       /* non-temporal, where aligned */
	RAID6_FUSED_STORE_CACHE,        /* ordinary stores */
};

struct raid6_fused_stripe {
	unsigned ndata;                 /* 1..PARITY_MAX_DATA */
	size_t len;                     /* bytes in each block */
	const uint8_t *qexp;            /* Q exponent per data block; NULL: 0..ndata-1 */
	enum raid6_fused_isa isa;
	enum raid6_fused_store store;
};

/*
 * Full-stripe write: dst[i] = src[i] for the ndata data blocks, then
 * dst[ndata] = P and dst[ndata + 1] = Q. 0; -EINVAL for a bad stripe
 * (repeated Q exponents); -EOPNOTSUPP when the forced isa is not here.
 */
int raid6_fused_write(const struct raid6_fused_stripe *s, const uint8_t *const *src,
		      uint8_t *const *dst);

/*
 * Degraded (or whole) stripe read: src[0..ndata-1] the data blocks, then
 * src[ndata] P and src[ndata + 1] Q, NULL where lost. Every dst[i] (i <
 * ndata) gets data block i, copied or rebuilt. At most two blocks may be
 * lost (-EINVAL otherwise); -EOPNOTSUPP as for writes.
 */
int raid6_fused_read(const struct raid6_fused_stripe *s, const uint8_t *const *src,
		     uint8_t *const *dst);

/* Whether the CPU runs isa (RAID6_FUSED_BEST: always). */
bool raid6_fused_isa_available(enum raid6_fused_isa isa);

/*
 * Between the kernel's files (raid6_fused.c plans and runs the portable
 * path; raid6_fused_x86.c has the vector loops).
 */
enum raid6_fused_solve {
	RAID6_SOLVE_NONE,                     /* no data lost: copy */
	RAID6_SOLVE_P,                        /* Dx = P' */
	RAID6_SOLVE_Q,                        /* Dx = a * Q' */
	RAID6_SOLVE_PQ,                       /* Dx = a * Q' ^ b * P', Dy = P' ^ Dx */
};

/*
 * One pass's work. P' and Q' are P and Q with the surviving data folded
 * out: what the lost data blocks add up to.
 */
struct raid6_fused_plan {
	unsigned ndata, nsteps;
	size_t len;
	int16_t order[256];             /* data block of each Horner step; -1: none */
	const uint8_t *const *src;
	uint8_t *const *dst;
	const uint8_t *p, *q;           /* read: parity to fold in, NULL: not needed */
	bool want_q;                    /* read: Q' is needed */
	enum raid6_fused_solve solve;
	unsigned x, y;                  /* read: the lost data blocks */
	uint8_t a, b;
	uint8_t tab_a[32], tab_b[32];   /* a * n and a * (n << 4), n = 0..15; b's */
	bool stream;
};

/* The vector loops: they do whole lines from the start and return the bytes done. */
size_t raid6_fused_write_avx512(const struct raid6_fused_plan *pl);
size_t raid6_fused_write_avx2(const struct raid6_fused_plan *pl);
size_t raid6_fused_read_avx512(const struct raid6_fused_plan *pl);
size_t raid6_fused_read_avx2(const struct raid6_fused_plan *pl);

#endif
