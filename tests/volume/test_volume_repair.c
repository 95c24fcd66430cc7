/*
 * test_volume_repair.c - volume_repair_to_checksum() writes back only the
 * bytes the checksum vouched for: on a two-way mirror whose copies are
 * each bad in a different block of the same scrub unit, repairing one
 * block leaves the other copy's bad block where it was, so the good copy
 * of that block is not overwritten with it (it was, by a rebuild of the
 * whole unit, and the block was lost).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/bdev.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "pony/volume_repair.h"

#define MEMBER_SIZE (4u << 20)
#define BLK 4096u

static void flip(struct bdev *dev, uint64_t off)
{
	uint8_t b[16];

	assert_int_equal(bdev_pread(dev, b, sizeof(b), off), 0);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] ^= 0xa5;
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), off), 0);
}

static void test_mirror_repair_does_not_spread_the_other_copys_bad_block(void **state)
{
	struct bdev *mem[2];
	uint64_t offsets[2] = { 0, 0 };
	struct volume_target_spec spec = { .type = VOLUME_MIRROR, .ndevs = 2, .devs = mem,
					   .offsets = offsets };
	uint64_t size = 1u << 20;
	uint8_t *data = malloc(size), *got = malloc(BLK);
	struct volume *v;

	assert_non_null(data);
	assert_non_null(got);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(bdev_mem_new(MEMBER_SIZE, &mem[i]), 0);
	assert_int_equal(volume_new(&v), 0);
	assert_int_equal(volume_add_segment(v, 0, size, &spec), 0);
	for (uint64_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 7 + i / BLK);
	assert_int_equal(volume_write(v, data, size, 0), 0);
	flip(mem[0], 2 * BLK + 100);            /* copy 0 bad in block 2 */
	flip(mem[1], 9 * BLK + 100);            /* copy 1 bad in block 9 */
	/* Block 2 read from copy 0 fails its checksum: repaired from copy 1. */
	assert_int_equal(volume_repair_to_checksum(v, got, BLK, 2 * BLK,
						   util_crc32c(0, data + 2 * BLK, BLK)), 0);
	assert_memory_equal(got, data + 2 * BLK, BLK);
	/* Copy 0 still holds block 9 as written, and block 2 now. */
	assert_int_equal(volume_read_member(v, 0, got, BLK, 9 * BLK), 0);
	assert_memory_equal(got, data + 9 * BLK, BLK);
	assert_int_equal(volume_read_member(v, 0, got, BLK, 2 * BLK), 0);
	assert_memory_equal(got, data + 2 * BLK, BLK);
	volume_free(v);
	free(data);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mirror_repair_does_not_spread_the_other_copys_bad_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
