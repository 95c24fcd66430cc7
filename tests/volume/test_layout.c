/*
 * test_layout.c - md placement on hand-checked rows (md's own pictures in
 * raid5.c comments and mdadm's man page), and invariants over many stripes:
 * every disk has one role per stripe, raid10 copies land on distinct disks.
 * The bit-for-bit proof against the real kernel is test_md_fixtures.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "layout.h"

static void check_row(unsigned level, unsigned layout, unsigned n, uint64_t s,
		      const char *row)
{
	struct layout_geom g = { .level = level, .layout = layout, .ndisks = n,
				 .chunk = 4096, .dev_size = 4096 * 64 };
	struct layout_stripe st;
	char got[LAYOUT_MAX_DISKS + 1];

	assert_int_equal(layout_geom_check(&g), 0);
	layout_raid456_stripe(&g, s, &st);
	memset(got, '?', n);
	got[n] = 0;
	got[st.pd] = 'P';
	if (st.qd >= 0)
		got[st.qd] = 'Q';
	for (unsigned i = 0; i < st.ndata; i++)
		got[st.disk[i]] = (char)('0' + i);
	assert_string_equal(got, row);
}

static void test_raid5_rows_match_md(void **state)
{
	/* 4 disks, data blocks numbered within their stripe. */
	check_row(5, MD_LEFT_SYMMETRIC, 4, 0, "012P");
	check_row(5, MD_LEFT_SYMMETRIC, 4, 1, "12P0");
	check_row(5, MD_LEFT_SYMMETRIC, 4, 3, "P012");
	check_row(5, MD_LEFT_ASYMMETRIC, 4, 1, "01P2");
	check_row(5, MD_RIGHT_SYMMETRIC, 4, 1, "2P01");
	check_row(5, MD_RIGHT_ASYMMETRIC, 4, 1, "0P12");
	check_row(5, MD_PARITY_0, 4, 5, "P012");
	check_row(5, MD_PARITY_N, 4, 5, "012P");
	check_row(4, 0, 4, 7, "012P");
}

static void test_raid6_rows_match_md(void **state)
{
	check_row(6, MD_LEFT_SYMMETRIC, 5, 0, "Q012P");
	check_row(6, MD_LEFT_SYMMETRIC, 5, 1, "012PQ");
	check_row(6, MD_LEFT_SYMMETRIC, 5, 2, "12PQ0");
	check_row(6, MD_LEFT_SYMMETRIC, 5, 4, "PQ012");
	check_row(6, MD_LEFT_ASYMMETRIC, 5, 0, "Q012P");
	check_row(6, MD_LEFT_ASYMMETRIC, 5, 2, "01PQ2");
	check_row(6, MD_RIGHT_ASYMMETRIC, 5, 0, "PQ012");
	check_row(6, MD_ROTATING_ZERO_RESTART, 5, 0, "PQ012");
	check_row(6, MD_ROTATING_N_RESTART, 5, 0, "012PQ");
	check_row(6, MD_ROTATING_N_CONTINUE, 5, 0, "012QP");
	check_row(6, MD_LEFT_SYMMETRIC_6, 5, 1, "12P0Q");
	check_row(6, MD_PARITY_0_6, 5, 3, "P012Q");
}

static void test_raid6_q_slots_follow_disk_order_after_q(void **state)
{
	struct layout_geom g = { .level = 6, .layout = MD_LEFT_ASYMMETRIC, .ndisks = 5,
				 .chunk = 4096, .dev_size = 4096 * 64 };
	struct layout_stripe st;

	/* Stripe 2 is "0 1 P Q 2": slots start after Q, so block 2 is slot 0. */
	layout_raid456_stripe(&g, 2, &st);
	assert_int_equal(st.qexp[2], 0);
	assert_int_equal(st.qexp[0], 1);
	assert_int_equal(st.qexp[1], 2);
	/* DDF layouts number slots by disk. */
	g.layout = MD_ROTATING_ZERO_RESTART;
	layout_raid456_stripe(&g, 0, &st);      /* P Q 0 1 2 */
	assert_int_equal(st.qexp[0], 2);
	assert_int_equal(st.qexp[2], 4);
}

