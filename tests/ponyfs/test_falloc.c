/*
 * test_falloc.c - ponyfs's preallocation through its vfs ops table:
 * fallocate takes real blocks (st_blocks and statfs show them at once,
 * and writing the range adds none), the range reads as zeros, a write into
 * it succeeds on a filesystem filled up afterwards (also while the file is
 * being rewritten after O_TRUNC), punch hole and truncation free unwritten
 * blocks, the layout calls them unwritten, and fsck stays clean throughout.
 */
#include <linux/falloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixture.h"
#include "pony/util.h"

static uint64_t blocks_of(struct vfs *fs, uint64_t ino)
{
	struct vfs_ctx c = test_ctx();
	struct statx x;

	assert_int_equal(VFS_CALL(fs, statx, &c, ino, VFS_NO_FH, 0, STATX_BLOCKS, &x), 0);
	return x.stx_blocks;
}

/* Free blocks for file data (f_bavail; f_bfree counts the database's room too). */
static uint64_t bavail_of(struct vfs *fs)
{
	struct statvfs s;

	assert_int_equal(VFS_CALL(fs, statfs, VFS_ROOT_INO, &s), 0);
	return s.f_bavail;
}

static void test_unaligned_fallocate_allocates_every_block_it_touches(void **state)
{
	struct fixture *f = *state;
	uint64_t ino, fh;
	uint8_t r[8192], want[8192] = { 0 };

	/* generic/568: two bytes across a block boundary, then written. */
	assert_int_equal(test_open(f->fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, 0, 4095, 2), 0);
	assert_int_equal(blocks_of(f->fs, ino), 16);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "ab", 2, 4095), 2);
	assert_int_equal(blocks_of(f->fs, ino), 16);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(blocks_of(f->fs, ino), 16);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	remount(f);
	assert_int_equal(blocks_of(f->fs, ino), 16);
	memcpy(want + 4095, "ab", 2);
	assert_int_equal(test_get(f->fs, "f", r, sizeof(r)), 4097);
	assert_memory_equal(r, want, 4097);
}

static void test_fallocated_blocks_count_like_written_ones(void **state)
{
	struct fixture *f = *state;
	static uint8_t w[1 << 20], r[(1 << 20) + 1], z[1 << 20];
	uint64_t ino, fh, free0 = bavail_of(f->fs), blocks;

	assert_int_equal(test_open(f->fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, 0, 0, sizeof(w)), 0);
	blocks = blocks_of(f->fs, ino);
	assert_int_equal(blocks, sizeof(w) / 512);
	assert_int_equal(free0 - bavail_of(f->fs), 256);
	/* Zeros, before and after the ranges reach the database. */
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 0), sizeof(w));
	assert_memory_equal(r, z, sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 0), sizeof(w));
	assert_memory_equal(r, z, sizeof(w));
	assert_int_equal(free0 - bavail_of(f->fs), 256);
	/* Writing the whole range in pieces takes no block more. */
	test_fill(w, sizeof(w), 7);
	for (size_t off = 0; off < sizeof(w); off += 100000)
		assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w + off, MIN(100000, sizeof(w) - off),
					  (off_t)off), (ssize_t)MIN(100000, sizeof(w) - off));
	assert_int_equal(blocks_of(f->fs, ino), blocks);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(blocks_of(f->fs, ino), blocks);
	assert_int_equal(free0 - bavail_of(f->fs), 256);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	remount(f);
	assert_int_equal(test_get(f->fs, "f", r, sizeof(r)), sizeof(w));
	assert_memory_equal(r, w, sizeof(w));
	assert_int_equal(blocks_of(f->fs, ino), blocks);
}

/* Fills the filesystem with file "fill" until ENOSPC; returns what it wrote. */
static size_t fill_up(struct vfs *fs)
{
	static uint8_t chunk[65536];
	uint64_t ino, fh;
	size_t done = 0;
	ssize_t n;

	assert_int_equal(test_open(fs, "fill", O_CREAT | O_WRONLY, &ino, &fh), 0);
	while ((n = VFS_CALL(fs, write, ino, fh, chunk, sizeof(chunk), (off_t)done)) > 0)
		done += (size_t)n;
	assert_int_equal(n, -ENOSPC);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	assert_int_equal(bavail_of(fs), 0);
	return done;
}

