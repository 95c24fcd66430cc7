/*
 * test_vfs.c - the shared vfs helpers: names are checked the same way for
 * every instance, a NULL hook is -EOPNOTSUPP, and a path walk finds and
 * refuses what it should.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pony/hostfs.h"
#include "pony/vfs.h"

static void test_names_are_checked_once_for_all(void **state)
{
	char longname[NAME_MAX + 2];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(vfs_check_name("ok"), 0);
	assert_int_equal(vfs_check_name(""), -EINVAL);
	assert_int_equal(vfs_check_name("."), -EINVAL);
	assert_int_equal(vfs_check_name(".."), -EINVAL);
	assert_int_equal(vfs_check_name("a/b"), -EINVAL);
	assert_int_equal(vfs_check_name(longname), -ENAMETOOLONG);
	longname[NAME_MAX] = '\0';
	assert_int_equal(vfs_check_name(longname), 0);
}

static const struct vfs_ops empty_ops = { .version = VFS_OPS_VERSION, .name = "empty" };

static void test_a_null_hook_is_eopnotsupp(void **state)
{
	struct vfs fs = { .ops = &empty_ops };
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(&fs, lookup, NULL, VFS_ROOT_INO, "x", &e), -EOPNOTSUPP);
	assert_int_equal(VFS_CALL(&fs, syncfs), -EOPNOTSUPP);
	VFS_FORGET(&fs, 5, 1); /* no hook: nothing happens */
	assert_int_equal(vfs_mode_to_dt(S_IFDIR | 0755), 4);
}

static void test_walk_finds_and_refuses_paths(void **state)
{
	struct vfs *fs;
	struct vfs_ctx ctx;
	struct vfs_entry e;

	vfs_ctx_self(&ctx);
	assert_int_equal(hostfs_new("/usr", HOSTFS_READONLY, &fs), 0);
	assert_int_equal(vfs_walk(fs, &ctx, "bin/env", &e), 0);
	assert_true(S_ISREG(e.attr.stx_mode) || S_ISLNK(e.attr.stx_mode));
	VFS_FORGET(fs, e.ino, 1);
	assert_int_equal(vfs_walk(fs, &ctx, "/", &e), 0);
	assert_int_equal(e.ino, VFS_ROOT_INO);
	assert_int_equal(vfs_walk(fs, &ctx, "bin/nonexistent-pony", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, &ctx, "bin/env/x", &e), -ENOTDIR);
	vfs_free(fs);
	vfs_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_are_checked_once_for_all),
		cmocka_unit_test(test_a_null_hook_is_eopnotsupp),
		cmocka_unit_test(test_walk_finds_and_refuses_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
