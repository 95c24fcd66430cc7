/*
 * test_parity.c - both parity engines (ISA-L and SWAR) equal a simple
 * byte-at-a-time reference on random stripes, and rebuild every one- and
 * two-block loss: data+data, data+P, data+Q, P+Q; the one bad block of a
 * raid6 stripe is named from its syndromes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"
#include "gf_ref.h"
#include "parity.h"

static void ref_pq(const struct parity_stripe *s, uint8_t *p, uint8_t *q)
{
	for (size_t b = 0; b < s->len; b++) {
		uint8_t pp = 0, qq = 0;

		for (unsigned i = 0; i < s->ndata; i++) {
			pp ^= s->data[i][b];
			qq ^= ref_mul(s->data[i][b], ref_pow2(s->qexp ? s->qexp[i] : i));
		}
		p[b] = pp;
		if (q)
			q[b] = qq;
	}
}

struct stripe_buf {
	struct parity_stripe s;
	uint8_t *blocks[PARITY_MAX_DATA + 2];
	uint8_t qexp[PARITY_MAX_DATA];
};

static void stripe_fill(struct stripe_buf *sb, unsigned ndata, size_t len, bool with_q,
			bool shuffled)
{
	memset(sb, 0, sizeof(*sb));
	for (unsigned i = 0; i < ndata + 2; i++) {
		sb->blocks[i] = util_aligned_alloc(len);
		for (size_t b = 0; b < len; b++)
			sb->blocks[i][b] = (uint8_t)rand();
	}
	sb->s.ndata = ndata;
	sb->s.len = len;
	sb->s.data = sb->blocks;
	sb->s.p = sb->blocks[ndata];
	sb->s.q = with_q ? sb->blocks[ndata + 1] : NULL;
	if (shuffled) {         /* a permutation with gaps, as DDF layouts have */
		for (unsigned i = 0; i < ndata; i++)
			sb->qexp[i] = (uint8_t)(i * 2 + 1);
		for (unsigned i = ndata; i > 1; i--) {
			unsigned j = (unsigned)rand() % i;
			uint8_t t = sb->qexp[i - 1];
			sb->qexp[i - 1] = sb->qexp[j];
			sb->qexp[j] = t;
		}
		sb->s.qexp = sb->qexp;
	}
}

/* stripe_fill, then parity by ops, and a copy of every block in orig (freed by the caller). */
static void stripe_fill_saved(struct stripe_buf *sb, const struct parity_ops *ops, unsigned ndata,
			      size_t len, bool with_q, bool shuffled, uint8_t **orig)
{
	stripe_fill(sb, ndata, len, with_q, shuffled);
	ops->gen(&sb->s);
	for (unsigned i = 0; i < ndata + (with_q ? 2 : 1); i++) {
		orig[i] = malloc(len);
		memcpy(orig[i], sb->blocks[i], len);
	}
}

static void stripe_free(struct stripe_buf *sb)
{
	for (unsigned i = 0; i < sb->s.ndata + 2; i++)
		free(sb->blocks[i]);
}

static void check_gen_matches_reference(const struct parity_ops *ops)
{
	srand(1234);
	for (int iter = 0; iter < 60; iter++) {
		bool with_q = iter % 2, shuffled = iter % 3 == 0;
		unsigned ndata = 1 + (unsigned)rand() % 20 + (with_q ? 1 : 0);
		size_t len = PARITY_ALIGN * (1 + (size_t)rand() % 40);
		struct stripe_buf sb;
		uint8_t *p = malloc(len), *q = malloc(len);

		stripe_fill(&sb, ndata, len, with_q, shuffled);
		ref_pq(&sb.s, p, q);
		ops->gen(&sb.s);
		assert_memory_equal(sb.s.p, p, len);
		if (with_q)
			assert_memory_equal(sb.s.q, q, len);
		free(p);
		free(q);
		stripe_free(&sb);
	}
}

