/*
 * test_dentry.c - a name's row (dentry.c) as its callers rely on it: a name
 * added under a directory that has no row fails with ENOENT and leaves no
 * row, a name already there fails with EEXIST, and a new one takes its
 * directory's next cookie. ST_DENTRY_ADD reads the cookie by a subquery
 * (a missing directory gives a NULL cookie, refused by the column's NOT
 * NULL); both refusals are SQLite constraint errors, told apart only by
 * their extended codes, so this is where a mix-up would show.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/ponyfs/internal.h"

static struct ponyfs_name plain_name(const char *s)
{
	return (struct ponyfs_name){ .bytes = (const uint8_t *)s, .len = strlen(s) };
}

static int64_t count(struct ponyfs *fs, const char *sql)
{
	int64_t n = -1;

	assert_int_equal(ponyfs_sql_int(fs, &n, sql, 0), 0);
	return n;
}

static void test_a_name_needs_its_directory_and_is_added_once(void **state)
{
	struct ponyfs_name a = plain_name("a"), b = plain_name("b");
	struct ponyfs_dentry_target t;
	struct bdev *dev;
	struct ponyfs *fs;
	struct vfs *v;
	int64_t rows, cookie;

	(void)state;
	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &v), 0);
	fs = ponyfs_of(v);
	pthread_mutex_lock(&fs->lock);
	assert_int_equal(ponyfs_txn_begin_locked(fs), 0);
	rows = count(fs, "SELECT count(*) FROM dentries");
	cookie = count(fs, "SELECT next_cookie FROM inodes WHERE ino = 1");

	/* No such directory (inode 999999 has no row): ENOENT, nothing added. */
	assert_int_equal(ponyfs_dentry_add(fs, 999999, &a, 1, 0), -ENOENT);
	assert_int_equal(count(fs, "SELECT count(*) FROM dentries"), rows);

	/* A new name in the root takes its next cookie. */
	assert_int_equal(ponyfs_dentry_add(fs, 1, &a, 1, 0), 0);
	assert_int_equal(count(fs, "SELECT count(*) FROM dentries"), rows + 1);
	assert_int_equal(count(fs, "SELECT cookie FROM dentries "
			       "WHERE parent = 1 AND name = CAST('a' AS BLOB)"),
			 cookie);
	assert_int_equal(ponyfs_dentry_get(fs, 1, &a, &t), 0);
	assert_int_equal(t.ino, 1);

	/* The same name again: EEXIST, not ENOENT, and the row is as it was. */
	assert_int_equal(ponyfs_dentry_add(fs, 1, &a, 1, 0), -EEXIST);
	assert_int_equal(count(fs, "SELECT count(*) FROM dentries"), rows + 1);

	/* The next name takes the next cookie. */
	assert_int_equal(ponyfs_dentry_add(fs, 1, &b, 1, 0), 0);
	assert_int_equal(count(fs, "SELECT cookie FROM dentries "
			       "WHERE parent = 1 AND name = CAST('b' AS BLOB)"),
			 cookie + 1);
	assert_int_equal(ponyfs_dentry_del(fs, 1, &a), 0);
	assert_int_equal(ponyfs_dentry_del(fs, 1, &b), 0);
	assert_int_equal(ponyfs_commit_locked(fs), 0);
	pthread_mutex_unlock(&fs->lock);
	vfs_free(v);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	bdev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_name_needs_its_directory_and_is_added_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
