/*
 * test_ordering.c - ponyfs's ordering rules, one test each: (1) data is
 * flushed before the metadata that points at it; (2) rename-over and
 * truncate-then-rewrite commit with the new data, no fsync needed; (3)
 * fsync writes only its file's data; (4) fbarrier orders data before later
 * metadata without waiting; (5) commits come from the timer and syncfs.
 * "Power cut" here is a copy of the disk as the writes left it, mounted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <cmocka.h>

#include "helpers.h"
#include "pony/util.h"

#define IMG_SIZE (32u << 20)



#define META_BYTES (4u << 20)   /* what mkfs picks for IMG_SIZE (docs/ponyfs-format.md) */

/* The disk as it is now, as a new memory bdev: what a power cut leaves. */
static struct bdev *power_cut(struct bdev *dev)
{
	uint8_t *buf = malloc(bdev_size(dev));
	struct bdev *copy;

	assert_non_null(buf);
	assert_int_equal(bdev_pread(dev, buf, bdev_size(dev), 0), 0);
	assert_int_equal(bdev_mem_new(bdev_size(dev), &copy), 0);
	assert_int_equal(bdev_pwrite(copy, buf, bdev_size(dev), 0), 0);
	free(buf);
	return copy;
}

/* Mounts a power-cut copy; checks it is clean; the caller frees both. */
static struct vfs *mount_copy(struct bdev *copy)
{
	struct vfs *fs;

	assert_int_equal(ponyfs_fsck_image(copy, PONYFS_FSCK_DATA, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount_image(copy, NULL, &fs), 0);
	return fs;
}

static void expect_content(struct vfs *fs, const char *path, const uint8_t *want, size_t len)
{
	static uint8_t got[1 << 20];

	assert_int_equal(test_get(fs, path, got, sizeof(got)), (ssize_t)len);
	assert_memory_equal(got, want, len);
}

static int fsync_path(struct vfs *fs, const char *path)
{
	uint64_t ino, fh;
	int r = test_open(fs, path, O_RDWR, &ino, &fh);

	if (r >= 0) {
		r = VFS_CALL(fs, fsync, ino, fh, false);
		VFS_CALL(fs, release, ino, fh);
	}
	return r;
}

struct log_entry { uint64_t off, len, flags; };

/* The entries of a record log (dm-log-writes format, see src/bdev/record.c). */
static size_t read_log(struct bdev *log, struct log_entry *ret, size_t max)
{
	uint64_t n, pos = 512;
	size_t k = 0;

	assert_int_equal(bdev_record_count(log, &n), 0);
	for (uint64_t i = 0; i < n && k < max; i++) {
		uint8_t h[32];

		assert_int_equal(bdev_pread(log, h, sizeof(h), pos), 0);
		ret[k].off = util_get_le64(h) * 512;
		ret[k].len = util_get_le64(h + 8) * 512;
		ret[k].flags = util_get_le64(h + 16);
		pos += 512 + ((ret[k].flags & 9) ? 0 : ret[k].len);
		if (!(ret[k].flags & 8))        /* marks do not count */
			k++;
	}
	return k;
}

static void test_data_is_flushed_before_metadata_that_points_at_it(void **state)
{
	struct bdev *disk, *log, *rec;
	struct vfs *fs;
	static struct log_entry e[20000];
	static uint8_t w[200000];
	size_t n, data_bytes = 0, put = 0;

	assert_int_equal(bdev_mem_new(IMG_SIZE, &disk), 0);
	assert_int_equal(bdev_mem_new(256u << 20, &log), 0);
	assert_int_equal(ponyfs_mkfs_image(disk, NULL), 0);
	assert_int_equal(bdev_record_new(disk, log, &rec), 0);
	assert_int_equal(ponyfs_mount_image(rec, NULL, &fs), 0);
	for (int i = 0; i < 8; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", i);
		test_fill(w, sizeof(w), (unsigned)i);
		assert_int_equal(test_put(fs, name, w, sizeof(w) / (size_t)(i + 1)), 0);
		put += sizeof(w) / (size_t)(i + 1);
		if (i % 3 == 0)
			assert_int_equal(fsync_path(fs, name), 0);
	}
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	vfs_free(fs);
	n = read_log(log, e, ARRAY_SIZE(e));
	/* After every data write, a flush comes before the next metadata write. */
	for (size_t i = 0; i < n; i++) {
		if (e[i].flags || e[i].off < META_BYTES)
			continue;
		data_bytes += e[i].len;
		for (size_t j = i + 1; j < n; j++) {
			if (e[j].flags & 1)
				break;
			assert_false(!e[j].flags && e[j].off < META_BYTES);
		}
	}
	/* Every file's data went out (small files' in shared writes, gather.c). */
	assert_true(data_bytes >= put);
	bdev_free(rec);
}

static void test_rename_over_commits_with_the_new_data(void **state)
{
	struct bdev *dev, *copy;
	struct vfs *fs, *after;
	static uint8_t old[100000], new[150000];

	test_fill(old, sizeof(old), 1);
	test_fill(new, sizeof(new), 2);
	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "config", old, sizeof(old)), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	/* The application's pattern: write new, rename over old, no fsync. */
	assert_int_equal(test_put(fs, "config.tmp", new, sizeof(new)), 0);
	{
		struct vfs_ctx c = test_ctx();

		assert_int_equal(VFS_CALL(fs, rename, &c, VFS_ROOT_INO, "config.tmp", VFS_ROOT_INO,
					  "config", 0), 0);
	}
	/* Something else commits (another file's fsync): the rename goes with it. */
	assert_int_equal(test_put(fs, "other", "x", 1), 0);
	assert_int_equal(fsync_path(fs, "other"), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "config", new, sizeof(new));
	vfs_free(after);
	bdev_free(copy);
	vfs_free(fs);
	bdev_free(dev);
}