static void test_isal_parity_equals_reference(void **state)
{
	check_gen_matches_reference(&parity_isal_ops);
}

static void test_swar_parity_equals_reference(void **state)
{
	check_gen_matches_reference(&parity_swar_ops);
}

/* Every set of up to two lost blocks of a stripe is rebuilt exactly. */
static void check_recovers_every_loss(const struct parity_ops *ops, bool with_q, bool shuffled)
{
	srand(99);
	for (unsigned ndata = with_q ? 2 : 1; ndata <= 9; ndata++) {
		size_t len = 512;
		struct stripe_buf sb;
		unsigned nb = ndata + (with_q ? 2 : 1);
		uint8_t *orig[PARITY_MAX_DATA + 2];

		stripe_fill_saved(&sb, ops, ndata, len, with_q, shuffled, orig);
		for (unsigned a = 0; a < nb; a++) {
			for (unsigned b = a; b < nb; b++) {
				unsigned lost[2] = { b, a };    /* unsorted on purpose */
				unsigned nlost = a == b ? 1 : 2;

				if (nlost == 2 && !with_q)
					continue;
				memset(sb.blocks[a], 0xa5, len);
				memset(sb.blocks[b], 0x5a, len);
				assert_int_equal(ops->recover(&sb.s, nlost, lost), 0);
				for (unsigned i = 0; i < nb; i++)
					assert_memory_equal(sb.blocks[i], orig[i], len);
			}
		}
		for (unsigned i = 0; i < nb; i++)
			free(orig[i]);
		stripe_free(&sb);
	}
}

/*
 * A rebuild of one member while another is out asks for one block
 * (one_only): that block comes back exactly, for every pair of lost blocks
 * and either of them wanted, with plain and shuffled exponents.
 */
static void check_recovers_the_one_wanted_block(const struct parity_ops *ops, bool shuffled)
{
	const unsigned ndata = 8, nb = ndata + 2;
	const size_t len = 1024;
	uint8_t *orig[PARITY_MAX_DATA + 2];
	struct stripe_buf sb;

	srand(21);
	stripe_fill_saved(&sb, ops, ndata, len, true, shuffled, orig);
	for (unsigned a = 0; a < nb; a++) {
		for (unsigned b = a + 1; b < nb; b++) {
			for (unsigned w = 0; w < 2; w++) {
				unsigned lost[2] = { a, b }, want = w ? b : a;

				memset(sb.blocks[a], 0xa5, len);
				memset(sb.blocks[b], 0x5a, len);
				sb.s.one_only = true;
				sb.s.one = want;
				assert_int_equal(ops->recover(&sb.s, 2, lost), 0);
				assert_memory_equal(sb.blocks[want], orig[want], len);
				memcpy(sb.blocks[a], orig[a], len);
				memcpy(sb.blocks[b], orig[b], len);
			}
		}
	}
	for (unsigned b = 0; b < nb; b++)
		free(orig[b]);
	stripe_free(&sb);
}

static void test_recovery_of_one_wanted_block_rebuilds_it_on_both_engines(void **state)
{
	check_recovers_the_one_wanted_block(&parity_isal_ops, false);
	check_recovers_the_one_wanted_block(&parity_isal_ops, true);
	check_recovers_the_one_wanted_block(&parity_swar_ops, false);
	check_recovers_the_one_wanted_block(&parity_swar_ops, true);
}

/*
 * A read's recovery (data_only) rebuilds every lost data block exactly,
 * stripe after stripe with the same failure pattern but different Q
 * exponents in turn (the ISA-L engine keeps the last pattern's decoding
 * tables: they must follow the exponents, not only the pattern).
 */