static void test_every_disk_has_one_role_per_stripe(void **state)
{
	static const unsigned layouts6[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };

	for (unsigned n = 4; n <= 9; n++) {
		for (size_t l = 0; l < sizeof(layouts6) / sizeof(layouts6[0]); l++) {
			for (unsigned level = 5; level <= 6; level++) {
				struct layout_geom g = { .level = level, .layout = layouts6[l],
							 .ndisks = n, .chunk = 512,
							 .dev_size = 512 * 64 };
				if (layout_geom_check(&g))
					continue;
				for (uint64_t s = 0; s < 40; s++) {
					struct layout_stripe st;
					unsigned used = 0;

					layout_raid456_stripe(&g, s, &st);
					used |= 1u << st.pd;
					if (st.qd >= 0)
						used |= 1u << st.qd;
					for (unsigned i = 0; i < st.ndata; i++) {
						assert_false(used & (1u << st.disk[i]));
						used |= 1u << st.disk[i];
					}
					assert_int_equal(used, (1u << n) - 1);
				}
			}
		}
	}
}

static void test_raid10_copies_land_on_distinct_disks(void **state)
{
	static const char *names[] = { "n2", "f2", "o2", "n3", "f3" };

	for (size_t i = 0; i < 5; i++) {
		struct layout_geom g = { .level = 10, .ndisks = 5, .chunk = 512,
					 .dev_size = 512 * 60 };
		uint64_t total;

		assert_int_equal(layout_from_name(10, names[i], &g.layout), 0);
		assert_int_equal(layout_geom_check(&g), 0);
		total = layout_array_size(&g) / g.chunk;
		for (uint64_t c = 0; c < total; c++) {
			unsigned disk[8], n;
			uint64_t off[8];

			n = layout_raid10_copies(&g, c, disk, off);
			assert_int_equal(n, layout_redundancy(&g) + 1);
			for (unsigned a = 0; a < n; a++) {
				assert_true(off[a] + g.chunk <= g.dev_size);
				for (unsigned b = a + 1; b < n; b++)
					assert_int_not_equal(disk[a], disk[b]);
			}
		}
	}
}

static void test_raid10_near2_matches_md_picture(void **state)
{
	/* n2 on 4 disks: chunk 0 on disks 0,1, chunk 1 on 2,3, chunk 2 on 0,1 row 1. */
	struct layout_geom g = { .level = 10, .layout = 0x102, .ndisks = 4, .chunk = 512,
				 .dev_size = 512 * 8 };
	unsigned disk[2];
	uint64_t off[2];

	layout_raid10_copies(&g, 2, disk, off);
	assert_int_equal(disk[0], 0);
	assert_int_equal(disk[1], 1);
	assert_int_equal(off[0], 512);
	/* f2: the second copy is half a device further, one disk over. */
	g.layout = 0x201;
	layout_raid10_copies(&g, 0, disk, off);
	assert_int_equal(disk[1], 1);
	assert_int_equal(off[1], 4 * 512);
	assert_int_equal(layout_array_size(&g), 16 * 512);
}

static void test_layout_names_round_trip(void **state)
{
	unsigned l;

	assert_int_equal(layout_from_name(5, "left-symmetric", &l), 0);
	assert_int_equal(l, MD_LEFT_SYMMETRIC);
	assert_int_equal(layout_from_name(6, "raid6_zr", &l), 0);
	assert_int_equal(l, MD_ROTATING_ZERO_RESTART);
	assert_string_equal(layout_name(6, l), "ddf-zero-restart");
	assert_int_equal(layout_from_name(10, "o2", &l), 0);
	assert_string_equal(layout_name(10, l), "o2");
	assert_int_equal(layout_from_name(5, "sideways", &l), -EINVAL);
	assert_int_equal(layout_from_name(10, "x2", &l), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raid5_rows_match_md),
		cmocka_unit_test(test_raid6_rows_match_md),
		cmocka_unit_test(test_raid6_q_slots_follow_disk_order_after_q),
		cmocka_unit_test(test_every_disk_has_one_role_per_stripe),
		cmocka_unit_test(test_raid10_copies_land_on_distinct_disks),
		cmocka_unit_test(test_raid10_near2_matches_md_picture),
		cmocka_unit_test(test_layout_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
