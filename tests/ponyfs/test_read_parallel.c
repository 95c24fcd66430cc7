/*
 * test_read_parallel.c - ponyfs's reads run outside its lock (read.c), from
 * several threads at once, while a writer overwrites the file, commits
 * (which frees the old blocks for reuse) and writes back. Every block a
 * reader gets must be whole, of the right file block, and at least as new
 * as the last write acknowledged before its read began: a read that took
 * a cached block from the disk after its writeback moved it, or a block
 * reused for other data, fails here.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "helpers.h"
#include "pony/util.h"

#define NBLOCKS 512u                    /* the file: 2 MiB */
#define RUN_NS (1500ull * 1000000ull)   /* how long the writer goes on */

struct shared {
	struct vfs *fs;
	uint64_t ino, fh;
	_Atomic uint64_t acked[NBLOCKS];    /* the version last acknowledged per block */
	atomic_bool stop;
	_Atomic uint64_t reads, blocks_checked;
	char failure[200];                  /* the first thing found wrong */
	pthread_mutex_t lock;
};

/* Block i at version v: its number, its version, then bytes of both. */
static void stamp(uint8_t *blk, uint64_t i, uint64_t v)
{
	memcpy(blk, &i, 8);             /* the test's own bytes: host order */
	memcpy(blk + 8, &v, 8);
	for (size_t k = 16; k < 4096; k++)
		blk[k] = (uint8_t)(i * 31 + v * 7 + k);
}

static void note_failure(struct shared *sh, const char *what, uint64_t i, uint64_t v, uint64_t want)
{
	pthread_mutex_lock(&sh->lock);
	if (!sh->failure[0])
		snprintf(sh->failure, sizeof(sh->failure), "block %llu: %s (version %llu, at least %llu)",
			 (unsigned long long)i, what, (unsigned long long)v,
			 (unsigned long long)want);
	pthread_mutex_unlock(&sh->lock);
	atomic_store(&sh->stop, true);
}

static void *writer_main(void *arg)
{
	struct shared *sh = arg;
	static uint8_t buf[64 * 4096];
	uint64_t version = 1, t0 = util_now_ns(), seed = 7;

	while (!atomic_load(&sh->stop) && util_now_ns() - t0 < RUN_NS) {
		uint64_t first, n;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		first = (seed >> 33) % NBLOCKS;
		n = MIN(1 + (seed >> 20) % 64, NBLOCKS - first);
		version++;
		for (uint64_t j = 0; j < n; j++)
			stamp(buf + j * 4096, first + j, version);
		if (VFS_CALL(sh->fs, write, sh->ino, sh->fh, buf, n * 4096, (off_t)(first * 4096)) !=
		    (ssize_t)(n * 4096)) {
			note_failure(sh, "write failed", first, version, 0);
			break;
		}
		for (uint64_t j = 0; j < n; j++)
			atomic_store(&sh->acked[first + j], version);
		/* Writeback (data to new blocks, pages dropped) and commits
		 * (the old blocks become free and are reused by later writes). */
		if (version % 5 == 0)
			VFS_CALL(sh->fs, fsync, sh->ino, sh->fh, false);
		if (version % 13 == 0)
			VFS_CALL(sh->fs, syncfs);
	}
	atomic_store(&sh->stop, true);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct shared *sh = arg;
	static _Thread_local uint8_t buf[256 * 4096];
	uint64_t floor[256], seed = (uint64_t)(uintptr_t)&seed;

	while (!atomic_load(&sh->stop)) {
		uint64_t first, n;
		ssize_t got;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		first = (seed >> 33) % NBLOCKS;
		n = MIN(1 + (seed >> 20) % 256, NBLOCKS - first);
		for (uint64_t j = 0; j < n; j++)
			floor[j] = atomic_load(&sh->acked[first + j]);
		got = VFS_CALL(sh->fs, read, sh->ino, sh->fh, buf, n * 4096, (off_t)(first * 4096));
		if (got != (ssize_t)(n * 4096)) {
			note_failure(sh, "short or failed read", first, (uint64_t)got, n * 4096);
			break;
		}
		for (uint64_t j = 0; j < n; j++) {
			uint8_t want[4096];
			uint64_t i, v;

			memcpy(&i, buf + j * 4096, 8);
			memcpy(&v, buf + j * 4096 + 8, 8);

			if (i != first + j) {
				note_failure(sh, "another block's data", first + j, v, floor[j]);
				return NULL;
			}
			if (v < floor[j]) {
				note_failure(sh, "older than an acknowledged write", i, v, floor[j]);
				return NULL;
			}
			stamp(want, i, v);
			if (memcmp(want, buf + j * 4096, 4096)) {
				note_failure(sh, "torn", i, v, floor[j]);
				return NULL;
			}
		}
		atomic_fetch_add(&sh->reads, 1);
		atomic_fetch_add(&sh->blocks_checked, n);
	}
	return NULL;
}

static void test_reads_in_parallel_with_overwrites_and_commits_see_whole_current_blocks(void **state)
{
	static struct shared sh;
	static uint8_t init[NBLOCKS * 4096];
	pthread_t writer, readers[3];
	struct bdev *dev;

	pthread_mutex_init(&sh.lock, NULL);
	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &sh.fs), 0);
	for (uint64_t i = 0; i < NBLOCKS; i++) {
		stamp(init + i * 4096, i, 1);
		sh.acked[i] = 1;
	}
	assert_int_equal(test_put(sh.fs, "f", init, sizeof(init)), 0);
	assert_int_equal(VFS_CALL(sh.fs, syncfs), 0);
	assert_int_equal(test_open(sh.fs, "f", O_RDWR, &sh.ino, &sh.fh), 0);

	for (unsigned i = 0; i < ARRAY_SIZE(readers); i++)
		assert_int_equal(pthread_create(&readers[i], NULL, reader_main, &sh), 0);
	assert_int_equal(pthread_create(&writer, NULL, writer_main, &sh), 0);
	pthread_join(writer, NULL);
	for (unsigned i = 0; i < ARRAY_SIZE(readers); i++)
		pthread_join(readers[i], NULL);

	print_message("%llu reads, %llu blocks checked\n", (unsigned long long)sh.reads,
		      (unsigned long long)sh.blocks_checked);
	if (sh.failure[0])
		fail_msg("%s", sh.failure);
	assert_true(sh.reads > 100);
	assert_int_equal(VFS_CALL(sh.fs, release, sh.ino, sh.fh), 0);
	vfs_free(sh.fs);
	assert_int_equal(ponyfs_fsck_image(dev, PONYFS_FSCK_DATA, NULL, NULL), 0);
	bdev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_reads_in_parallel_with_overwrites_and_commits_see_whole_current_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
