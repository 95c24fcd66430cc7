/*
 * test_rowcache.c - the inode rows ponyfs serves from memory
 * (src/ponyfs/rowcache.c) follow every change the database sees, made by
 * whichever statement: a link's and an unlink's link count, a name made
 * in a directory (its link count and times), an inode deleted by a
 * rename over it, an ACL's mode, and a block count after the extents
 * changed under it. Each test reads the row first (so it is cached), then
 * changes it by a path that does not store it again, then reads it. A
 * directory's row is kept across a name made or removed in it (stored
 * back with the change): those tests check both the values and that the
 * read after the change was served from memory. A new inode's row knows
 * it has no xattrs until one is set, whichever way: setxattr, or an ACL
 * inherited from its directory's default ACL. An unlink's link count,
 * read with the name whether the row is cached or not, deletes the inode
 * only at the last name.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pony/ponyfs.h"
#include "pony/vfs.h"
#include "fixture.h"

static struct statx attr(struct vfs *fs, uint64_t ino, unsigned mask)
{
	struct vfs_ctx c = test_ctx();
	struct statx x;

	assert_int_equal(VFS_CALL(fs, statx, &c, ino, VFS_NO_FH, AT_STATX_DONT_SYNC, mask, &x), 0);
	return x;
}

static uint64_t ino_of(struct vfs *fs, const char *name)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e), 0);
	return e.ino;
}

/* A link and an unlink change nlink by statements of their own. */
static void test_link_counts_follow_link_and_unlink(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct ponyfs_stats s;
	struct vfs_entry e;
	uint64_t ino;

	assert_int_equal(test_put(f->fs, "f", "x", 1), 0);
	ino = ino_of(f->fs, "f");
	assert_int_equal(attr(f->fs, ino, STATX_NLINK).stx_nlink, 1);
	ponyfs_get_stats(f->fs, &s);
	assert_true(s.row_hits > 0);            /* the cache is in use */
	assert_int_equal(VFS_CALL(f->fs, link, &c, ino, VFS_ROOT_INO, "g", &e), 0);
	assert_int_equal(e.attr.stx_nlink, 2);  /* the link's own answer */
	assert_int_equal(attr(f->fs, ino, STATX_NLINK).stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "g"), 0);
	assert_int_equal(attr(f->fs, ino, STATX_NLINK).stx_nlink, 1);
}

static int64_t ns(struct statx_timestamp t)
{
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Changes of a directory's names, by the name they make or remove in it. */
static int mkdir_s(struct vfs *fs, uint64_t dir)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;

	return VFS_CALL(fs, mkdir, &c, dir, "s", 0755, &e);
}

static int rmdir_s(struct vfs *fs, uint64_t dir)
{
	struct vfs_ctx c = test_ctx();

	return VFS_CALL(fs, rmdir, &c, dir, "s");
}

static int unlink_f(struct vfs *fs, uint64_t dir)
{
	struct vfs_ctx c = test_ctx();

	return VFS_CALL(fs, unlink, &c, dir, "f");
}

/* dir's attributes after change(dir): its mtime and ctime moved, and the
 * read after the change served from memory (the row kept, with the
 * change: what the kernel's GETATTR of the directory after each unlink
 * of an rm -rf or create of an untar costs). */
static struct statx changed(struct fixture *f, uint64_t dir, int (*change)(struct vfs *, uint64_t))
{
	struct statx before = attr(f->fs, dir, STATX_BASIC_STATS), after;
	struct ponyfs_stats s0, s1;

	usleep(2000);
	ponyfs_get_stats(f->fs, &s0);
	assert_int_equal(change(f->fs, dir), 0);
	after = attr(f->fs, dir, STATX_BASIC_STATS);
	ponyfs_get_stats(f->fs, &s1);
	assert_int_equal(s1.row_misses, s0.row_misses);
	assert_true(ns(after.stx_mtime) > ns(before.stx_mtime));
	assert_true(ns(after.stx_ctime) > ns(before.stx_ctime));
	return after;
}

/* A name made in a directory moves its link count and times. */
static void test_directory_row_follows_a_name_made_in_it(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(attr(f->fs, d.ino, STATX_NLINK).stx_nlink, 2);
	assert_int_equal(changed(f, d.ino, mkdir_s).stx_nlink, 3);
}