static void check_data_only_recovery_across_stripes(const struct parity_ops *ops)
{
	const unsigned ndata = 8, nb = ndata + 2;
	const size_t len = 1024;
	struct stripe_buf sb[2];
	uint8_t *orig[2][PARITY_MAX_DATA + 2];

	srand(7);
	for (int i = 0; i < 2; i++) {
		stripe_fill(&sb[i], ndata, len, true, i == 1);
		ops->gen(&sb[i].s);
		sb[i].s.data_only = true;
		for (unsigned b = 0; b < nb; b++) {
			orig[i][b] = malloc(len);
			memcpy(orig[i][b], sb[i].blocks[b], len);
		}
	}
	for (unsigned a = 0; a < nb; a++) {
		for (unsigned b = a + 1; b < nb; b++) {
			for (int round = 0; round < 4; round++) {
				struct stripe_buf *x = &sb[round % 2];
				unsigned lost[2] = { a, b };

				memset(x->blocks[a], 0xa5, len);
				memset(x->blocks[b], 0x5a, len);
				assert_int_equal(ops->recover(&x->s, 2, lost), 0);
				for (unsigned d = 0; d < ndata; d++)
					assert_memory_equal(x->blocks[d], orig[round % 2][d], len);
				memcpy(x->blocks[a], orig[round % 2][a], len);
				memcpy(x->blocks[b], orig[round % 2][b], len);
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		for (unsigned b = 0; b < nb; b++)
			free(orig[i][b]);
		stripe_free(&sb[i]);
	}
}

static void test_read_recovery_rebuilds_data_with_alternating_exponents(void **state)
{
	check_data_only_recovery_across_stripes(&parity_isal_ops);
	check_data_only_recovery_across_stripes(&parity_swar_ops);
}

static void test_isal_recovers_one_and_two_lost_blocks(void **state)
{
	check_recovers_every_loss(&parity_isal_ops, false, false);
	check_recovers_every_loss(&parity_isal_ops, true, false);
	check_recovers_every_loss(&parity_isal_ops, true, true);
}

static void test_swar_recovers_one_and_two_lost_blocks(void **state)
{
	check_recovers_every_loss(&parity_swar_ops, false, false);
	check_recovers_every_loss(&parity_swar_ops, true, false);
	check_recovers_every_loss(&parity_swar_ops, true, true);
}

/* Updating parity by a block's delta equals generating it afresh. */
static void check_update_equals_regeneration(const struct parity_ops *ops)
{
	srand(77);
	for (int iter = 0; iter < 40; iter++) {
		bool with_q = iter % 2;
		unsigned ndata = 2 + (unsigned)rand() % 10;
		size_t len = PARITY_ALIGN * (1 + (size_t)rand() % 16);
		unsigned idx = (unsigned)rand() % ndata;
		struct stripe_buf sb;
		uint8_t *delta = util_aligned_alloc(len), *p = malloc(len), *q = malloc(len);

		stripe_fill(&sb, ndata, len, with_q, iter % 3 == 0);
		ops->gen(&sb.s);
		for (size_t b = 0; b < len; b++) {
			uint8_t nv = (uint8_t)rand();

			delta[b] = sb.s.data[idx][b] ^ nv;
			sb.s.data[idx][b] = nv;
		}
		ops->update(&sb.s, idx, delta);
		ref_pq(&sb.s, p, q);
		assert_memory_equal(sb.s.p, p, len);
		if (with_q)
			assert_memory_equal(sb.s.q, q, len);
		free(delta);
		free(p);
		free(q);
		stripe_free(&sb);
	}
}

static void test_parity_update_equals_regeneration_on_both_engines(void **state)
{
	check_update_equals_regeneration(&parity_isal_ops);
	check_update_equals_regeneration(&parity_swar_ops);
}

static void test_recover_refuses_more_than_the_parity_covers(void **state)
{
	struct stripe_buf sb;
	unsigned three[3] = { 0, 1, 2 }, two[2] = { 0, 1 }, same[2] = { 1, 1 };

	stripe_fill(&sb, 4, 64, true, false);
	assert_int_equal(parity_isal_ops.recover(&sb.s, 3, three), -EINVAL);
	assert_int_equal(parity_swar_ops.recover(&sb.s, 3, three), -EINVAL);
	assert_int_equal(parity_swar_ops.recover(&sb.s, 2, same), -EINVAL);
	sb.s.q = NULL;
	assert_int_equal(parity_isal_ops.recover(&sb.s, 2, two), -EINVAL);
	assert_int_equal(parity_swar_ops.recover(&sb.s, 2, two), -EINVAL);
	sb.s.q = sb.blocks[5];
	stripe_free(&sb);
}

/*
 * parity_locate names the one bad block of a raid6 stripe from its P and
 * Q syndromes, whatever the Q exponents (DDF layouts shuffle them), and
 * refuses to name one when two are bad or there is no Q.
 */
static void test_locate_names_the_one_bad_block_from_the_syndromes(void **state)
{
	srand(77);
	for (int iter = 0; iter < 40; iter++) {
		unsigned ndata = 2 + (unsigned)rand() % 20;
		size_t len = PARITY_ALIGN * (1 + (size_t)rand() % 8), first = 0, last = 0;
		struct stripe_buf sb;
		uint8_t *p = util_aligned_alloc(len), *q = util_aligned_alloc(len);
		struct parity_stripe calc;
		unsigned bad = (unsigned)rand() % (ndata + 2);
		size_t at = (size_t)rand() % len;

		stripe_fill(&sb, ndata, len, true, iter % 2);
		parity_isal_ops.gen(&sb.s);
		calc = sb.s;
		calc.p = p;
		calc.q = q;
		parity_isal_ops.gen(&calc);
		assert_int_equal(parity_locate(&sb.s, p, q, &first, &last), -ENOENT);
		sb.blocks[bad][at] ^= 0x81;
		sb.blocks[bad][len - 1] ^= 0x3c;
		parity_isal_ops.gen(&calc);     /* as the data now gives them */
		assert_int_equal(parity_locate(&sb.s, p, q, &first, &last), (int)bad);
		assert_int_equal(first, at);
		assert_int_equal(last, len - 1);
		/* A second bad block: no single one explains it. */
		sb.blocks[(bad + 1) % (ndata + 2)][at ^ 1] ^= 0x42;
		parity_isal_ops.gen(&calc);
		assert_int_equal(parity_locate(&sb.s, p, q, &first, &last), -EUCLEAN);
		/* raid5: one syndrome names nothing. */
		sb.s.q = NULL;
		calc.q = NULL;
		parity_isal_ops.gen(&calc);
		assert_int_equal(parity_locate(&sb.s, p, NULL, &first, &last), -EUCLEAN);
		sb.s.q = sb.blocks[ndata + 1];
		free(p);
		free(q);
		stripe_free(&sb);
	}
}

static void test_parity_engines_are_selectable_by_name(void **state)
{
	assert_ptr_equal(parity_ops_get("isal"), &parity_isal_ops);
	assert_ptr_equal(parity_ops_get("swar"), &parity_swar_ops);
	assert_null(parity_ops_get("lookup-table"));
	assert_int_equal(parity_gf_mul(parity_gf_inv(0x53), 0x53), 1);
	assert_int_equal(parity_gf_pow2(8), 0x1d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isal_parity_equals_reference),
		cmocka_unit_test(test_swar_parity_equals_reference),
		cmocka_unit_test(test_isal_recovers_one_and_two_lost_blocks),
		cmocka_unit_test(test_swar_recovers_one_and_two_lost_blocks),
		cmocka_unit_test(test_parity_update_equals_regeneration_on_both_engines),
		cmocka_unit_test(test_read_recovery_rebuilds_data_with_alternating_exponents),
		cmocka_unit_test(test_recovery_of_one_wanted_block_rebuilds_it_on_both_engines),
		cmocka_unit_test(test_recover_refuses_more_than_the_parity_covers),
		cmocka_unit_test(test_locate_names_the_one_bad_block_from_the_syndromes),
		cmocka_unit_test(test_parity_engines_are_selectable_by_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
