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

/* An instance that records the forgets it gets, one way or the other. */
struct forget_rec {
	struct vfs fs;
	unsigned singles, batches;
	uint64_t dropped;               /* sum of ino * nlookup: what went where */
};

static void rec_forget(struct vfs *fs, uint64_t ino, uint64_t nlookup)
{
	struct forget_rec *r = (struct forget_rec *)fs;

	r->singles++;
	r->dropped += ino * nlookup;
}

static void rec_forget_multi(struct vfs *fs, const struct vfs_forget *items, size_t n)
{
	struct forget_rec *r = (struct forget_rec *)fs;

	r->batches++;
	for (size_t i = 0; i < n; i++)
		r->dropped += items[i].ino * items[i].nlookup;
}

static const struct vfs_ops single_ops = {
	.version = VFS_OPS_VERSION, .name = "single", .forget = rec_forget,
};
static const struct vfs_ops batch_ops = {
	.version = VFS_OPS_VERSION, .name = "batch", .forget = rec_forget,
	.forget_multi = rec_forget_multi,
};

static void test_forget_many_takes_one_call_where_the_instance_can(void **state)
{
	const struct vfs_forget items[] = { { 2, 1 }, { 3, 4 }, { 7, 2 } };
	struct forget_rec single = { .fs.ops = &single_ops }, batch = { .fs.ops = &batch_ops };
	struct vfs none = { .ops = &empty_ops };

	vfs_forget_many(&single.fs, items, 3);
	assert_int_equal(single.singles, 3);
	assert_int_equal(single.dropped, 2 + 12 + 14);
	vfs_forget_many(&batch.fs, items, 3);
	assert_int_equal(batch.batches, 1);
	assert_int_equal(batch.singles, 0);
	assert_int_equal(batch.dropped, 2 + 12 + 14);
	vfs_forget_many(&none, items, 3); /* no hook at all: nothing happens */
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
		cmocka_unit_test(test_forget_many_takes_one_call_where_the_instance_can),
		cmocka_unit_test(test_walk_finds_and_refuses_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