/* Writes len bytes of w at 0, in odd-sized pieces. */
static void write_all(struct vfs *fs, uint64_t ino, uint64_t fh, const uint8_t *w, size_t len)
{
	for (size_t off = 0; off < len; off += 12345)
		assert_int_equal(VFS_CALL(fs, write, ino, fh, w + off, MIN(12345, len - off), (off_t)off),
				 (ssize_t)MIN(12345, len - off));
}

/* Unmounts fs, checks dev clean, and finds file "f" holding w; frees both. */
static void unmount_and_read_back(struct bdev *dev, struct vfs *fs, const uint8_t *w, size_t len)
{
	static uint8_t r[(2 << 20) + 1];

	vfs_free(fs);
	check_clean(dev);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_get(fs, "f", r, sizeof(r)), len);
	assert_memory_equal(r, w, len);
	vfs_free(fs);
	bdev_free(dev);
}

/* A fresh 12 MiB ponyfs on *dev whose file "f" holds w, committed. */
static struct vfs *small_fs_with_f(struct bdev **dev, const uint8_t *w, size_t len)
{
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(12u << 20, dev), 0);
	assert_int_equal(ponyfs_mkfs_image(*dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(*dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "f", w, len), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	return fs;
}

static void write_range_on_full_fs(bool rewrite)
{
	static uint8_t w[1 << 20];
	struct ponyfs_stats st;
	struct bdev *dev;
	struct vfs *fs;
	uint64_t ino, fh;

	test_fill(w, sizeof(w), 9);
	fs = small_fs_with_f(&dev, w, 3 * 4096);
	/* A rewrite (O_TRUNC, held back from commits until closed) or a plain
	 * file that preallocates past its end. */
	assert_int_equal(test_open(fs, "f", O_RDWR | (rewrite ? O_TRUNC : 0), &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, fallocate, ino, fh, FALLOC_FL_KEEP_SIZE, 0, sizeof(w)), 0);
	if (!rewrite)
		assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), 0);
	assert_true(fill_up(fs) > 0);
	write_all(fs, ino, fh, w, sizeof(w));
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), 0);
	/* Again: overwrites now, copy-on-write, lent blocks by the reserve. */
	test_fill(w, sizeof(w), 10);
	write_all(fs, ino, fh, w, sizeof(w));
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), 0);
	ponyfs_get_stats(fs, &st);
	assert_true(st.overwrite_loans > 200);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	unmount_and_read_back(dev, fs, w, sizeof(w));
}

static void test_write_into_fallocated_range_of_a_full_fs_succeeds(void **state)
{
	write_range_on_full_fs(false);
}

static void test_rewrite_into_fallocated_range_of_a_full_fs_succeeds(void **state)
{
	write_range_on_full_fs(true);
}