static int rename_path(struct vfs *fs, const char *from, const char *to)
{
	struct vfs_ctx c = test_ctx();

	return VFS_CALL(fs, rename, &c, VFS_ROOT_INO, from, VFS_ROOT_INO, to, 0);
}

/* Power-cuts dev, checks path holds want (len bytes), frees the copy. */
static void expect_after_power_cut(struct bdev *dev, const char *path, const uint8_t *want,
				   size_t len)
{
	struct bdev *copy = power_cut(dev);
	struct vfs *after = mount_copy(copy);

	expect_content(after, path, want, len);
	vfs_free(after);
	bdev_free(copy);
}

/* A fresh filesystem on a new *ret_dev where name holds len bytes of old
 * and "other" one byte, both committed. */
static struct vfs *fs_with_committed(struct bdev **ret_dev, const char *name, const uint8_t *old,
				     size_t len)
{
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(IMG_SIZE, ret_dev), 0);
	assert_int_equal(ponyfs_mkfs_image(*ret_dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(*ret_dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, name, old, len), 0);
	assert_int_equal(test_put(fs, "other", "x", 1), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	return fs;
}

/*
 * Rule 2 is kept at the commit, not by a write at the rename (bound.c):
 * the rename writes no data block, the file's data stays cached, and the
 * next commit (here another file's fsync) writes it before COMMIT.
 */
static void test_a_rename_writes_its_data_at_the_commit_not_at_the_rename(void **state)
{
	static uint8_t old[100000], new[150000];
	struct ponyfs_stats s0, s1, s2;
	struct bdev *dev;
	struct vfs *fs;

	test_fill(old, sizeof(old), 7);
	test_fill(new, sizeof(new), 8);
	fs = fs_with_committed(&dev, "config", old, sizeof(old));
	assert_int_equal(test_put(fs, "config.tmp", new, sizeof(new)), 0);
	ponyfs_get_stats(fs, &s0);
	assert_int_equal(rename_path(fs, "config.tmp", "config"), 0);
	ponyfs_get_stats(fs, &s1);
	assert_int_equal(s1.data_blocks_written, s0.data_blocks_written);
	assert_int_equal(ponyfs_dirty_bytes(fs), DIV_ROUND_UP(sizeof(new), 4096) * 4096);
	expect_after_power_cut(dev, "config", old, sizeof(old));
	assert_int_equal(fsync_path(fs, "other"), 0);
	ponyfs_get_stats(fs, &s2);
	assert_int_equal(s2.bound_writebacks, s1.bound_writebacks + 1);
	assert_true(s2.data_blocks_written >= s1.data_blocks_written + DIV_ROUND_UP(sizeof(new), 4096));
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	expect_after_power_cut(dev, "config", new, sizeof(new));
	vfs_free(fs);
	bdev_free(dev);
}

/* A file replaced again before the commit goes with its cached data: only
 * the last of three write-new + rename-over reaches the disk. */
static void test_a_file_replaced_before_the_commit_is_never_written(void **state)
{
	static uint8_t v[3][40960];
	struct ponyfs_stats s0, s1;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	ponyfs_get_stats(fs, &s0);
	for (unsigned i = 0; i < 3; i++) {
		test_fill(v[i], sizeof(v[i]), 20 + i);
		assert_int_equal(test_put(fs, "config.tmp", v[i], sizeof(v[i])), 0);
		assert_int_equal(rename_path(fs, "config.tmp", "config"), 0);
	}
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	ponyfs_get_stats(fs, &s1);
	assert_int_equal(s1.data_blocks_written - s0.data_blocks_written, sizeof(v[2]) / 4096);
	expect_after_power_cut(dev, "config", v[2], sizeof(v[2]));
	vfs_free(fs);
	bdev_free(dev);
}

/*
 * A file renamed over another, then truncated and rewritten before any
 * commit: a commit in the middle of the rewrite must carry the content the
 * rename gave the name, not the truncated, half-rewritten file (the
 * truncation writes the bound file back first).
 */
static void test_a_renamed_file_rewritten_before_the_commit_keeps_its_renamed_content(void **state)
{
	static uint8_t old[60000], mid[100000], new[120000];
	uint64_t ino, fh;
	struct bdev *dev;
	struct vfs *fs;

	test_fill(old, sizeof(old), 9);
	test_fill(mid, sizeof(mid), 10);
	test_fill(new, sizeof(new), 11);
	fs = fs_with_committed(&dev, "state", old, sizeof(old));
	assert_int_equal(test_put(fs, "state.tmp", mid, sizeof(mid)), 0);
	assert_int_equal(rename_path(fs, "state.tmp", "state"), 0);
	assert_int_equal(test_open(fs, "state", O_WRONLY | O_TRUNC, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, new, 50000, 0), 50000);
	assert_int_equal(fsync_path(fs, "other"), 0);
	expect_after_power_cut(dev, "state", mid, sizeof(mid));
	assert_int_equal(VFS_CALL(fs, write, ino, fh, new + 50000, sizeof(new) - 50000, 50000),
			 (ssize_t)sizeof(new) - 50000);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	assert_int_equal(fsync_path(fs, "other"), 0);
	expect_after_power_cut(dev, "state", new, sizeof(new));
	vfs_free(fs);
	bdev_free(dev);
}

static void test_truncate_then_rewrite_is_all_old_or_all_new(void **state)
{
	struct bdev *dev, *copy;
	struct vfs *fs, *after;
	static uint8_t old[100000], new[120000];
	uint64_t ino, fh;

	test_fill(old, sizeof(old), 3);
	test_fill(new, sizeof(new), 4);
	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "state", old, sizeof(old)), 0);
	assert_int_equal(test_put(fs, "other", "x", 1), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	assert_int_equal(test_open(fs, "state", O_WRONLY | O_TRUNC, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, new, 50000, 0), 50000);
	/* A commit in the middle of the rewrite: the file must still be the old one. */
	assert_int_equal(fsync_path(fs, "other"), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "state", old, sizeof(old));
	vfs_free(after);
	bdev_free(copy);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, new + 50000, sizeof(new) - 50000, 50000),
			 (ssize_t)sizeof(new) - 50000);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	assert_int_equal(fsync_path(fs, "other"), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "state", new, sizeof(new));
	vfs_free(after);
	bdev_free(copy);
	vfs_free(fs);
	bdev_free(dev);
}