/* A name removed from a directory (an rmdir, an unlink) moves its times
 * and, for a directory, its link count. */
static void test_directory_row_follows_a_name_removed_from_it(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d, e;
	struct statx after;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, d.ino, "s", 0755, &e), 0);
	assert_int_equal(test_put(f->fs, "d/f", "x", 1), 0);
	assert_int_equal(attr(f->fs, d.ino, STATX_NLINK).stx_nlink, 3);
	assert_int_equal(changed(f, d.ino, rmdir_s).stx_nlink, 2);
	after = changed(f, d.ino, unlink_f);
	assert_int_equal(after.stx_nlink, 2);
	/* What memory served is what the database holds: a fresh mount reads it. */
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	remount(f);
	assert_int_equal(attr(f->fs, d.ino, STATX_NLINK).stx_nlink, 2);
	assert_int_equal(ns(attr(f->fs, d.ino, STATX_MTIME).stx_mtime), ns(after.stx_mtime));
}

/* A directory's block count stays cached (a directory has no extents)
 * while a file's extents change: written back, then deleted. */
static void test_directory_blocks_outlive_a_file_s_extents(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	static uint8_t w[40000];
	struct ponyfs_stats s0, s1;
	struct vfs_entry d;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(attr(f->fs, d.ino, STATX_BLOCKS).stx_blocks, 0);
	assert_int_equal(test_put(f->fs, "d/f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	ponyfs_get_stats(f->fs, &s0);
	assert_int_equal(attr(f->fs, d.ino, STATX_BLOCKS).stx_blocks, 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, d.ino, "f"), 0);
	assert_int_equal(attr(f->fs, d.ino, STATX_BLOCKS).stx_blocks, 0);
	ponyfs_get_stats(f->fs, &s1);
	assert_int_equal(s1.row_misses, s0.row_misses);
	assert_int_equal(s1.blocks_cached, s0.blocks_cached + 2);
}

/* The file a rename replaced is gone, not served from memory. */
static void test_inode_replaced_by_a_rename_is_gone(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct statx x;
	uint64_t old;

	assert_int_equal(test_put(f->fs, "a", "new", 3), 0);
	assert_int_equal(test_put(f->fs, "b", "old", 3), 0);
	old = ino_of(f->fs, "b");
	assert_int_equal(attr(f->fs, old, STATX_SIZE).stx_size, 3);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "a", VFS_ROOT_INO, "b", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, statx, &c, old, VFS_NO_FH, AT_STATX_DONT_SYNC,
				  STATX_SIZE, &x), -ENOENT);
}

/* An access ACL sets the mode's group bits by a statement of acl.c. */
static void test_mode_follows_an_access_acl(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	/* user::rw- group::--- other::--- in the xattr's wire format */
	static const uint8_t acl[] = {
		2, 0, 0, 0,
		1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
		0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	};
	uint64_t ino;

	assert_int_equal(test_put(f->fs, "f", "x", 1), 0);
	ino = ino_of(f->fs, "f");
	assert_int_equal(attr(f->fs, ino, STATX_MODE).stx_mode & 0777, 0644);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, ino, "system.posix_acl_access", acl,
				  sizeof(acl), 0), 0);
	assert_int_equal(attr(f->fs, ino, STATX_MODE).stx_mode & 0777, 0600);
}

/* st_blocks after the extents changed: written back, then truncated away.
 * Each of these writebacks also updates the inode's row, so the update
 * hook alone keeps this right: no path found changes extents without the
 * row, and the extents epoch (rowcache.c) is the guard for one that would. */
static void test_blocks_follow_the_extents(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr a = { .valid = VFS_SET_SIZE, .size = 0 };
	static uint8_t w[40000];
	struct statx x;
	uint64_t ino;

	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	ino = ino_of(f->fs, "f");
	assert_int_equal(attr(f->fs, ino, STATX_BLOCKS).stx_blocks, 10 * 8);
	assert_int_equal(attr(f->fs, ino, STATX_BLOCKS).stx_blocks, 10 * 8);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(attr(f->fs, ino, STATX_BLOCKS).stx_blocks, 0);
}

