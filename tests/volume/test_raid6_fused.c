/*
 * test_raid6_fused.c - the fused RAID6 kernels (one pass: store data and
 * make P and Q; read survivors and rebuild lost data) produce the bytes of a
 * byte-at-a-time reference and of the parity engines, on every CPU path
 * (AVX-512, AVX2, portable SWAR) and store kind, for odd lengths, unaligned
 * blocks, md's and DDF-like Q exponents, and rebuild every one- and
 * two-block loss.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"
#include "gf_ref.h"
#include "parity.h"
#include "raid6_fused.h"

#define MAXD 16
#define MAXLEN (64u << 10)
#define SLACK 64                        /* room to misalign each block */

static const enum raid6_fused_isa isas[] = {
	RAID6_FUSED_BEST, RAID6_FUSED_SWAR, RAID6_FUSED_AVX2, RAID6_FUSED_AVX512,
};
static const enum raid6_fused_store stores[] = {
	RAID6_FUSED_STORE_AUTO, RAID6_FUSED_STORE_STREAM, RAID6_FUSED_STORE_CACHE,
};
/* Past 4 KiB: a write's rounds, whole and with a short last one of whole lines. */
static const size_t lens[] = { 1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 4096, 4096 + 37, 4096 + 300,
			       3 * 4096 + 1000, MAXLEN };

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return ref_rnd(&rng);
}

static void ref_pq(unsigned n, size_t len, uint8_t *const *d, const uint8_t *qexp, uint8_t *p,
		   uint8_t *q)
{
	for (size_t b = 0; b < len; b++) {
		uint8_t pp = 0, qq = 0;

		for (unsigned i = 0; i < n; i++) {
			pp ^= d[i][b];
			qq ^= ref_mul(d[i][b], ref_pow2(qexp ? qexp[i] : i));
		}
		p[b] = pp;
		q[b] = qq;
	}
}

/* ndata + 2 source and ndata + 2 destination blocks, each misaligned by a random few bytes. */
struct bufs {
	uint8_t *mem[2][MAXD + 2];
	uint8_t *src[MAXD + 2], *dst[MAXD + 2];
	uint8_t qexp[MAXD];
};

static void bufs_init(struct bufs *b, unsigned n, size_t len, bool misalign)
{
	for (unsigned i = 0; i < n + 2; i++) {
		for (int k = 0; k < 2; k++) {
			b->mem[k][i] = util_aligned_alloc(MAXLEN + SLACK);
			assert_non_null(b->mem[k][i]);
		}
		b->src[i] = b->mem[0][i] + (misalign ? rnd() % SLACK : 0);
		b->dst[i] = b->mem[1][i] + (misalign ? rnd() % SLACK : 0);
		for (size_t j = 0; j < len; j++)
			b->src[i][j] = (uint8_t)rnd();
		memset(b->dst[i], 0x5a, len);
	}
}

static void bufs_free(struct bufs *b, unsigned n)
{
	for (unsigned i = 0; i < n + 2; i++)
		for (int k = 0; k < 2; k++)
			free(b->mem[k][i]);
}

/* Q exponents: md's plain 0..n-1, a permutation, or spread out with gaps (DDF). */
static const uint8_t *make_qexp(struct bufs *b, unsigned n, int kind)
{
	for (unsigned i = 0; i < n; i++)
		b->qexp[i] = (uint8_t)(kind == 1 ? (i * 5 + 3) % n : i * 3 + 1);
	return kind ? b->qexp : NULL;
}

static void test_fused_write_equals_the_reference_on_every_path(void **state)
{
	static const unsigned ndatas[] = { 1, 2, 3, 8, 13 };
	uint8_t *p = malloc(MAXLEN), *q = malloc(MAXLEN);
	unsigned runs = 0;

	for (size_t a = 0; a < ARRAY_SIZE(isas); a++) {
		if (!raid6_fused_isa_available(isas[a])) {
			printf("# isa %zu not on this CPU: its cases are skipped\n", a);
			continue;
		}
		for (size_t si = 0; si < ARRAY_SIZE(stores); si++)
			for (size_t ni = 0; ni < ARRAY_SIZE(ndatas); ni++)
				for (size_t li = 0; li < ARRAY_SIZE(lens); li++) {
					unsigned n = ndatas[ni];
					size_t len = lens[li];
					struct bufs b;
					struct raid6_fused_stripe s = {
						.ndata = n, .len = len, .isa = isas[a], .store = stores[si],
					};

					bufs_init(&b, n, len, li % 2);
					s.qexp = make_qexp(&b, n, (int)((li + ni) % 3));
					assert_int_equal(raid6_fused_write(&s, (const uint8_t *const *)b.src,
									   b.dst), 0);
					ref_pq(n, len, b.src, s.qexp, p, q);
					for (unsigned i = 0; i < n; i++)
						assert_memory_equal(b.dst[i], b.src[i], len);
					assert_memory_equal(b.dst[n], p, len);
					assert_memory_equal(b.dst[n + 1], q, len);
					bufs_free(&b, n);
					runs++;
				}
	}
	assert_true(runs >= ARRAY_SIZE(stores) * 5 * ARRAY_SIZE(lens) * 2);
	free(p);
	free(q);
}