/* Appends a line to "log" and fsyncs it; the counters' change in *ret. */
static void fsync_log_entry(struct vfs *fs, struct ponyfs_stats *ret)
{
	struct ponyfs_stats s0, s1;
	uint64_t li, lf;

	ponyfs_get_stats(fs, &s0);
	assert_int_equal(test_open(fs, "log", O_WRONLY | O_APPEND, &li, &lf), 0);
	assert_int_equal(VFS_CALL(fs, write, li, lf, "entry\n", 6, 0), 6);
	assert_int_equal(VFS_CALL(fs, fsync, li, lf, false), 0);
	assert_int_equal(VFS_CALL(fs, release, li, lf), 0);
	ponyfs_get_stats(fs, &s1);
	ret->commits = s1.commits - s0.commits;
	ret->data_blocks_written = s1.data_blocks_written - s0.data_blocks_written;
	ret->writebacks = s1.writebacks - s0.writebacks;
}

/* 40 MiB of unrelated data, more than one file used to keep cached (32 MiB),
 * still open as a writer in another process keeps it: the fsync of another
 * file writes that file's one block and commits, and the 40 MiB stays
 * cached, in no transaction, so no flush of the fsync waits for it. */
static void test_fsync_writes_only_that_files_data(void **state)
{
	static uint8_t big[40 << 20];
	struct ponyfs_stats d;
	uint64_t ino, fh;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(96u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "log", "", 0), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	assert_int_equal(test_open(fs, "bulk", O_CREAT | O_WRONLY, &ino, &fh), 0);
	for (size_t off = 0; off < sizeof(big); off += 1 << 20)
		assert_int_equal(VFS_CALL(fs, write, ino, fh, big + off, 1 << 20, off), 1 << 20);
	assert_int_equal(ponyfs_dirty_bytes(fs), sizeof(big));
	for (int i = 0; i < 3; i++) {
		fsync_log_entry(fs, &d);
		assert_int_equal(d.data_blocks_written, 1);
		assert_int_equal(d.writebacks, 1);
		assert_int_equal(d.commits, 1);
		assert_int_equal(ponyfs_dirty_bytes(fs), sizeof(big));
	}
	/* Its own fsync writes it all. */
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), 0);
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	vfs_free(fs);
	bdev_free(dev);
}

