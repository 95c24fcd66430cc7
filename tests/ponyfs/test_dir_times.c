/*
 * test_dir_times.c - a directory's mtime and ctime after a name removed
 * from it (src/ponyfs/dentry.c): held in its cached inode and written
 * once, by the commit that carries the names' changes, not by an UPDATE
 * per unlink. A stat sees them at once; a remount and a power cut after
 * a commit see what the stat saw; a power cut before the commit sees the
 * name and the old times; a name made or a utimes after them is not
 * undone by the commit's write.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "pony/ponyfs.h"
#include "pony/vfs.h"
#include "fixture.h"

#define NFILES 10

static struct statx attr(struct vfs *fs, uint64_t ino)
{
	struct vfs_ctx c = test_ctx();
	struct statx x;

	assert_int_equal(VFS_CALL(fs, statx, &c, ino, VFS_NO_FH, AT_STATX_DONT_SYNC,
				  STATX_BASIC_STATS, &x), 0);
	return x;
}

static int64_t ns(struct statx_timestamp t)
{
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

static void assert_same_times(struct statx a, struct statx b)
{
	assert_int_equal(ns(a.stx_mtime), ns(b.stx_mtime));
	assert_int_equal(ns(a.stx_ctime), ns(b.stx_ctime));
}

/* Directory "d" holding f0 .. f<n-1>, committed; its inode number. */
static uint64_t dir_with_files(struct vfs *fs, unsigned n)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d;

	assert_int_equal(VFS_CALL(fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	for (unsigned i = 0; i < n; i++) {
		char path[16];

		snprintf(path, sizeof(path), "d/f%u", i);
		assert_int_equal(test_put(fs, path, "x", 1), 0);
	}
	assert_int_equal(test_put(fs, "other", "y", 1), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	return d.ino;
}

/* Unlinks d/f<i> a moment after the last change; d's attributes after. */
static struct statx unlink_f(struct vfs *fs, uint64_t dir, unsigned i)
{
	struct vfs_ctx c = test_ctx();
	char name[16];

	usleep(2000);
	snprintf(name, sizeof(name), "f%u", i);
	assert_int_equal(VFS_CALL(fs, unlink, &c, dir, name), 0);
	return attr(fs, dir);
}

static int fsync_other(struct vfs *fs)
{
	uint64_t ino, fh;
	int r = test_open(fs, "other", O_RDWR, &ino, &fh);

	if (r >= 0) {
		r = VFS_CALL(fs, fsync, ino, fh, false);
		VFS_CALL(fs, release, ino, fh);
	}
	return r;
}

/* Every unlink moves the times a stat sees; the commit writes them once. */
static void test_unlinks_times_are_seen_at_once_and_written_once(void **state)
{
	struct fixture *f = *state;
	uint64_t dir = dir_with_files(f->fs, NFILES);
	struct statx prev = attr(f->fs, dir), now;
	struct ponyfs_stats s0, s1;

	ponyfs_get_stats(f->fs, &s0);
	for (unsigned i = 0; i < NFILES; i++) {
		now = unlink_f(f->fs, dir, i);
		assert_true(ns(now.stx_mtime) > ns(prev.stx_mtime));
		assert_int_equal(ns(now.stx_ctime), ns(now.stx_mtime));
		prev = now;
	}
	ponyfs_get_stats(f->fs, &s1);
	assert_int_equal(s1.dir_times_written, s0.dir_times_written);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	ponyfs_get_stats(f->fs, &s1);
	assert_int_equal(s1.dir_times_written, s0.dir_times_written + 1);
	assert_same_times(attr(f->fs, dir), prev);
	remount(f);
	assert_same_times(attr(f->fs, dir), prev);
}

/* A commit made for another file (its fsync) carries the unlink and the
 * directory's times together; a power cut before any commit leaves both. */
static void test_a_power_cut_sees_the_names_and_the_times_together(void **state)
{
	struct fixture *f = *state;
	uint64_t dir = dir_with_files(f->fs, 2);
	struct statx before = attr(f->fs, dir), after;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;

	after = unlink_f(f->fs, dir, 0);
	assert_int_equal(fsync_other(f->fs), 0);
	assert_int_equal(VFS_CALL(f->fs, shutdown, 0), 0);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, dir, "f0", &e), -ENOENT);
	assert_same_times(attr(f->fs, dir), after);
	/* Not committed: the name is there, with the times it had. */
	before = attr(f->fs, dir);
	(void)unlink_f(f->fs, dir, 1);
	assert_int_equal(VFS_CALL(f->fs, shutdown, 0), 0);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, dir, "f1", &e), 0);
	assert_same_times(attr(f->fs, dir), before);
}

/* What a later change wrote to the row (a create's times, a utimes) is
 * what commits, not the times the unlink left in memory. */
static void test_later_changes_of_the_times_are_not_undone(void **state)
{
	struct fixture *f = *state;
	uint64_t dir = dir_with_files(f->fs, 2);
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr a = { .valid = VFS_SET_MTIME, .mtime = { .tv_sec = 1000 } };
	struct statx gone, made, set;

	gone = unlink_f(f->fs, dir, 0);
	usleep(2000);
	assert_int_equal(test_put(f->fs, "d/g", "z", 1), 0);
	made = attr(f->fs, dir);
	assert_true(ns(made.stx_mtime) > ns(gone.stx_mtime));
	assert_true(ns(made.stx_ctime) > ns(gone.stx_ctime));
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	remount(f);
	assert_same_times(attr(f->fs, dir), made);

	(void)unlink_f(f->fs, dir, 1);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, dir, VFS_NO_FH, &a, &set), 0);
	assert_int_equal(set.stx_mtime.tv_sec, 1000);
	assert_same_times(attr(f->fs, dir), set);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	remount(f);
	assert_same_times(attr(f->fs, dir), set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unlinks_times_are_seen_at_once_and_written_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_power_cut_sees_the_names_and_the_times_together,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_later_changes_of_the_times_are_not_undone, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
