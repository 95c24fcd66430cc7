/*
 * test_errors.c - failures keep their names. A disk read error while a
 * name, an inode or an xattr is looked up is that error (EIO), never
 * "No such file" or "No such attribute"; a commit that fails in the
 * background (the commit timer, the early commit of a large transaction)
 * is logged once with its own errno, returned by the next call, and shown
 * in the counters. Faults come from the fault bdev under a memory image.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"
#include "pony/util.h"

#define IMG (32u << 20)

struct logged {
	pthread_mutex_t lock;
	int commit_failed, went_read_only;
};

static void log_sink(void *arg, int prio, const char *text)
{
	struct logged *l = arg;

	pthread_mutex_lock(&l->lock);
	if (strstr(text, "commit failed"))
		l->commit_failed += strstr(text, "No such device (ENODEV)") ? 1 : 100;
	l->went_read_only += strstr(text, "read-only") != NULL;
	pthread_mutex_unlock(&l->lock);
}

static struct bdev *fault_image(void)
{
	struct bdev *mem, *f;

	assert_int_equal(bdev_mem_new(IMG, &mem), 0);
	assert_int_equal(bdev_fault_new(mem, &f), 0);
	assert_int_equal(ponyfs_mkfs_image(f, NULL), 0);
	return f;
}

static int make(struct vfs *fs, uint64_t parent, const char *name, uint64_t *ret_ino)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	uint64_t fh;
	int r = VFS_CALL(fs, create, &c, parent, name, 0644, O_CREAT | O_WRONLY, &e, &fh);

	if (r == 0) {
		VFS_CALL(fs, release, e.ino, fh);
		if (ret_ino)
			*ret_ino = e.ino;
	}
	return r;
}

/*
 * "a" is looked up first, so the root's entries and the inodes' upper
 * pages are cached; "z" was made after 400 other inodes, so its inode row
 * lies in a leaf nobody read. With every read failing, its lookup finds
 * the name and then fails to read the inode: EIO, not ENOENT.
 */
static void test_read_error_looking_up_a_name_is_eio(void **state)
{
	struct bdev *f = fault_image();
	struct vfs_ctx c = test_ctx();
	struct ponyfs_options ro = { .read_only = true };
	struct vfs_entry e, d;
	struct vfs *fs;
	char name[32], v[8];

	assert_int_equal(ponyfs_mount_image(f, NULL, &fs), 0);
	assert_int_equal(make(fs, VFS_ROOT_INO, "a", NULL), 0);
	assert_int_equal(VFS_CALL(fs, mkdir, &c, VFS_ROOT_INO, "sub", 0755, &d), 0);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "filler-%d", i);
		assert_int_equal(make(fs, d.ino, name, NULL), 0);
	}
	assert_int_equal(make(fs, VFS_ROOT_INO, "z", NULL), 0);
	assert_int_equal(VFS_CALL(fs, setxattr, &c, VFS_ROOT_INO, "user.k", "v", 1, 0), 0);
	vfs_free(fs);

	assert_int_equal(ponyfs_mount_image(f, &ro, &fs), 0);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "a", &e), 0);
	assert_int_equal(bdev_fault_add_bad(f, 0, IMG, BDEV_FAULT_READ), 0);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "z", &e), -EIO);
	assert_int_equal(VFS_CALL(fs, getxattr, &c, VFS_ROOT_INO, "user.k", v, sizeof(v)), -EIO);
	bdev_fault_clear(f);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "z", &e), 0);
	assert_int_equal(VFS_CALL(fs, getxattr, &c, VFS_ROOT_INO, "user.k", v, sizeof(v)), 1);
	vfs_free(fs);
	bdev_free(f);
}

/*
 * The commit timer's commit fails because the device is gone (ENODEV):
 * one line says so, with the device's errno, and another that the
 * filesystem is read-only now; the next change fails with ENODEV (not
 * EIO), the counters show the error, and later timer runs log nothing more.
 */
static void test_timer_commit_failure_is_logged_once_and_reported(void **state)
{
	struct logged l = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ponyfs_options o = { .commit_ms = 20 };
	struct bdev *f = fault_image();
	char counters[1024];
	struct vfs *fs;

	util_log_set_sink(log_sink, &l);
	assert_int_equal(ponyfs_mount_image(f, &o, &fs), 0);
	assert_int_equal(make(fs, VFS_ROOT_INO, "a", NULL), 0);
	bdev_fault_vanish(f);
	usleep(300 * 1000);
	pthread_mutex_lock(&l.lock);
	assert_int_equal(l.commit_failed, 1);
	assert_int_equal(l.went_read_only, 1);
	pthread_mutex_unlock(&l.lock);
	assert_int_equal(make(fs, VFS_ROOT_INO, "b", NULL), -ENODEV);
	assert_true(VFS_CALL(fs, counters, counters, sizeof(counters)) > 0);
	assert_non_null(strstr(counters, "commit_error ENODEV"));
	usleep(200 * 1000);
	pthread_mutex_lock(&l.lock);
	assert_int_equal(l.commit_failed, 1);
	pthread_mutex_unlock(&l.lock);
	util_log_set_sink(NULL, NULL);
	vfs_free(fs);
	bdev_free(f);
}

/* A file opened before a background commit failed: its fsync reports the
 * error every time, and so does its next write. close(2) reports nothing,
 * as on ext4: ponyfs has no flush hook, so a mount sends no FLUSH. */
static void test_fsync_reports_a_background_commit_failure(void **state)
{
	struct ponyfs_options o = { .commit_ms = 20 };
	struct bdev *f = fault_image();
	uint64_t ino, fh;
	struct vfs *fs;

	util_log_set_sink(NULL, NULL);
	assert_int_equal(ponyfs_mount_image(f, &o, &fs), 0);
	assert_null(fs->ops->flush);
	assert_int_equal(test_open(fs, "a", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, "x", 1, 0), 1);
	bdev_fault_vanish(f);
	usleep(300 * 1000);
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), -ENODEV);
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), -ENODEV);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, "y", 1, 1), -ENODEV);
	VFS_CALL(fs, release, ino, fh);
	vfs_free(fs);
	bdev_free(f);
}

/* The early commit of a transaction that made 2048 names fails: the call
 * that started it gets the error, with its errno; it was not acknowledged. */
static void test_early_commit_failure_fails_the_call(void **state)
{
	struct bdev *f = fault_image();
	char name[32];
	struct vfs *fs;
	int r = 0, i;

	util_log_set_sink(NULL, NULL);
	assert_int_equal(ponyfs_mount_image(f, NULL, &fs), 0);
	for (i = 0; i < 4096 && r == 0; i++) {
		if (i == 1000)
			bdev_fault_vanish(f);
		snprintf(name, sizeof(name), "f%d", i);
		r = make(fs, VFS_ROOT_INO, name, NULL);
	}
	assert_int_equal(r, -ENODEV);
	assert_true(i < 4096);
	assert_int_equal(make(fs, VFS_ROOT_INO, "after", NULL), -ENODEV);
	vfs_free(fs);
	bdev_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_error_looking_up_a_name_is_eio),
		cmocka_unit_test(test_timer_commit_failure_is_logged_once_and_reported),
		cmocka_unit_test(test_fsync_reports_a_background_commit_failure),
		cmocka_unit_test(test_early_commit_failure_fails_the_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