/* Over the dirty budget the writer writes back its own file, not the
 * others': their fsyncs still write only their own blocks. */
static void test_a_writer_over_the_dirty_budget_writes_back_its_own_file(void **state)
{
	struct ponyfs_options o = { .dirty_max = 4u << 20 };
	static uint8_t big[1 << 20];
	uint64_t ino, fh, ino2, fh2;
	struct ponyfs_stats s0, s1, d;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, &o, &fs), 0);
	assert_int_equal(test_put(fs, "log", "", 0), 0);
	assert_int_equal(test_open(fs, "other", O_CREAT | O_WRONLY, &ino2, &fh2), 0);
	assert_int_equal(VFS_CALL(fs, write, ino2, fh2, big, sizeof(big), 0), (ssize_t)sizeof(big));
	assert_int_equal(test_open(fs, "bulk", O_CREAT | O_WRONLY, &ino, &fh), 0);
	ponyfs_get_stats(fs, &s0);
	for (uint64_t off = 0; off < (16u << 20); off += sizeof(big))
		assert_int_equal(VFS_CALL(fs, write, ino, fh, big, sizeof(big), off), (ssize_t)sizeof(big));
	ponyfs_get_stats(fs, &s1);
	assert_true(ponyfs_dirty_bytes(fs) <= (4u << 20) + sizeof(big));
	/* Only bulk went out: "other"'s megabyte is still cached. */
	assert_true(ponyfs_dirty_bytes(fs) >= sizeof(big));
	assert_true(s1.data_blocks_written - s0.data_blocks_written >= (12u << 20) / 4096);
	fsync_log_entry(fs, &d);
	assert_int_equal(d.data_blocks_written, 1);
	assert_true(ponyfs_dirty_bytes(fs) >= sizeof(big));
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(fs, release, ino2, fh2), 0);
	vfs_free(fs);
	bdev_free(dev);
}

