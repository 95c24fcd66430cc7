/*
 * test_volume_fused.c - a raid6 volume on bare memory members (whole
 * stripes take the fused one-pass path, raid6_fused.c) leaves every member
 * byte for byte as the same volume on fault-wrapped memory members (which
 * lend no memory, so member I/O and the parity engine do the work), in md's
 * and DDF's layouts, on the ISA-L and the SWAR settings; and with any one or
 * two members failed, whole-stripe reads (the fused recovery) return what
 * was written.
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
#include "pony/volume.h"
#include "gf_ref.h"
#include "internal.h"

#define NDEV 10
#define CHUNK (64u << 10)
#define MEMBER (1u << 20)
#define SIZE ((uint64_t)MEMBER / CHUNK * CHUNK * (NDEV - 2))
#define STRIPE ((size_t)CHUNK * (NDEV - 2))

static const char *const layouts[] = { "la", "ls", "rs", "parity-last", "raid6_zr", "raid6_nc",
				       "raid6_ls_6" };

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return ref_rnd(&rng);
}

/*
 * A volume over mem[], or, wrapped, over fault bdevs on memory of its own
 * (same size, zeroed: the same starting state).
 */
static struct volume *make_volume(struct bdev **mem, unsigned layout, bool wrapped)
{
	struct bdev *devs[NDEV];
	struct volume_target_spec spec = { .type = VOLUME_RAID6, .layout = layout, .chunk = CHUNK,
					   .ndevs = NDEV, .devs = devs };
	struct volume *v;

	for (unsigned i = 0; i < NDEV; i++) {
		devs[i] = mem[i];
		if (wrapped) {
			struct bdev *lower;

			assert_int_equal(bdev_mem_new(MEMBER, &lower), 0);
			assert_int_equal(bdev_fault_new(lower, &devs[i]), 0);
		}
	}
	assert_int_equal(volume_new(&v), 0);
	assert_int_equal(volume_add_segment(v, 0, SIZE, &spec), 0);
	return v;
}

/* The same writes to both volumes and the model: whole stripes (one from an odd address) and pieces. */
static void write_both(struct volume *a, struct volume *b, uint8_t *model)
{
	uint8_t *buf = malloc(STRIPE + 1);

	for (uint64_t off = 0; off < SIZE; off += STRIPE) {
		uint8_t *src = buf + (off / STRIPE == 3);

		for (size_t i = 0; i < STRIPE; i++)
			src[i] = (uint8_t)rnd();
		assert_int_equal(volume_write(a, src, STRIPE, off), 0);
		assert_int_equal(volume_write(b, src, STRIPE, off), 0);
		memcpy(model + off, src, STRIPE);
	}
	for (int k = 0; k < 40; k++) {
		size_t len = 1 + rnd() % (3 * CHUNK);
		uint64_t off = rnd() % (SIZE - len);

		if (k % 2)
			off = off / 512 * 512, len = (len + 511) / 512 * 512;
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		assert_int_equal(volume_write(a, buf, len, off), 0);
		assert_int_equal(volume_write(b, buf, len, off), 0);
		memcpy(model + off, buf, len);
	}
	free(buf);
}

/* Reads the whole volume in stripe-sized calls and compares it with the model. */
static void read_equals(struct volume *v, const uint8_t *model)
{
	uint8_t *buf = util_aligned_alloc(STRIPE);

	for (uint64_t off = 0; off < SIZE; off += STRIPE) {
		assert_int_equal(volume_read(v, buf, STRIPE, off), 0);
		assert_memory_equal(buf, model + off, STRIPE);
	}
	free(buf);
}

static void members_equal(struct bdev **mem, struct volume *wrapped)
{
	uint8_t *x = malloc(MEMBER), *y = malloc(MEMBER);

	for (unsigned i = 0; i < NDEV; i++) {
		const struct volume_seg *s = volume_seg_get(wrapped, 0);

		assert_int_equal(bdev_pread(mem[i], x, MEMBER, 0), 0);
		assert_int_equal(bdev_pread(s->m[i].dev, y, MEMBER, 0), 0);
		assert_memory_equal(x, y, MEMBER);
	}
	free(x);
	free(y);
}

/* Fails members i and j (-1: none) of a volume over mem[], reads it all, and lets mem[] go. */
static void degraded_read_equals(struct bdev **mem, unsigned layout, int i, int j,
				 const uint8_t *model)
{
	struct volume *v = make_volume(mem, layout, false);

	if (i >= 0)
		assert_int_equal(volume_fail_member(v, 0, (unsigned)i), 0);
	if (j >= 0)
		assert_int_equal(volume_fail_member(v, 0, (unsigned)j), 0);
	read_equals(v, model);
	volume_detach_members(v);
	volume_free(v);
}

static void check_layouts(void)
{
	uint8_t *model = malloc(SIZE);

	for (size_t l = 0; l < ARRAY_SIZE(layouts); l++) {
		struct bdev *mem[NDEV];
		unsigned layout;
		struct volume *a, *b;

		assert_int_equal(layout_from_name(6, layouts[l], &layout), 0);
		for (unsigned i = 0; i < NDEV; i++)
			assert_int_equal(bdev_mem_new(MEMBER, &mem[i]), 0);
		a = make_volume(mem, layout, false);
		b = make_volume(mem, layout, true);
		write_both(a, b, model);
		members_equal(mem, b);
		read_equals(a, model);
		volume_detach_members(a);
		volume_free(a);
		volume_free(b);
		for (int i = -1; i < NDEV; i++)
			for (int j = i < 0 ? -1 : i + 1; j < NDEV; j++)
				degraded_read_equals(mem, layout, i, j, model);
		for (unsigned i = 0; i < NDEV; i++)
			bdev_free(mem[i]);
	}
	free(model);
}

static void test_fused_volume_equals_member_io_volume(void **state)
{
	unsetenv("PONY_PARITY");
	check_layouts();
}

static void test_fused_volume_equals_member_io_volume_on_swar(void **state)
{
	setenv("PONY_PARITY", "swar", 1);
	check_layouts();
	unsetenv("PONY_PARITY");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_volume_equals_member_io_volume),
		cmocka_unit_test(test_fused_volume_equals_member_io_volume_on_swar),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