static void test_overwrite_on_a_full_fs_borrows_and_succeeds(void **state)
{
	static uint8_t w[2 << 20];
	struct ponyfs_stats st;
	struct bdev *dev;
	struct vfs *fs;
	uint64_t ino, fh;

	test_fill(w, sizeof(w), 13);
	fs = small_fs_with_f(&dev, w, sizeof(w));
	assert_true(fill_up(fs) > 0);
	/* Many times the reserve (32 blocks here): it refills at commits. */
	test_fill(w, sizeof(w), 14);
	assert_int_equal(test_open(fs, "f", O_RDWR, &ino, &fh), 0);
	write_all(fs, ino, fh, w, sizeof(w));
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	ponyfs_get_stats(fs, &st);
	/* A loan per block; a block two calls share is lent twice when the
	 * reserve comes back between them (before the second call). */
	assert_true(st.overwrite_loans >= sizeof(w) / 4096);
	assert_true(st.overwrite_loans <= sizeof(w) / 4096 * 9 / 8);
	assert_int_equal(bavail_of(fs), 0);
	/* A hole is no overwrite: still ENOSPC. */
	assert_int_equal(test_open(fs, "f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, "x", 1, sizeof(w) + 8192), -ENOSPC);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	unmount_and_read_back(dev, fs, w, sizeof(w));
}

static void test_fallocate_keeps_data_and_refuses_what_cannot_fit(void **state)
{
	struct fixture *f = *state;
	uint8_t w[3 * 4096], r[3 * 4096 + 1];
	uint64_t ino, fh;
	struct statvfs s;

	test_fill(w, sizeof(w), 11);
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(test_open(f->fs, "f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, 0, 0, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 0), sizeof(w));
	assert_memory_equal(r, w, sizeof(w));
	assert_int_equal(blocks_of(f->fs, ino), 3 * 8);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_KEEP_SIZE, 0,
				  (off_t)(s.f_bavail + 4) * 4096), -ENOSPC);
	assert_int_equal(bavail_of(f->fs), s.f_bavail);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
}

static void test_punch_and_truncate_free_unwritten_blocks(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr a = { .valid = VFS_SET_SIZE, .size = 4096 };
	struct vfs_extent ext[4];
	uint64_t ino, fh, free0 = bavail_of(f->fs);
	struct statx x;
	int n;

	assert_int_equal(test_open(f->fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "x", 1, 8 * 4096), 1);
	/* Eight blocks below the end, eight past it (KEEP_SIZE). */
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_KEEP_SIZE, 0, 16 * 4096), 0);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(blocks_of(f->fs, ino), 16 * 8);
	n = VFS_CALL(f->fs, layout, ino, 0, 16 * 4096, ext, 4);
	assert_true(n >= 2);
	assert_int_equal(ext[0].flags, VFS_EXTENT_UNWRITTEN);
	assert_int_equal(ext[0].length, 8 * 4096);
	assert_int_equal(ext[1].flags, 0);                      /* the written block */
	remount(f);                                             /* fsck clean, past the end too */
	assert_int_equal(test_open(f->fs, "f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  4096, 2 * 4096), 0);
	assert_int_equal(blocks_of(f->fs, ino), 14 * 8);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, ino, fh, &a, &x), 0);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(blocks_of(f->fs, ino), 1 * 8);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "f"), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(bavail_of(f->fs), free0);
}

static void test_zero_range_keeps_the_blocks(void **state)
{
	struct fixture *f = *state;
	uint8_t w[4 * 4096], r[4 * 4096];
	uint64_t ino, fh;

	test_fill(w, sizeof(w), 12);
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(test_open(f->fs, "f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_ZERO_RANGE, 100, 3 * 4096), 0);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(blocks_of(f->fs, ino), 4 * 8);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	memset(w + 100, 0, 3 * 4096);
	remount(f);
	assert_int_equal(test_get(f->fs, "f", r, sizeof(r)), sizeof(w));
	assert_memory_equal(r, w, sizeof(w));
	assert_int_equal(blocks_of(f->fs, ino), 4 * 8);
}

/* As fallocate(2): EBADF on a handle not open for writing, a directory's
 * included (a directory never gets extents: rowcache.c counts on it). */
static void test_fallocate_needs_a_handle_open_for_writing(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d;
	uint64_t ino, fh;

	assert_int_equal(test_put(f->fs, "f", "x", 1), 0);
	assert_int_equal(test_open(f->fs, "f", O_RDONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, 0, 0, 8192), -EBADF);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(VFS_CALL(f->fs, open, &c, d.ino, O_RDONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, d.ino, fh, 0, 0, 8192), -EBADF);
	assert_int_equal(VFS_CALL(f->fs, release, d.ino, fh), 0);
	assert_int_equal(blocks_of(f->fs, d.ino), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unaligned_fallocate_allocates_every_block_it_touches,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallocated_blocks_count_like_written_ones, setup, teardown),
		cmocka_unit_test(test_write_into_fallocated_range_of_a_full_fs_succeeds),
		cmocka_unit_test(test_rewrite_into_fallocated_range_of_a_full_fs_succeeds),
		cmocka_unit_test(test_overwrite_on_a_full_fs_borrows_and_succeeds),
		cmocka_unit_test_setup_teardown(test_fallocate_keeps_data_and_refuses_what_cannot_fit,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_punch_and_truncate_free_unwritten_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_range_keeps_the_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallocate_needs_a_handle_open_for_writing, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