/* One file streamed past 256 MiB is written back by its writer: the
 * daemon keeps at most that much of it, whatever the budget, and other
 * files' cached data stays cached. */
static void test_a_streaming_file_keeps_at_most_256_mib_cached(void **state)
{
	static uint8_t big[1 << 20];
	uint64_t ino, fh, ino2, fh2;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(384u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_open(fs, "other", O_CREAT | O_WRONLY, &ino2, &fh2), 0);
	assert_int_equal(VFS_CALL(fs, write, ino2, fh2, big, sizeof(big), 0), (ssize_t)sizeof(big));
	assert_int_equal(test_open(fs, "stream", O_CREAT | O_WRONLY, &ino, &fh), 0);
	for (uint64_t off = 0; off < (272u << 20); off += sizeof(big)) {
		assert_int_equal(VFS_CALL(fs, write, ino, fh, big, sizeof(big), off),
				 (ssize_t)sizeof(big));
		assert_true(ponyfs_dirty_bytes(fs) <= (256u << 20) + 2 * sizeof(big));
	}
	assert_true(ponyfs_dirty_bytes(fs) >= sizeof(big));     /* "other" */
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(fs, release, ino2, fh2), 0);
	vfs_free(fs);
	bdev_free(dev);
}

/* The timer commits names and small files, but leaves a file being
 * streamed (open for writing, more than 32 MiB cached) cached: otherwise
 * every commit, and every fsync after it, would wait for that data. */
static void test_the_timer_leaves_a_streaming_files_data_cached(void **state)
{
	struct ponyfs_options timer = { .commit_ms = 50 };
	struct timespec ts = { 0, 50 * 1000000 };
	static uint8_t big[40 << 20];
	uint64_t ino, fh, commits = 0;
	struct ponyfs_stats s;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(96u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, &timer, &fs), 0);
	assert_int_equal(test_open(fs, "bulk", O_CREAT | O_WRONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, big, sizeof(big), 0), (ssize_t)sizeof(big));
	assert_int_equal(test_put(fs, "small", "s", 1), 0);
	for (int i = 0; i < 100 && ponyfs_dirty_bytes(fs) > sizeof(big); i++)
		nanosleep(&ts, NULL);
	ponyfs_get_stats(fs, &s);
	commits = s.commits;
	assert_true(commits > 0);
	assert_int_equal(ponyfs_dirty_bytes(fs), sizeof(big));
	/* Closed, it is an ordinary file: the next tick takes it. */
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	for (int i = 0; i < 100 && ponyfs_dirty_bytes(fs); i++)
		nanosleep(&ts, NULL);
	ponyfs_get_stats(fs, &s);
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	assert_true(s.commits > commits);
	vfs_free(fs);
	bdev_free(dev);
}

/* The cache's memory stays mapped while data comes and goes (a streaming
 * file is written back every 32 MiB and fills the cache again), and goes
 * back to the kernel, but one slab, once a timer tick finds it empty. */