/* user::rw- user:1000:r-- group::--- mask::r-- other::--- in the xattr's
 * wire format: not equivalent to a mode, so a file made under it as a
 * default ACL gets an access ACL of its own. */
static const uint8_t acl_named[] = {
	2, 0, 0, 0,
	1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	2, 0, 4, 0, 0xe8, 0x03, 0, 0,
	4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

/* A new file has no xattrs (its cached row says so) until one is set. */
static void test_a_new_file_s_xattr_is_read_back_once_set(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	char v[8];
	uint64_t ino;

	assert_int_equal(test_put(f->fs, "f", "x", 1), 0);
	ino = ino_of(f->fs, "f");
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, ino, "user.a", v, sizeof(v)), -ENODATA);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, ino, "user.a", "val", 3, 0), 0);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, ino, "user.a", v, sizeof(v)), 3);
	assert_memory_equal(v, "val", 3);
	assert_int_equal(VFS_CALL(f->fs, removexattr, &c, ino, "user.a"), 0);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, ino, "user.a", v, sizeof(v)), -ENODATA);
}

/* An unlink reads the link count with the name (a join of the inode's
 * row), the same whether the row is cached (f: read just before, as an
 * rm -rf's readdirplus does) or not (h: the row dropped by the unlink of
 * its other name). One name of two gone leaves the inode and its xattrs;
 * the last deletes both, the row never updated before it goes (fsck at
 * teardown finds no xattrs left behind). */
static void test_unlinks_count_links_whether_the_row_is_cached_or_not(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	const char *names[] = { "f", "h" };
	struct vfs_entry e;
	struct statx x;
	char v[8];

	for (int i = 0; i < 2; i++) {
		uint64_t ino;

		assert_int_equal(test_put(f->fs, names[i], "x", 1), 0);
		ino = ino_of(f->fs, names[i]);
		assert_int_equal(VFS_CALL(f->fs, setxattr, &c, ino, "user.a", "val", 3, 0), 0);
		assert_int_equal(VFS_CALL(f->fs, link, &c, ino, VFS_ROOT_INO, "g", &e), 0);
		assert_int_equal(attr(f->fs, ino, STATX_NLINK).stx_nlink, 2);
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "g"), 0);
		if (i == 0) {
			assert_int_equal(attr(f->fs, ino, STATX_NLINK).stx_nlink, 1);
			assert_int_equal(VFS_CALL(f->fs, getxattr, &c, ino, "user.a", v, sizeof(v)),
					 3);
		}
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, names[i]), 0);
		assert_int_equal(VFS_CALL(f->fs, statx, &c, ino, VFS_NO_FH, AT_STATX_DONT_SYNC,
					  STATX_NLINK, &x), -ENOENT);
	}
}

/* A directory made here gets a default ACL; a file made in it inherits
 * its access ACL (acl.c writes it after the create cached the row). */
static void test_a_file_made_under_a_default_acl_has_an_access_acl(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d, e;
	uint8_t v[64];
	uint64_t fh;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, d.ino, "system.posix_acl_default", v,
				  sizeof(v)), -ENODATA);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, d.ino, "system.posix_acl_default",
				  acl_named, sizeof(acl_named), 0), 0);
	assert_int_equal(VFS_CALL(f->fs, create, &c, d.ino, "f", 0666, O_CREAT | O_WRONLY, &e, &fh),
			 0);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, e.ino, "system.posix_acl_access", v,
				  sizeof(v)), (int)sizeof(acl_named));
	assert_int_equal(attr(f->fs, e.ino, STATX_MODE).stx_mode & 0777, 0640);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_link_counts_follow_link_and_unlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_row_follows_a_name_made_in_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_directory_row_follows_a_name_removed_from_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_blocks_outlive_a_file_s_extents, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_inode_replaced_by_a_rename_is_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_follows_an_access_acl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocks_follow_the_extents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_new_file_s_xattr_is_read_back_once_set, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unlinks_count_links_whether_the_row_is_cached_or_not,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_file_made_under_a_default_acl_has_an_access_acl,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