/* Against the engines a non-fused write uses (ISA-L and SWAR), on aligned 256 KiB chunks. */
static void test_fused_write_equals_the_parity_engines(void **state)
{
	const struct parity_ops *engines[] = { &parity_isal_ops, &parity_swar_ops };
	size_t len = 256u << 10;
	unsigned n = 8;
	uint8_t *d[MAXD + 2], *out[MAXD + 2];

	for (unsigned i = 0; i < n + 2; i++) {
		d[i] = util_aligned_alloc(len);
		out[i] = util_aligned_alloc(len);
		for (size_t j = 0; j < len; j++)
			d[i][j] = (uint8_t)rnd();
	}
	for (size_t a = 0; a < ARRAY_SIZE(isas); a++) {
		struct raid6_fused_stripe s = { .ndata = n, .len = len, .isa = isas[a] };

		if (!raid6_fused_isa_available(isas[a]))
			continue;
		assert_int_equal(raid6_fused_write(&s, (const uint8_t *const *)d, out), 0);
		for (size_t e = 0; e < ARRAY_SIZE(engines); e++) {
			struct parity_stripe ps = { .ndata = n, .len = len, .data = d,
						    .p = d[n], .q = d[n + 1] };

			memset(d[n], 0, len);
			memset(d[n + 1], 0, len);
			engines[e]->gen(&ps);
			assert_memory_equal(out[n], d[n], len);
			assert_memory_equal(out[n + 1], d[n + 1], len);
		}
	}
	for (unsigned i = 0; i < n + 2; i++) {
		free(d[i]);
		free(out[i]);
	}
}

/* Reads with blocks x and y lost (-1: none) equal the data; parity from the reference. */
static void check_read(const struct raid6_fused_stripe *s, struct bufs *b, int x, int y)
{
	const uint8_t *src[MAXD + 2];
	unsigned n = s->ndata;

	for (unsigned i = 0; i < n + 2; i++)
		src[i] = (int)i == x || (int)i == y ? NULL : b->src[i];
	for (unsigned i = 0; i < n; i++)
		memset(b->dst[i], 0xa5, s->len);
	assert_int_equal(raid6_fused_read(s, src, b->dst), 0);
	for (unsigned i = 0; i < n; i++)
		assert_memory_equal(b->dst[i], b->src[i], s->len);
}

static void test_fused_read_rebuilds_every_loss_on_every_path(void **state)
{
	static const unsigned ndatas[] = { 1, 2, 5, 8 };
	unsigned runs = 0;

	for (size_t a = 0; a < ARRAY_SIZE(isas); a++) {
		if (!raid6_fused_isa_available(isas[a]))
			continue;
		for (size_t ni = 0; ni < ARRAY_SIZE(ndatas); ni++)
			for (size_t li = 3; li < ARRAY_SIZE(lens) - 1; li += 2) {
				unsigned n = ndatas[ni];
				struct bufs b;
				struct raid6_fused_stripe s = {
					.ndata = n, .len = lens[li], .isa = isas[a],
					.store = stores[(li / 2) % ARRAY_SIZE(stores)],
				};

				bufs_init(&b, n, s.len, li % 4 == 1);
				s.qexp = make_qexp(&b, n, (int)(ni % 3));
				ref_pq(n, s.len, b.src, s.qexp, b.src[n], b.src[n + 1]);
				for (int x = -1; x < (int)n + 2; x++)
					for (int y = x < 0 ? -1 : x + 1; y < (int)n + 2; y++) {
						check_read(&s, &b, x, y);
						runs++;
					}
				bufs_free(&b, n);
			}
	}
	assert_true(runs > 100);
}

static void test_fused_kernels_refuse_bad_stripes(void **state)
{
	static const uint8_t twice[4] = { 0, 1, 1, 2 };
	struct bufs b;
	const uint8_t *src[MAXD + 2];
	struct raid6_fused_stripe s = { .ndata = 4, .len = 64, .qexp = twice };

	bufs_init(&b, 4, 64, false);
	assert_int_equal(raid6_fused_write(&s, (const uint8_t *const *)b.src, b.dst), -EINVAL);
	s.qexp = NULL;
	s.ndata = 0;
	assert_int_equal(raid6_fused_write(&s, (const uint8_t *const *)b.src, b.dst), -EINVAL);
	s.ndata = 4;
	for (unsigned i = 0; i < 6; i++)
		src[i] = i == 0 || i == 2 || i == 4 ? NULL : b.src[i];
	assert_int_equal(raid6_fused_read(&s, src, b.dst), -EINVAL);
	src[4] = b.src[4];
	src[5] = NULL;
	assert_int_equal(raid6_fused_read(&s, src, b.dst), -EINVAL);
	src[5] = b.src[5];
	assert_int_equal(raid6_fused_read(&s, src, b.dst), 0);  /* two lost: fine */
	bufs_free(&b, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_write_equals_the_reference_on_every_path),
		cmocka_unit_test(test_fused_write_equals_the_parity_engines),
		cmocka_unit_test(test_fused_read_rebuilds_every_loss_on_every_path),
		cmocka_unit_test(test_fused_kernels_refuse_bad_stripes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