static void test_the_caches_memory_goes_back_once_it_is_empty(void **state)
{
	struct ponyfs_options no_timer = { .commit_ms = 0 }, timer = { .commit_ms = 50 };
	struct timespec ts = { 0, 20 * 1000000 };
	static uint8_t data[8 << 20];
	struct ponyfs_stats s;
	struct bdev *dev;
	struct vfs *fs;

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	/* No timer: written back and committed, the cache is empty and its
	 * memory still mapped. */
	assert_int_equal(ponyfs_mount_image(dev, &no_timer, &fs), 0);
	assert_int_equal(test_put(fs, "f", data, sizeof(data)), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	ponyfs_get_stats(fs, &s);
	vfs_free(fs);
	if (!s.cache_slab_bytes) {
		/* Under AddressSanitizer each page is malloc()ed and freed. */
		print_message("cache pages come from malloc() in this build: no slabs to see\n");
		bdev_free(dev);
		return;
	}
	assert_true(s.cache_slab_bytes >= sizeof(data));
	/* With the timer: its tick gives all but one slab back. */
	assert_int_equal(ponyfs_mount_image(dev, &timer, &fs), 0);
	assert_int_equal(test_put(fs, "g", data, sizeof(data)), 0);
	for (int i = 0; i < 500; i++) {        /* 10 s at most */
		nanosleep(&ts, NULL);
		ponyfs_get_stats(fs, &s);
		if (s.cache_slab_bytes <= (2u << 20) && !ponyfs_dirty_bytes(fs))
			break;
	}
	assert_int_equal(s.cache_slab_bytes, 2u << 20);
	expect_content(fs, "g", data, 1 << 20);
	vfs_free(fs);
	bdev_free(dev);
}

static void test_fbarrier_orders_data_before_later_metadata_without_waiting(void **state)
{
	struct bdev *dev, *copy;
	struct vfs *fs, *after;
	static uint8_t w[64000];
	struct ponyfs_stats s0, s1;
	uint64_t ino, fh;

	test_fill(w, sizeof(w), 7);
	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_open(fs, "journal", O_CREAT | O_WRONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, w, sizeof(w), 0), (ssize_t)sizeof(w));
	ponyfs_get_stats(fs, &s0);
	assert_int_equal(VFS_CALL(fs, barrier, ino, fh), 0);
	ponyfs_get_stats(fs, &s1);
	assert_int_equal(s1.commits, s0.commits);               /* nothing waited for */
	assert_int_equal(s1.data_flushes, s0.data_flushes);
	assert_int_equal(ponyfs_dirty_bytes(fs), 0);
	/* Written after the barrier: must not be visible without the data before it. */
	assert_int_equal(VFS_CALL(fs, write, ino, fh, "tail", 4, sizeof(w)), 4);
	assert_int_equal(test_put(fs, "commit-record", "done", 4), 0);
	assert_int_equal(fsync_path(fs, "commit-record"), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "commit-record", (const uint8_t *)"done", 4);
	expect_content(after, "journal", w, sizeof(w));
	vfs_free(after);
	bdev_free(copy);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	vfs_free(fs);
	bdev_free(dev);
}

static void test_commits_come_from_the_timer_and_from_syncfs(void **state)
{
	struct bdev *dev, *copy;
	struct vfs *fs, *after;
	struct ponyfs_options timer = { .commit_ms = 50 };
	struct vfs_entry e;
	struct vfs_ctx c = test_ctx();

	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	/* No timer: nothing is durable until syncfs. */
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "a", "aaaa", 4), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	assert_int_equal(VFS_CALL(after, lookup, &c, VFS_ROOT_INO, "a", &e), -ENOENT);
	vfs_free(after);
	bdev_free(copy);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "a", (const uint8_t *)"aaaa", 4);
	vfs_free(after);
	bdev_free(copy);
	vfs_free(fs);
	/* With the timer, the commit comes by itself. */
	assert_int_equal(ponyfs_mount_image(dev, &timer, &fs), 0);
	assert_int_equal(test_put(fs, "b", "bbbb", 4), 0);
	{
		struct timespec ts = { 0, 300 * 1000000 };
		struct ponyfs_stats s;

		for (int i = 0; i < 20; i++) {
			nanosleep(&ts, NULL);
			ponyfs_get_stats(fs, &s);
			if (s.commits && !ponyfs_dirty_bytes(fs))
				break;
		}
	}
	copy = power_cut(dev);
	after = mount_copy(copy);
	expect_content(after, "b", (const uint8_t *)"bbbb", 4);
	vfs_free(after);
	bdev_free(copy);
	vfs_free(fs);
	bdev_free(dev);
}

/*
 * A write call is never committed half-way (the soak found it: a new
 * 57,967-byte file was 4 KiB long after a kill). A page's reservation
 * that found no room wrote back every dirty file, the one being written
 * too, with only its first pages copied, and a commit followed. Here the
 * data region is full, so an overwrite borrows from the overwrite reserve,
 * and the reserve runs out in the middle of the call: after a power cut
 * the file holds what it held before, or all the call said it wrote.
 */
