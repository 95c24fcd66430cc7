/*
 * test_md_fixtures.c - arrays the real Linux md and device-mapper wrote
 * (tests/data/volume, made by make-fixtures.sh under md-oracle) assemble in
 * pony and read back the pattern the kernel wrote into them, and pony's
 * scrub finds their parity exactly where and as md put it (0 mismatches):
 * raid0 (equal members, and unequal ones in md's zones with both multi-zone
 * layouts), 1, 4, 5 in every layout, 6, 10 near/far/offset, dm striped,
 * raid6_zr and raid10 far/offset (md's far sets). Also: the bad-block log
 * and the write-intent bitmap are honoured, degraded assembly works,
 * wrong member sets and corrupt superblocks are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pony/util.h"
#include "pony/volume.h"

#define MAX_MEMBERS 8

static char workdir[64];

/* make-pattern.py's bytes: sector number, then (i + 7*s) & 0xff. */
static void pattern(uint8_t *buf, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t s = (off + i) / 512;
		unsigned b = (unsigned)((off + i) % 512);

		buf[i] = b < 8 ? (uint8_t)(s >> (8 * b)) : (uint8_t)(b + 7 * s);
	}
}

static const char *fixture_path(const char *name, unsigned i)
{
	static char p[512];

	snprintf(p, sizeof(p), "%s/%s-%u.img", workdir, name, i);
	if (access(p, F_OK) != 0) {
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "xz -dc '%s/tests/data/volume/%s-%u.img.xz' > '%s'",
			 getenv("PONY_SRCDIR"), name, i, p);
		assert_int_equal(system(cmd), 0);
	}
	return p;
}

static void open_members(const char *name, unsigned n, struct bdev **devs)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(bdev_file_open(fixture_path(name, i), O_RDONLY, &devs[i]), 0);
}

static void expect_pattern(struct volume *v)
{
	uint64_t size = volume_size(v);
	uint8_t *got = malloc(size), *want = malloc(size);

	assert_int_equal(volume_read(v, got, size, 0), 0);
	pattern(want, 0, size);
	for (uint64_t i = 0; i < size; i += 512)
		if (memcmp(got + i, want + i, 512)) {
			fprintf(stderr, "first difference in sector %llu\n",
				(unsigned long long)(i / 512));
			fail();
		}
	free(got);
	free(want);
}

static void expect_consistent(struct volume *v)
{
	uint64_t n = 1;
	int r = volume_scrub(v, 0, false, 0, NULL, NULL, NULL, NULL, &n);

	if (r == -EOPNOTSUPP)
		return;                 /* raid0, linear: nothing redundant to check */
	assert_int_equal(r, 0);
	assert_int_equal(n, 0);
}

struct md_fixture {
	const char *name;
	unsigned n, level, layout, minor;
};

static const struct md_fixture md_fixtures[] = {
	{ "raid0", 3, 0, 0, 2 },
	{ "raid0-zo", 3, 0, 1, 2 },     /* unequal members: zones, original layout */
	{ "raid0-za", 4, 0, 2, 2 },     /* unequal members: zones, alternate layout */
	{ "raid1", 2, 1, 0, 0 },
	{ "raid4", 3, 4, 5, 2 },
	{ "raid5-ls", 3, 5, 2, 2 },
	{ "raid5-bm", 3, 5, 2, 2 },     /* with md's internal write-intent bitmap */
	{ "raid5-la", 4, 5, 0, 1 },
	{ "raid5-rs", 3, 5, 3, 2 },
	{ "raid5-ra", 4, 5, 1, 2 },
	{ "raid5-p0", 4, 5, 4, 2 },
	{ "raid6", 5, 6, 2, 2 },
	{ "raid6-ra", 5, 6, 1, 2 },
	{ "raid6-n", 4, 6, 5, 2 },
	{ "raid10-n2", 4, 10, 0x102, 2 },
	{ "raid10-f2", 4, 10, 0x201, 2 },
	{ "raid10-o2", 4, 10, 0x10201, 2 },
};

static void test_md_fixtures_assemble_and_read_the_kernels_pattern(void **state)
{
	for (size_t i = 0; i < sizeof(md_fixtures) / sizeof(md_fixtures[0]); i++) {
		const struct md_fixture *f = &md_fixtures[i];
		struct bdev *devs[MAX_MEMBERS];
		struct volume_md_info info;
		struct volume *v;

		fprintf(stderr, "fixture %s\n", f->name);
		open_members(f->name, f->n, devs);
		assert_int_equal(volume_md_assemble(devs, f->n, &v, &info), 0);
		assert_int_equal(info.level, f->level);
		if (f->level != 0 && f->level != 1)
			assert_int_equal(info.layout, f->layout);
		assert_int_equal(info.minor_version, f->minor);
		assert_int_equal(info.raid_disks, f->n);
		expect_pattern(v);
		expect_consistent(v);
		volume_free(v);
	}
}

