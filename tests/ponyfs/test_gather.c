/*
 * test_gather.c - a writeback of many small files writes their blocks in
 * a few large writes, not one per file (src/ponyfs/gather.c), and every
 * file reads back whole after a remount; a gathered write that fails
 * fails the commit and makes the filesystem read-only, as a failed write of
 * one file's blocks does, so nothing commits pointing at blocks never
 * written. Encrypted files (AES-256-XTS and -GCM) are gathered too: their
 * runs are encrypted straight into the gather. The data region is a fault
 * bdev of its own: its I/O count is the data writes alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "helpers.h"
#include "fixture.h"
#include "crypt_fixture.h"
#include "pony/util.h"

#define META_SIZE (8u << 20)
#define DATA_SIZE (32u << 20)
#define NFILES 256

struct split { struct bdev *meta, *data; };

static void split_new(struct split *ret)
{
	struct bdev *mem;

	assert_int_equal(bdev_mem_new(META_SIZE, &ret->meta), 0);
	assert_int_equal(bdev_mem_new(DATA_SIZE, &mem), 0);
	assert_int_equal(bdev_fault_new(mem, &ret->data), 0);
	assert_int_equal(ponyfs_mkfs(ret->meta, ret->data, NULL), 0);
}

/* File i: one to three blocks and a part of a fourth, its own bytes. */
static size_t file_len(unsigned i)
{
	return 4096 * (1 + i % 3) + 100 * (i % 7);
}

static void put_files(struct vfs *fs, const char *prefix)
{
	static uint8_t buf[4 * 4096];
	char name[32];

	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "%s%u", prefix, i);
		test_fill(buf, file_len(i), i);
		assert_int_equal(test_put(fs, name, buf, file_len(i)), 0);
	}
}

static void expect_files(struct vfs *fs, const char *prefix)
{
	static uint8_t want[4 * 4096], got[4 * 4096];
	char name[32];

	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "%s%u", prefix, i);
		test_fill(want, file_len(i), i);
		assert_int_equal(test_get(fs, name, got, sizeof(got)), (ssize_t)file_len(i));
		assert_memory_equal(got, want, file_len(i));
	}
}

/* 256 files of 1 to 4 blocks, about 640 blocks: one write per file was
 * 256 writes; gathered, they fit in a handful of 1 MiB ones. */
static void test_small_files_are_written_back_in_few_writes(void **state)
{
	struct split d;
	struct vfs *fs;
	uint64_t io0, io1;

	split_new(&d);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	put_files(fs, "f");
	io0 = bdev_fault_io_count(d.data);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	io1 = bdev_fault_io_count(d.data);
	assert_true(io1 - io0 <= 16);
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck(d.meta, d.data, PONYFS_FSCK_DATA, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	expect_files(fs, "f");
	vfs_free(fs);
	bdev_free(d.data);
	bdev_free(d.meta);
}

/* The same 256 files in an encrypted directory, under each contents mode:
 * a handful of writes, not 256 (one a file before their runs were
 * encrypted into the gather), and every file reads back after a remount
 * with the key, its blocks checked by fsck without it. */
static void small_encrypted_files_written_back_in_few_writes(enum crypt_mode mode)
{
	struct split d;
	struct vfs *fs;
	uint64_t io0, io1;
	uint8_t id[16];

	split_new(&d);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	enc_dir(fs, mode, id);
	io0 = bdev_fault_io_count(d.data);
	put_files(fs, "enc/f");
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	io1 = bdev_fault_io_count(d.data);
	assert_in_range(io1 - io0, 1, 16);      /* 257 when each file went alone */
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck(d.meta, d.data, PONYFS_FSCK_DATA, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	add_key(fs, id);
	expect_files(fs, "enc/f");
	vfs_free(fs);
	bdev_free(d.data);
	bdev_free(d.meta);
}

static void test_small_xts_files_are_written_back_in_few_writes(void **state)
{
	small_encrypted_files_written_back_in_few_writes(CRYPT_MODE_AES_256_XTS);
}

static void test_small_gcm_files_are_written_back_in_few_writes(void **state)
{
	small_encrypted_files_written_back_in_few_writes(CRYPT_MODE_AES_256_GCM);
}

/* Every data write fails while "g*" is written back: the sync fails with
 * the write's error, the next change too (read-only), and after a remount
 * the committed "f*" are whole and no "g*" exists. */
static void test_a_failed_gathered_write_fails_the_commit(void **state)
{
	struct split d;
	struct vfs *fs;
	uint64_t ino, fh;

	util_log_set_sink(NULL, NULL);
	split_new(&d);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	put_files(fs, "f");
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	put_files(fs, "g");
	assert_int_equal(bdev_fault_add_bad(d.data, 0, DATA_SIZE, BDEV_FAULT_WRITE), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), -EIO);
	assert_int_equal(test_put(fs, "h", "x", 1), -EIO);
	vfs_free(fs);
	bdev_fault_clear(d.data);
	assert_int_equal(ponyfs_mount(d.meta, d.data, NULL, &fs), 0);
	expect_files(fs, "f");
	assert_int_equal(test_open(fs, "g0", O_RDONLY, &ino, &fh), -ENOENT);
	assert_int_equal(test_open(fs, "g255", O_RDONLY, &ino, &fh), -ENOENT);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck(d.meta, d.data, PONYFS_FSCK_DATA, NULL, NULL), 0);
	bdev_free(d.data);
	bdev_free(d.meta);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_files_are_written_back_in_few_writes),
		cmocka_unit_test(test_small_xts_files_are_written_back_in_few_writes),
		cmocka_unit_test(test_small_gcm_files_are_written_back_in_few_writes),
		cmocka_unit_test(test_a_failed_gathered_write_fails_the_commit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