static void test_a_write_call_is_never_committed_half_way(void **state)
{
	static uint8_t old[1 << 20], new[1 << 20], got[2 << 20];
	struct bdev *dev, *copy;
	struct vfs *fs, *after;
	uint64_t ino, fh;
	ssize_t w, n;

	test_fill(old, sizeof(old), 5);
	test_fill(new, sizeof(new), 6);
	memcpy(got, old, sizeof(old));
	assert_int_equal(bdev_mem_new(IMG_SIZE, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(test_put(fs, "other", "o", 1), 0);
	assert_int_equal(test_put(fs, "state", old, sizeof(old)), 0);
	/* The rest of the data region, so overwrites must borrow. */
	assert_int_equal(test_open(fs, "fill", O_CREAT | O_WRONLY, &ino, &fh), 0);
	for (uint64_t off = 0; VFS_CALL(fs, write, ino, fh, got, 4096, off) == 4096;)
		off += 4096;
	VFS_CALL(fs, release, ino, fh);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	/* More blocks than the reserve (a 64th of the data region) in one call. */
	assert_int_equal(test_open(fs, "state", O_WRONLY, &ino, &fh), 0);
	/* Dirty already (as a file just made is), by an earlier call. */
	assert_int_equal(VFS_CALL(fs, write, ino, fh, old, 1, 0), 1);
	w = VFS_CALL(fs, write, ino, fh, new, sizeof(new), 0);
	VFS_CALL(fs, release, ino, fh);
	assert_true(w > 0 || w == -ENOSPC);
	assert_int_equal(fsync_path(fs, "other"), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	n = test_get(after, "state", got, sizeof(got));
	assert_int_equal(n, (ssize_t)sizeof(old));
	/* The old content, or the old with the call's bytes in it. */
	if (memcmp(got, old, sizeof(old))) {
		assert_true(w > 0);
		assert_memory_equal(got, new, (size_t)w);
		assert_memory_equal(got + w, old + w, sizeof(old) - (size_t)w);
	}
	vfs_free(after);
	bdev_free(copy);
	/* What the call said it wrote is what a commit keeps. */
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	copy = power_cut(dev);
	after = mount_copy(copy);
	assert_int_equal(test_get(after, "state", got, sizeof(got)), (ssize_t)sizeof(old));
	assert_memory_equal(got, new, (size_t)MAX(w, 0));
	assert_memory_equal(got + MAX(w, 0), old + MAX(w, 0), sizeof(old) - (size_t)MAX(w, 0));
	vfs_free(after);
	bdev_free(copy);
	vfs_free(fs);
	bdev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_is_flushed_before_metadata_that_points_at_it),
		cmocka_unit_test(test_rename_over_commits_with_the_new_data),
		cmocka_unit_test(test_a_rename_writes_its_data_at_the_commit_not_at_the_rename),
		cmocka_unit_test(test_a_file_replaced_before_the_commit_is_never_written),
		cmocka_unit_test(test_a_renamed_file_rewritten_before_the_commit_keeps_its_renamed_content),
		cmocka_unit_test(test_truncate_then_rewrite_is_all_old_or_all_new),
		cmocka_unit_test(test_fsync_writes_only_that_files_data),
		cmocka_unit_test(test_a_writer_over_the_dirty_budget_writes_back_its_own_file),
		cmocka_unit_test(test_the_timer_leaves_a_streaming_files_data_cached),
		cmocka_unit_test(test_a_streaming_file_keeps_at_most_256_mib_cached),
		cmocka_unit_test(test_the_caches_memory_goes_back_once_it_is_empty),
		cmocka_unit_test(test_fbarrier_orders_data_before_later_metadata_without_waiting),
		cmocka_unit_test(test_commits_come_from_the_timer_and_from_syncfs),
		cmocka_unit_test(test_a_write_call_is_never_committed_half_way),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