static void test_md_bad_block_log_is_honoured(void **state)
{
	struct bdev *devs[3];
	struct volume_md_info info;
	struct volume *v;
	uint8_t sec[512];

	/* make-fixtures.sh zeroed the logged bad block on member 1: only a
	 * reader that honours the log reconstructs it. */
	open_members("raid5-ls", 3, devs);
	assert_int_equal(bdev_pread(devs[1], sec, 512, 2112 * 512), 0);
	assert_int_equal(sec[100] | sec[300], 0);
	assert_int_equal(volume_md_assemble(devs, 3, &v, &info), 0);
	assert_int_equal(info.badblocks, 1);
	expect_pattern(v);
	volume_free(v);
}

static void test_md_raid6_assembles_with_two_members_missing(void **state)
{
	struct bdev *devs[5];
	struct volume *v;

	open_members("raid6", 5, devs);
	bdev_free(devs[1]);
	bdev_free(devs[3]);
	devs[1] = devs[4];
	assert_int_equal(volume_md_assemble(devs, 3, &v, NULL), 0);
	expect_pattern(v);
	volume_free(v);
	/* One more missing is past raid6: refused. */
	open_members("raid6", 2, devs);
	assert_int_equal(volume_md_assemble(devs, 2, &v, NULL), -ENODEV);
	bdev_free(devs[0]);
	bdev_free(devs[1]);
}

static void test_md_refuses_wrong_member_sets_and_corrupt_superblocks(void **state)
{
	struct bdev *devs[4];
	struct volume *v;
	char cmd[1024];
	const char *copy;

	open_members("raid5-ls", 3, devs);
	assert_int_equal(bdev_file_open(fixture_path("raid4", 0), O_RDONLY, &devs[3]), 0);
	assert_int_equal(volume_md_assemble(devs, 4, &v, NULL), -EXDEV);
	for (int i = 0; i < 4; i++)
		bdev_free(devs[i]);
	/* A flipped byte in the superblock fails its checksum. */
	copy = fixture_path("raid4", 1);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/bad.img' && printf 'X' | dd of='%s/bad.img' "
		 "bs=1 seek=4200 conv=notrunc status=none", copy, workdir, workdir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/bad.img", workdir);
	assert_int_equal(bdev_file_open(cmd, O_RDONLY, &devs[0]), 0);
	assert_int_equal(volume_md_assemble(devs, 1, &v, NULL), -EBADMSG);
	bdev_free(devs[0]);
	/* Not an md member at all. */
	assert_int_equal(bdev_mem_new(1 << 20, &devs[0]), 0);
	assert_int_equal(volume_md_assemble(devs, 1, &v, NULL), -ENODATA);
	bdev_free(devs[0]);
}

static void test_dm_fixtures_assemble_from_their_tables(void **state)
{
	static const struct { const char *name; unsigned n; const char *fmt; } dm[] = {
		{ "dm-striped", 2, "0 16384 striped 2 128 %s 0 %s 0\n" },
		{ "dm-raid6-zr", 5, "0 24576 raid raid6_zr 1 128 5 - %s - %s - %s - %s - %s\n" },
		/* Far sets ({0,1}, {2,3,4}): the pattern reads the first copies,
		 * the scrub compares every far copy where md put it. */
		{ "dm-raid10-far", 5, "0 20480 raid raid10 5 128 raid10_copies 2 raid10_format far "
				      "5 - %s - %s - %s - %s - %s\n" },
		{ "dm-raid10-offset", 5, "0 20480 raid raid10 5 128 raid10_copies 2 raid10_format "
					 "offset 5 - %s - %s - %s - %s - %s\n" },
	};

	for (size_t i = 0; i < sizeof(dm) / sizeof(dm[0]); i++) {
		char paths[5][512], table[4096];
		struct volume *v;
		unsigned line = 0;

		for (unsigned j = 0; j < dm[i].n; j++)
			snprintf(paths[j], sizeof(paths[j]), "%s", fixture_path(dm[i].name, j));
		snprintf(table, sizeof(table), dm[i].fmt, paths[0], paths[1], paths[2], paths[3],
			 paths[4]);
		assert_int_equal(volume_table_parse(table, NULL, NULL, &v, &line), 0);
		expect_pattern(v);
		expect_consistent(v);
		volume_free(v);
	}
}

