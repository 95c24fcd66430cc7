/*
 * test_scrub.c - the passive scrub against unreadable sectors (the fault
 * bdev under each member of a pony RAID6 volume of six, metadata mirrored
 * on all six): an unreadable sector under a file and one under free space
 * are rebuilt from parity and written back, each recorded once with what
 * lives there (the file's path and offset, "free"); a clean pass finds
 * nothing; a row unreadable on three members (data, P and Q) is beyond
 * RAID6: its file is named lost, and a clean file never is; a file of
 * several steps, shared by the pass's two threads, has a silent flip in
 * each of two steps repaired and recorded once; a block rewritten through
 * the volume (its parity agrees) fails its checksum and is named lost once;
 * a flip in one member's copy of the metadata mirror is rewritten once.
 * Also checked: the scrub's
 * log lines name the file, and the error list pages through the bad-block
 * hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "helpers.h"

#define NDEV 6
#define DEV_SIZE (24u << 20)
#define BLK 4096u
#define FILE_BLOCKS 64u

struct fixture {
	struct bdev *fault[NDEV];       /* over memory members, owned by the set */
	struct test_volume_fs v;
	char log[16384];                /* the lines logged */
	size_t loglen;
};

static void log_sink(void *arg, int prio, const char *text)
{
	struct fixture *f = arg;
	int n = snprintf(f->log + f->loglen, sizeof(f->log) - f->loglen, "%s\n", text);

	if (n > 0 && f->loglen + (size_t)n < sizeof(f->log))
		f->loglen += (size_t)n;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static uint8_t buf[FILE_BLOCKS * BLK];
	assert_non_null(f);
	for (unsigned i = 0; i < NDEV; i++) {
		struct bdev *mem;

		assert_int_equal(bdev_mem_new(DEV_SIZE, &mem), 0);
		assert_int_equal(bdev_fault_new(mem, &f->fault[i]), 0);
	}
	assert_int_equal(test_volume_fs_new(f->fault, NDEV, &f->v), 0);
	test_fill(buf, sizeof(buf), 1);
	assert_int_equal(test_put(f->v.fs, "hit", buf, sizeof(buf)), 0);
	test_fill(buf, sizeof(buf), 2);
	assert_int_equal(test_put(f->v.fs, "clean", buf, sizeof(buf)), 0);
	assert_int_equal(VFS_CALL(f->v.fs, syncfs), 0);
	util_log_set_sink(log_sink, f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	util_log_set_sink(NULL, NULL);
	vfs_free(f->v.fs);
	bdev_free(f->v.meta);
	bdev_free(f->v.data);
	assert_int_equal(volume_set_close(f->v.set), 0);
	free(f);
	return 0;
}

/* The data piece of path's block blk, then P and Q: member and device byte each. */
static void pieces_of(struct fixture *f, const char *path, uint64_t blk, unsigned member[3],
		      uint64_t off[3])
{
	struct vfs_layout_extent e[8];
	uint32_t csums[FILE_BLOCKS];
	struct vfs_layout_piece p[256];
	struct vfs_layout l = { .offset = blk * BLK, .length = BLK, .extents = e, .max_extents = 8,
				.csums = csums, .max_csums = FILE_BLOCKS, .pieces = p, .max_pieces = 256 };
	uint64_t ino, fh;

	assert_int_equal(test_open(f->v.fs, path, O_RDONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, layout_map, ino, &l), 0);
	VFS_CALL(f->v.fs, release, ino, fh);
	for (uint32_t i = 0; i < l.npieces; i++)
		if (p[i].role == VFS_PIECE_DATA && p[i].file_offset <= blk * BLK &&
		    blk * BLK < p[i].file_offset + p[i].length) {
			for (unsigned k = 0; k < 3; k++) {
				member[k] = p[i + k].member;
				off[k] = p[i + k].member_offset + (blk * BLK - p[i].file_offset);
			}
			assert_int_equal(p[i + 1].role, VFS_PIECE_P);
			assert_int_equal(p[i + 2].role, VFS_PIECE_Q);
			return;
		}
	fail_msg("no data piece for %s block %llu", path, (unsigned long long)blk);
}

/* Runs a whole pass and waits for it: its final status. */
static struct vfs_scrub scrub_pass(struct fixture *f)
{
	struct vfs_scrub s = { .op = VFS_SCRUB_START };

	assert_int_equal(VFS_CALL(f->v.fs, scrub, &s), 0);
	for (int i = 0; i < 3000 && s.state == VFS_SCRUB_RUNNING; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
		s = (struct vfs_scrub){ .op = VFS_SCRUB_STATUS };
		assert_int_equal(VFS_CALL(f->v.fs, scrub, &s), 0);
	}
	assert_int_equal(s.state, VFS_SCRUB_DONE);
	return s;
}

/* Whether a bad-block entry of source says what (and, for a file, path and offset). */
static bool listed(struct fixture *f, uint32_t source, uint32_t what, const char *path,
		   bool repaired, uint64_t file_offset)
{
	struct vfs_badblock b;

	for (uint32_t i = 0; VFS_CALL(f->v.fs, badblock, i, &b) == 0; i++)
		if (b.source == source && b.where.what == what && !!b.repaired == repaired &&
		    (what != VFS_RESOLVE_FILE ||
		     (!strcmp(b.where.paths, path) && b.where.file_offset == file_offset)))
			return true;
	return false;
}

/*
 * A clean pass: every file block checked against its checksum from the
 * bytes the parity check read (no second read of clean stripes), nothing
 * taken for bad. Bytes handed over at a wrong place fail here.
 */
static void test_a_clean_pass_repairs_nothing(void **state)
{
	struct fixture *f = *state;
	struct vfs_scrub s = scrub_pass(f);

	assert_true(s.checked >= 2 * FILE_BLOCKS);
	assert_int_equal(s.repaired, 0);
	assert_int_equal(s.lost, 0);
	assert_null(strstr(f->log, "/hit"));
	assert_null(strstr(f->log, "/clean"));
}

static void test_unreadable_sectors_within_raid6_are_written_back(void **state)
{
	struct fixture *f = *state;
	struct vfs_resolve r = { 0 };
	unsigned m[3];
	uint64_t off[3];
	struct vfs_scrub s;

	pieces_of(f, "hit", 5, m, off);
	assert_int_equal(bdev_fault_add_bad(f->fault[m[0]], off[0], 512, BDEV_FAULT_READ), 0);
	/* A free block near the end of the data region, on its data member. */
	r.volume_offset = volume_size(volume_set_volume(f->v.set)) - 64 * BLK;
	assert_int_equal(VFS_CALL(f->v.fs, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_FREE);
	assert_int_equal(bdev_fault_add_bad(f->fault[r.member], r.member_offset, 512,
					    BDEV_FAULT_READ), 0);
	s = scrub_pass(f);
	assert_int_equal(s.repaired, 2);
	assert_int_equal(s.lost, 0);
	assert_true(listed(f, VFS_BAD_SCRUB, VFS_RESOLVE_FILE, "/hit", true, 5 * BLK));
	assert_true(listed(f, VFS_BAD_SCRUB, VFS_RESOLVE_FREE, NULL, true, 0));
	assert_non_null(strstr(f->log, "rewritten; holds file /hit offset 20480"));
	assert_null(strstr(f->log, "/clean"));
	bdev_fault_clear(f->fault[m[0]]);
	bdev_fault_clear(f->fault[r.member]);
}

static void test_a_row_unreadable_on_three_members_names_its_file_lost(void **state)
{
	struct fixture *f = *state;
	static uint8_t buf[FILE_BLOCKS * BLK];
	unsigned m[3];
	uint64_t off[3];
	struct vfs_scrub s;

	pieces_of(f, "hit", 40, m, off);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(bdev_fault_add_bad(f->fault[m[k]], off[k], 512, BDEV_FAULT_READ), 0);
	f->loglen = 0;
	f->log[0] = 0;
	s = scrub_pass(f);
	assert_int_equal(s.lost, 1);
	assert_true(listed(f, VFS_BAD_SCRUB, VFS_RESOLVE_FILE, "/hit", false, 40 * BLK));
	assert_true(listed(f, VFS_BAD_SCRUB_CSUM, VFS_RESOLVE_FILE, "/hit", false, 40 * BLK));
	assert_non_null(strstr(f->log, "offset 163840: data block"));
	assert_non_null(strstr(f->log, "lost: file /hit"));
	assert_null(strstr(f->log, "/clean"));
	/* The clean file reads back whole; the hit one fails. */
	assert_int_equal(test_get(f->v.fs, "clean", buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_true(test_get(f->v.fs, "hit", buf, sizeof(buf)) < 0);
	for (unsigned k = 0; k < 3; k++)
		bdev_fault_clear(f->fault[m[k]]);
}

/* Bad-block entries of source for path's byte file_offset. */
static unsigned count_listed(struct fixture *f, uint32_t source, const char *path,
			     uint64_t file_offset)
{
	struct vfs_badblock b;
	unsigned n = 0;

	for (uint32_t i = 0; VFS_CALL(f->v.fs, badblock, i, &b) == 0; i++)
		n += b.source == source && b.where.what == VFS_RESOLVE_FILE &&
		     !strcmp(b.where.paths, path) && b.where.file_offset == file_offset;
	return n;
}

/* Occurrences of needle in the log. */
static unsigned log_count(const struct fixture *f, const char *needle)
{
	unsigned n = 0;

	for (const char *at = f->log; (at = strstr(at, needle)); at++)
		n++;
	return n;
}

/* Flips bits of 8 bytes at off on member m, straight on the device. */
static void flip8(struct fixture *f, unsigned m, uint64_t off)
{
	uint8_t b[8];

	assert_int_equal(bdev_pread(f->fault[m], b, sizeof(b), off), 0);
	for (unsigned i = 0; i < sizeof(b); i++)
		b[i] ^= (uint8_t)(0x5a + i);
	assert_int_equal(bdev_pwrite(f->fault[m], b, sizeof(b), off), 0);
}

/*
 * A file of several scrub steps, which the pass's two threads share: a
 * silent bit flip in a block of one step and another two steps later are
 * each located by P and Q, rewritten and recorded exactly once with the
 * file's offset; every block is checked exactly once (checked grows by the
 * file's blocks: no step done twice or skipped); the file reads back as
 * written. A clean pass first checks every block of the many stripes read
 * at once against its checksum (bytes handed over from a wrong place fail),
 * with one read per member per step.
 */
static void test_two_threads_repair_a_flip_in_each_of_two_steps_once(void **state)
{
	struct fixture *f = *state;
	enum { WIDE_BLOCKS = 1536 };    /* 6 MiB: six steps */
	static uint8_t buf[WIDE_BLOCKS * BLK], back[WIDE_BLOCKS * BLK];
	const uint64_t blk[2] = { 300, 300 + 2 * 256 };
	struct vfs_scrub s0, s;
	uint64_t io0;
	char line[96];
	unsigned m[3];
	uint64_t off[3];

	s0 = scrub_pass(f);
	test_fill(buf, sizeof(buf), 3);
	assert_int_equal(test_put(f->v.fs, "wide", buf, sizeof(buf)), 0);
	assert_int_equal(VFS_CALL(f->v.fs, syncfs), 0);
	io0 = bdev_fault_io_count(f->fault[0]);
	s = scrub_pass(f);
	assert_int_equal(s.checked, s0.checked + WIDE_BLOCKS);
	assert_int_equal(s.repaired, 0);
	/* Large reads, each row read once: a member is read once per MiB of
	 * the pass at most (the stripes of a step in one read), plus a few of
	 * the metadata's own; stripe by stripe it was four times that. */
	assert_true(bdev_fault_io_count(f->fault[0]) - io0 <= DIV_ROUND_UP(s.total, 1u << 20) + 4);
	for (unsigned i = 0; i < 2; i++) {
		pieces_of(f, "wide", blk[i], m, off);
		flip8(f, m[0], off[0] + 100);
	}
	f->loglen = 0;
	f->log[0] = 0;
	s = scrub_pass(f);
	assert_int_equal(s.checked, s0.checked + WIDE_BLOCKS);
	assert_int_equal(s.repaired, 2);
	assert_int_equal(s.lost, 0);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(count_listed(f, VFS_BAD_SCRUB, "/wide", blk[i] * BLK), 1);
		snprintf(line, sizeof(line), "rewritten; holds file /wide offset %llu\n",
			 (unsigned long long)(blk[i] * BLK));
		assert_int_equal(log_count(f, line), 1);
	}
	assert_int_equal(log_count(f, "rewritten; holds file"), 2);
	assert_int_equal(test_get(f->v.fs, "wide", back, sizeof(back)), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
}

/* The data-region byte of path's block blk (through the file's layout). */
static uint64_t volume_byte_of(struct fixture *f, const char *path, uint64_t blk)
{
	struct vfs_layout_extent e[8];
	uint32_t csums[8];
	struct vfs_layout_piece p[64];
	struct vfs_layout l = { .offset = blk * BLK, .length = BLK, .extents = e, .max_extents = 8,
				.csums = csums, .max_csums = 8, .pieces = p, .max_pieces = 64 };
	uint64_t ino, fh;

	assert_int_equal(test_open(f->v.fs, path, O_RDONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, layout_map, ino, &l), 0);
	VFS_CALL(f->v.fs, release, ino, fh);
	assert_true(l.nextents >= 1 && e[0].file_offset <= blk * BLK &&
		    blk * BLK < e[0].file_offset + e[0].length);
	return e[0].volume_offset + (blk * BLK - e[0].file_offset);
}

/*
 * A block rewritten under the filesystem through the volume, so its parity
 * agrees with it and only its checksum can tell: the checksum the pass
 * takes from the bytes the parity check read (no second read) fails, no
 * copy matches, and the block is named lost with its file and offset, in
 * one entry and one log line however many passes find it; the blocks
 * around it, in the same step, pass.
 */
static void test_a_block_whose_parity_agrees_but_checksum_fails_is_named_lost_once(void **state)
{
	struct fixture *f = *state;
	enum { QUIET_BLOCKS = 768 };    /* 3 MiB: three steps */
	static uint8_t buf[QUIET_BLOCKS * BLK];
	const uint64_t blk = 400;
	uint8_t junk[BLK];
	struct vfs_scrub s0, s;
	char line[96];

	test_fill(buf, sizeof(buf), 4);
	assert_int_equal(test_put(f->v.fs, "quiet", buf, sizeof(buf)), 0);
	assert_int_equal(VFS_CALL(f->v.fs, syncfs), 0);
	s0 = scrub_pass(f);
	assert_int_equal(s0.lost, 0);
	test_fill(junk, sizeof(junk), 5);
	assert_int_equal(bdev_pwrite(f->v.data, junk, BLK, volume_byte_of(f, "quiet", blk)), 0);
	f->loglen = 0;
	f->log[0] = 0;
	for (unsigned pass = 0; pass < 2; pass++) {
		s = scrub_pass(f);
		assert_int_equal(s.checked, s0.checked);
		assert_int_equal(s.lost, 1);
		assert_int_equal(s.repaired, 0);
	}
	assert_int_equal(count_listed(f, VFS_BAD_SCRUB_CSUM, "/quiet", blk * BLK), 1);
	assert_int_equal(count_listed(f, VFS_BAD_SCRUB, "/quiet", blk * BLK), 0);
	snprintf(line, sizeof(line), "offset %llu: data block", (unsigned long long)(blk * BLK));
	assert_int_equal(log_count(f, line), 1);
	assert_int_equal(log_count(f, "no copy matches (scrub); lost: file /quiet"), 1);
	assert_int_equal(log_count(f, "lost: file"), 1);
}

/*
 * A flip in one member's copy of the metadata mirror: the pass reads the
 * six copies of each MiB at once and compares them (mirror_scrub_span.c),
 * and the ones that differ go to the copies' vote under the lock, which
 * rewrites the outvoted copy: repaired once, logged once as metadata, the
 * copy's bytes back as they were; the next pass finds nothing.
 */
static void test_a_flip_in_one_copy_of_the_metadata_is_rewritten_once(void **state)
{
	struct fixture *f = *state;
	struct vfs_resolve r = { .volume_offset = 4u << 20 };
	uint8_t was[8], now[8];
	struct vfs_scrub s0 = scrub_pass(f), s;

	assert_int_equal(s0.repaired, 0);
	assert_int_equal(VFS_CALL(f->v.fs, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_METADATA);
	assert_int_equal(bdev_pread(f->fault[r.member], was, sizeof(was), r.member_offset), 0);
	flip8(f, r.member, r.member_offset);
	f->loglen = 0;
	f->log[0] = 0;
	s = scrub_pass(f);
	assert_int_equal(s.repaired, 1);
	assert_int_equal(s.lost, s0.lost);      /* the test before's lost block, if it ran */
	assert_int_equal(log_count(f, "disagreed with the volume's redundancy: rewritten; "
				      "holds metadata"), 1);
	assert_int_equal(log_count(f, "scrub: member"), 1);
	assert_int_equal(bdev_pread(f->fault[r.member], now, sizeof(now), r.member_offset), 0);
	assert_memory_equal(now, was, sizeof(was));
	s = scrub_pass(f);
	assert_int_equal(s.repaired, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_clean_pass_repairs_nothing),
		cmocka_unit_test(test_unreadable_sectors_within_raid6_are_written_back),
		cmocka_unit_test(test_a_row_unreadable_on_three_members_names_its_file_lost),
		cmocka_unit_test(test_two_threads_repair_a_flip_in_each_of_two_steps_once),
		cmocka_unit_test(test_a_block_whose_parity_agrees_but_checksum_fails_is_named_lost_once),
		cmocka_unit_test(test_a_flip_in_one_copy_of_the_metadata_is_rewritten_once),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