static void test_md_arrays_pony_creates_assemble_again(void **state)
{
	static const struct { unsigned level, layout, n; } made[] = {
		{ 5, 2, 4 }, { 6, 1, 5 }, { 10, 0x201, 4 }, { 1, 0, 2 }, { 0, 0, 3 },
	};

	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		struct bdev *devs[MAX_MEMBERS], *again[MAX_MEMBERS];
		struct volume_md_info info, info2;
		char path[MAX_MEMBERS][128];
		struct volume *v;
		uint8_t *buf;

		for (unsigned j = 0; j < made[i].n; j++) {
			int fd;

			snprintf(path[j], sizeof(path[j]), "%s/made-%zu-%u.img", workdir, i, j);
			fd = open(path[j], O_RDWR | O_CREAT | O_TRUNC, 0600);
			assert_true(fd >= 0 && ftruncate(fd, 4 << 20) == 0);
			close(fd);
			assert_int_equal(bdev_file_open(path[j], O_RDWR, &devs[j]), 0);
		}
		assert_int_equal(volume_md_create(devs, made[i].n, made[i].level, made[i].layout,
						  65536, "t", &v, &info), 0);
		buf = malloc(volume_size(v));
		pattern(buf, 0, volume_size(v));
		assert_int_equal(volume_write(v, buf, volume_size(v), 0), 0);
		expect_consistent(v);
		/* Assemble the same members again, in reverse order, from their superblocks. */
		volume_free(v);
		for (unsigned j = 0; j < made[i].n; j++)
			assert_int_equal(bdev_file_open(path[j], O_RDONLY, &again[made[i].n - 1 - j]), 0);
		assert_int_equal(volume_md_assemble(again, made[i].n, &v, &info2), 0);
		assert_int_equal(info2.level, made[i].level);
		assert_int_equal(info2.minor_version, 2);
		assert_int_equal(info2.array_size, info.array_size);
		expect_pattern(v);
		volume_free(v);
		free(buf);
	}
}

static int setup(void **state)
{
	snprintf(workdir, sizeof(workdir), "/tmp/pony-fixtures-XXXXXX");
	if (!getenv("PONY_SRCDIR") || !mkdtemp(workdir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * Writes len bytes of val at byte off of member path's md v1.2 superblock
 * and makes its checksum right again: what md itself writes, field by field.
 */
static void md_sb_patch(const char *path, size_t off, const void *val, size_t len)
{
	uint8_t sb[4096];
	uint64_t sum = 0;
	uint32_t max_dev, csum;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, sb, sizeof(sb), 4096), (ssize_t)sizeof(sb));
	memcpy(sb + off, val, len);
	memcpy(&max_dev, sb + 220, 4);
	memset(sb + 216, 0, 4);
	for (size_t i = 0; i + 4 <= 256 + (size_t)max_dev * 2; i += 4) {
		uint32_t w;

		memcpy(&w, sb + i, 4);
		sum += w;
	}
	csum = (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
	memcpy(sb + 216, &csum, 4);
	assert_int_equal(pwrite(fd, sb, sizeof(sb), 4096), (ssize_t)sizeof(sb));
	close(fd);
}

/*
 * What a crash leaves on member path (an md v1.2 superblock): resync_offset
 * 0 (not clean); with set_bit, also bit 0 of md's write-intent bitmap (a
 * write was in flight in the first chunk).
 */
static void md_leave_dirty(const char *path, bool set_bit)
{
	uint64_t zero = 0;
	int32_t bitmap_offset;
	uint8_t byte;
	int fd;

	md_sb_patch(path, 208, &zero, 8);       /* resync_offset (le64) */
	if (!set_bit)
		return;
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &bitmap_offset, 4, 4096 + 96), 4);
	assert_int_equal(pread(fd, &byte, 1, 4096 + (off_t)bitmap_offset * 512 + 256), 1);
	byte |= 1;
	assert_int_equal(pwrite(fd, &byte, 1, 4096 + (off_t)bitmap_offset * 512 + 256), 1);
	close(fd);
}

/*
 * md's internal write-intent bitmap decides, as in md, whether a raid5 left
 * dirty may be read with a member missing: not when a write was in flight.
 */
/*
 * Assembles raid5-bm with member 1 left out (degraded, n == 2) or whole
 * (n == 3); on success checks the pattern and the bitmap's report.
 */
static int assemble_bm(unsigned n, bool want_dirty, unsigned want_bits)
{
	struct bdev *devs[3];
	struct volume_md_info info;
	struct volume *v;
	int r;

	open_members("raid5-bm", 3, devs);
	if (n == 2) {
		bdev_free(devs[1]);
		devs[1] = devs[2];
	}
	r = volume_md_assemble(devs, n, &v, &info);
	if (r < 0) {
		for (unsigned i = 0; i < n; i++)
			bdev_free(devs[i]);
		return r;
	}
	assert_int_equal(info.bitmap_chunk, 65536);
	assert_int_equal(info.dirty, want_dirty);
	assert_int_equal(info.bitmap_dirty, want_bits);
	expect_pattern(v);
	volume_free(v);
	return 0;
}

static void test_md_write_intent_bitmap_decides_dirty_degraded_assembly(void **state)
{
	assert_int_equal(assemble_bm(3, false, 0), 0);
	/* Not clean, but the bitmap shows no write in flight: degraded is fine. */
	for (unsigned i = 0; i < 3; i++)
		md_leave_dirty(fixture_path("raid5-bm", i), false);
	assert_int_equal(assemble_bm(2, true, 0), 0);
	/* A write in flight in chunk 0: refused degraded, read whole. */
	for (unsigned i = 0; i < 3; i++)
		md_leave_dirty(fixture_path("raid5-bm", i), true);
	assert_int_equal(assemble_bm(2, true, 1), -EUCLEAN);
	assert_int_equal(assemble_bm(3, true, 1), 0);
}

/*
 * md's margin of one: md writes the members' superblocks one by one, so a
 * crash between the writes leaves members one event behind that missed
 * nothing (the kernel and mdadm take them in); the freshest superblock says
 * whether that update failed such a member; two events behind is stale.
 */
static unsigned md_members_ok(unsigned n)
{
	struct bdev *devs[3];
	struct volume *v;
	unsigned ok = 0;

	open_members("raid5-rs", n, devs);
	assert_int_equal(volume_md_assemble(devs, n, &v, NULL), 0);
	expect_pattern(v);
	for (unsigned m = 0; m < n; m++)
		ok += volume_member_state(v, 0, m) == VOLUME_MEMBER_OK;
	volume_free(v);
	return ok;
}

static void test_md_member_one_event_behind_is_in_sync_unless_failed_by_it(void **state)
{
	struct bdev *devs[3];
	struct volume_md_info info;
	struct volume *v;
	uint64_t events;
	uint32_t dev_number;
	uint16_t role, faulty = 0xfffe;
	int fd = open(fixture_path("raid5-rs", 0), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &dev_number, 4, 4096 + 160), 4);
	assert_int_equal(pread(fd, &role, 2, 4096 + 256 + 2 * (off_t)dev_number), 2);
	close(fd);
	open_members("raid5-rs", 3, devs);
	assert_int_equal(volume_md_assemble(devs, 3, &v, &info), 0);
	volume_free(v);
	assert_int_equal(md_members_ok(3), 3);
	/* Members 1 and 2 took the next event, member 0 did not: in sync. */
	events = info.events + 1;
	for (unsigned i = 1; i < 3; i++)
		md_sb_patch(fixture_path("raid5-rs", i), 200, &events, 8);
	assert_int_equal(md_members_ok(3), 3);
	/* That very update marked member 0 faulty: left out. */
	for (unsigned i = 1; i < 3; i++)
		md_sb_patch(fixture_path("raid5-rs", i), 256 + 2 * (size_t)dev_number, &faulty, 2);
	assert_int_equal(md_members_ok(3), 2);
	/* Two events behind, with its role intact: stale, left out. */
	events++;
	for (unsigned i = 1; i < 3; i++) {
		md_sb_patch(fixture_path("raid5-rs", i), 256 + 2 * (size_t)dev_number, &role, 2);
		md_sb_patch(fixture_path("raid5-rs", i), 200, &events, 8);
	}
	assert_int_equal(md_members_ok(3), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_md_fixtures_assemble_and_read_the_kernels_pattern),
		cmocka_unit_test(test_md_bad_block_log_is_honoured),
		cmocka_unit_test(test_md_raid6_assembles_with_two_members_missing),
		cmocka_unit_test(test_md_refuses_wrong_member_sets_and_corrupt_superblocks),
		cmocka_unit_test(test_dm_fixtures_assemble_from_their_tables),
		cmocka_unit_test(test_md_arrays_pony_creates_assemble_again),
		cmocka_unit_test(test_md_write_intent_bitmap_decides_dirty_degraded_assembly),
		cmocka_unit_test(test_md_member_one_event_behind_is_in_sync_unless_failed_by_it),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
