/*
 * test_ponyfs.c - ponyfs through its vfs ops table on a memory bdev: files
 * survive a remount; names, links, renames and readdir cookies behave as
 * POSIX and the vfs contract say; statx computes blocks only when asked;
 * xattrs, statfs, punch hole, sparse files past 4 GiB, O_APPEND and
 * open-unlinked files work; a corrupt block reads as -EBADMSG; a full
 * filesystem says ENOSPC and stays consistent; bad images are refused.
 */
#include <linux/falloc.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <cmocka.h>

#include "fixture.h"
#include "pony/util.h"

static void test_files_survive_remount(void **state)
{
	struct fixture *f = *state;
	static uint8_t w[300000], r[300001];

	test_fill(w, sizeof(w), 1);
	assert_int_equal(test_put(f->fs, "big", w, sizeof(w)), 0);
	assert_int_equal(test_put(f->fs, "small", "hello", 5), 0);
	remount(f);
	assert_int_equal(test_get(f->fs, "big", r, sizeof(r)), sizeof(w));
	assert_memory_equal(w, r, sizeof(w));
	assert_int_equal(test_get(f->fs, "small", r, sizeof(r)), 5);
	assert_memory_equal(r, "hello", 5);
	/* Overwrite the middle: copy-on-write keeps the rest. */
	{
		uint64_t ino, fh;

		assert_int_equal(test_open(f->fs, "big", O_WRONLY, &ino, &fh), 0);
		assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "XYZ", 3, 5000), 3);
		assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
		memcpy(w + 5000, "XYZ", 3);
	}
	remount(f);
	assert_int_equal(test_get(f->fs, "big", r, sizeof(r)), sizeof(w));
	assert_memory_equal(w, r, sizeof(w));
}

static void test_names_links_and_renames_follow_posix(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry d, e, l;
	char buf[64];

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &d), 0);
	assert_int_equal(d.attr.stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &e), -EEXIST);
	assert_int_equal(test_put(f->fs, "d/f", "one", 3), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, d.ino, "f", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, link, &c, e.ino, VFS_ROOT_INO, "g", &l), 0);
	assert_int_equal(l.attr.stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, symlink, &c, "d/f", VFS_ROOT_INO, "s", &l), 0);
	assert_int_equal(VFS_CALL(f->fs, readlink, &c, l.ino, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "d/f", 3);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &c, VFS_ROOT_INO, "d"), -ENOTEMPTY);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "d"), -EISDIR);
	/* The errors a lookup or removal of a missing name gives, told apart. */
	{
		char long_name[NAME_MAX + 2];

		memset(long_name, 'n', sizeof(long_name) - 1);
		long_name[sizeof(long_name) - 1] = '\0';
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "nothing"), -ENOENT);
		assert_int_equal(VFS_CALL(f->fs, rmdir, &c, VFS_ROOT_INO, "nothing"), -ENOENT);
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, e.ino, "x"), -ENOTDIR);
		assert_int_equal(VFS_CALL(f->fs, rmdir, &c, e.ino, "x"), -ENOTDIR);
		assert_int_equal(VFS_CALL(f->fs, lookup, &c, e.ino, "x", &l), -ENOTDIR);
		assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "nothing", &l), -ENOENT);
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, long_name), -ENAMETOOLONG);
		assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, long_name, &l),
				 -ENAMETOOLONG);
		assert_int_equal(VFS_CALL(f->fs, rmdir, &c, VFS_ROOT_INO, "g"), -ENOTDIR);
		/* And a name that is taken, or a parent that is no directory. */
		assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "g", 0755, &l), -EEXIST);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &l), -EEXIST);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &c, e.ino, "x", 0755, &l), -ENOTDIR);
		assert_int_equal(VFS_CALL(f->fs, symlink, &c, "t", e.ino, "x", &l), -ENOTDIR);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, long_name, 0755, &l),
				 -ENAMETOOLONG);
	}
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "g", d.ino, "f", RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(test_put(f->fs, "h", "two", 3), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "h", d.ino, "f", RENAME_EXCHANGE), 0);
	assert_int_equal(test_get(f->fs, "d/f", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "two", 3);
	assert_int_equal(test_get(f->fs, "h", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "one", 3);
	/* Replacing over "g" (a link to "h" now... no: to the old d/f, now "h"). */
	assert_int_equal(VFS_CALL(f->fs, rename, &c, d.ino, "f", VFS_ROOT_INO, "g", 0), 0);
	assert_int_equal(test_get(f->fs, "g", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "two", 3);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "h", &e), 0);
	assert_int_equal(e.attr.stx_nlink, 1);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, d.ino, "sub", 0755, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "d", e.ino, "x", 0), -EINVAL);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "d", &d), 0);
	assert_int_equal(d.attr.stx_nlink, 3);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, d.ino, "sub", VFS_ROOT_INO, "sub", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "d", &d), 0);
	assert_int_equal(d.attr.stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &c, VFS_ROOT_INO, "d"), 0);
	{
		char longname[300];

		memset(longname, 'n', 256);
		longname[256] = 0;
		assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, longname, 0755, &e), -ENAMETOOLONG);
	}
	remount(f);
	assert_int_equal(test_get(f->fs, "g", buf, sizeof(buf)), 3);
	assert_int_equal(test_get(f->fs, "d/f", buf, sizeof(buf)), -ENOENT);
}

struct seen { char names[64][16]; uint64_t cookies[64], ino[64]; int n, stop_after; };

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct seen *s = data;

	if (s->stop_after && s->n == s->stop_after)
		return 1;
	snprintf(s->names[s->n], 16, "%s", name);
	s->ino[s->n] = ino;
	s->cookies[s->n++] = next;
	return 0;
}

static void test_readdir_cookies_are_stable_across_changes(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct seen a = { .stop_after = 7 }, b = { 0 };
	char name[16];

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		assert_int_equal(test_put(f->fs, name, "x", 1), 0);
	}
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, VFS_ROOT_INO, 0, 0, collect, &a), 0);
	assert_int_equal(a.n, 7);               /* ".", "..", f00..f04 */
	assert_string_equal(a.names[0], ".");
	assert_string_equal(a.names[6], "f04");
	/* Remove an entry already seen and one not yet seen; add one. */
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "f01"), 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "f10"), 0);
	assert_int_equal(test_put(f->fs, "new", "y", 1), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, VFS_ROOT_INO, 0, a.cookies[6], collect, &b), 0);
	assert_int_equal(b.n, 15 - 1 + 1);      /* f05..f19 without f10, plus new */
	assert_string_equal(b.names[0], "f05");
	for (int i = 0; i < b.n; i++)
		assert_string_not_equal(b.names[i], "f10");
	assert_string_equal(b.names[b.n - 1], "new");
}

/* ".." names the parent whether a listing starts at cookie 0 or resumes at
 * 1, and a batch from cookie 2 on has none (its parent is not looked up). */
static void test_readdir_dotdot_from_any_cookie(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct seen s0 = { 0 }, s1 = { 0 }, s2 = { 0 };
	struct vfs_entry a, b, e;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "a", 0755, &a), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, a.ino, "b", 0755, &b), 0);
	assert_int_equal(VFS_CALL(f->fs, mknod, &c, b.ino, "f", S_IFREG | 0644, 0, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, b.ino, 0, 0, collect, &s0), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, b.ino, 0, 1, collect, &s1), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, b.ino, 0, 2, collect, &s2), 0);
	assert_int_equal(s0.n, 3);
	assert_string_equal(s0.names[1], "..");
	assert_int_equal(s0.ino[0], b.ino);
	assert_int_equal(s0.ino[1], a.ino);
	assert_int_equal(s1.n, 2);
	assert_string_equal(s1.names[0], "..");
	assert_int_equal(s1.ino[0], a.ino);
	assert_int_equal(s2.n, 1);
	assert_string_equal(s2.names[0], "f");
	assert_int_equal(s2.ino[0], e.ino);
}

static void test_statx_computes_blocks_only_when_asked(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct ponyfs_stats s0, s1;
	struct vfs_entry e;
	struct statx x;
	static uint8_t w[40000];

	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "f", &e), 0);
	ponyfs_get_stats(f->fs, &s0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(VFS_CALL(f->fs, statx, &c, e.ino, VFS_NO_FH, AT_STATX_DONT_SYNC,
					  STATX_SIZE | STATX_MTIME, &x), 0);
	ponyfs_get_stats(f->fs, &s1);
	assert_int_equal(x.stx_size, sizeof(w));
	assert_false(x.stx_mask & STATX_BLOCKS);
	assert_int_equal(s1.extent_walks, s0.extent_walks);
	assert_int_equal(s1.commits, s0.commits);       /* DONT_SYNC: nothing flushed */
	assert_int_equal(VFS_CALL(f->fs, statx, &c, e.ino, VFS_NO_FH, 0, STATX_BLOCKS, &x), 0);
	ponyfs_get_stats(f->fs, &s1);
	/* Counted by a walk, or kept from the lookup's walk (rowcache.c). */
	assert_int_equal(s1.extent_walks + s1.blocks_cached, s0.extent_walks + s0.blocks_cached + 1);
	assert_int_equal(x.stx_blocks, DIV_ROUND_UP(sizeof(w), 4096) * 8);
}

static void test_setattr_sets_modes_owners_times_and_size(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr a = { .valid = VFS_SET_MODE | VFS_SET_UID | VFS_SET_GID | VFS_SET_MTIME |
				 VFS_SET_ATIME | VFS_SET_SIZE,
				 .mode = 0600, .uid = 1234, .gid = 5678, .size = 10,
				 .mtime = { 1000000000, 123456789 }, .atime = { 5, 6 } };
	struct vfs_entry e;
	struct statx x;
	char buf[32];

	assert_int_equal(test_put(f->fs, "f", "0123456789abcdef", 16), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "f", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, e.ino, VFS_NO_FH, &a, &x), 0);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, statx, &c, e.ino, VFS_NO_FH, 0, STATX_BASIC_STATS, &x), 0);
	assert_int_equal(x.stx_mode, S_IFREG | 0600);
	assert_int_equal(x.stx_uid, 1234);
	assert_int_equal(x.stx_gid, 5678);
	assert_int_equal(x.stx_size, 10);
	assert_int_equal(x.stx_mtime.tv_sec, 1000000000);
	assert_int_equal(x.stx_mtime.tv_nsec, 123456789);
	assert_int_equal(x.stx_atime.tv_nsec, 6);
	assert_int_equal(test_get(f->fs, "f", buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "0123456789", 10);
}

static void test_xattrs_round_trip_with_create_and_replace(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	char buf[64];

	assert_int_equal(test_put(f->fs, "f", "x", 1), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "f", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, e.ino, "user.a", "va", 2, XATTR_REPLACE), -ENODATA);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, e.ino, "user.a", "va", 2, XATTR_CREATE), 0);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, e.ino, "user.a", "vb", 2, XATTR_CREATE), -EEXIST);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, e.ino, "user.b", "", 0, 0), 0);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, e.ino, "user.a", NULL, 0), 2);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, e.ino, "user.a", buf, 1), -ERANGE);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, e.ino, "user.a", buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "va", 2);
	assert_int_equal(VFS_CALL(f->fs, listxattr, &c, e.ino, buf, sizeof(buf)), 14);
	assert_memory_equal(buf, "user.a\0user.b\0", 14);
	assert_int_equal(VFS_CALL(f->fs, removexattr, &c, e.ino, "user.a"), 0);
	assert_int_equal(VFS_CALL(f->fs, removexattr, &c, e.ino, "user.a"), -ENODATA);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &c, e.ino, "user.b", buf, sizeof(buf)), 0);
}

/* f_bavail is what file data can take; f_bfree counts the database's room
 * left too, so metadata in use shows as used; inodes drop as files come. */
static void test_statfs_tells_the_truth_about_space(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct statvfs s0, s1, s2;
	static uint8_t w[1 << 20];

	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s0), 0);
	assert_true(s0.f_bfree > s0.f_bavail);
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s1), 0);
	assert_int_equal(s0.f_bavail - s1.f_bavail, 256);
	assert_in_range(s0.f_bfree - s1.f_bfree, 256, 256 + 4);
	assert_int_equal(s1.f_files - s1.f_ffree, s0.f_files - s0.f_ffree + 1);
	assert_true(s1.f_ffree < s0.f_ffree);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "f"), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s2), 0);
	assert_int_equal(s2.f_bavail, s0.f_bavail);
	assert_int_equal(s2.f_files - s2.f_ffree, s0.f_files - s0.f_ffree);
	assert_int_equal(s0.f_namemax, 255);
}

/*
 * A delete takes a file's extents in batches of 512, the last first, each
 * read by one statement: files of none, exactly one batch and two batches
 * and some (every other block written, so no two extents merge) give all
 * their blocks back, and fsck at teardown finds no extent left behind.
 */
static void test_unlink_frees_every_batch_of_extents(void **state)
{
	static const unsigned counts[] = { 0, 1, 512, 1100 };
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct statvfs s0, s1, s2;
	uint8_t block[4096];
	uint64_t ino, fh;

	test_fill(block, sizeof(block), 7);
	for (size_t k = 0; k < ARRAY_SIZE(counts); k++) {
		assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s0), 0);
		assert_int_equal(test_open(f->fs, "sparse", O_CREAT | O_WRONLY, &ino, &fh), 0);
		for (unsigned i = 0; i < counts[k]; i++)
			assert_int_equal(VFS_CALL(f->fs, write, ino, fh, block, sizeof(block),
						  (off_t)(2 * i) * 4096), (ssize_t)sizeof(block));
		assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
		assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
		assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s1), 0);
		assert_int_equal(s0.f_bavail - s1.f_bavail, counts[k]);
		assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "sparse"), 0);
		assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
		assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s2), 0);
		assert_int_equal(s2.f_bavail, s0.f_bavail);
	}
}

static void test_punch_hole_frees_blocks_and_reads_zeros(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	uint8_t w[5 * 4096], r[5 * 4096], z[3 * 4096 + 100] = { 0 };
	uint64_t ino, fh;
	struct statx x;

	test_fill(w, sizeof(w), 3);
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(test_open(f->fs, "f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  4000, 3 * 4096 + 100), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh, FALLOC_FL_PUNCH_HOLE, 0, 1), -EOPNOTSUPP);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	remount(f);
	assert_int_equal(test_get(f->fs, "f", r, sizeof(r)), sizeof(w));
	assert_memory_equal(r, w, 4000);
	assert_memory_equal(r + 4000, z, sizeof(z));
	assert_memory_equal(r + 4000 + sizeof(z), w + 4000 + sizeof(z), sizeof(w) - 4000 - sizeof(z));
	assert_int_equal(VFS_CALL(f->fs, statx, &c, ino, VFS_NO_FH, 0, STATX_BLOCKS, &x), 0);
	assert_int_equal(x.stx_blocks, 2 * 8);  /* blocks 1 to 3 are holes now */
}

static void test_sparse_files_past_4gib(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	uint64_t ino, fh, off = 5ull << 30;
	uint8_t w[8192], r[8192], z[8192] = { 0 };
	struct statx x;

	test_fill(w, sizeof(w), 9);
	assert_int_equal(test_open(f->fs, "sparse", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w, sizeof(w), (off_t)off), sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, statx, &c, ino, VFS_NO_FH, 0, STATX_SIZE | STATX_BLOCKS, &x), 0);
	assert_int_equal(x.stx_size, off + sizeof(w));
	assert_int_equal(x.stx_blocks, 16);
	assert_int_equal(test_open(f->fs, "sparse", O_RDONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), (off_t)off), sizeof(w));
	assert_memory_equal(r, w, sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 3ll << 30), sizeof(r));
	assert_memory_equal(r, z, sizeof(z));
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
}

static void test_o_append_writes_at_the_end(void **state)
{
	struct fixture *f = *state;
	uint64_t ino, fh;
	char r[16];

	assert_int_equal(test_put(f->fs, "log", "abc", 3), 0);
	assert_int_equal(test_open(f->fs, "log", O_WRONLY | O_APPEND, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "de", 2, 0), 2);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "fg", 2, 1), 2);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(test_get(f->fs, "log", r, sizeof(r)), 7);
	assert_memory_equal(r, "abcdefg", 7);
}

static void test_open_unlinked_file_lives_until_release(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	uint64_t ino = 0, fh = 0, ino2 = 0, fh2 = 0;
	struct statvfs s0, s1;
	static uint8_t w[100000], r[100000];

	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s0), 0);
	test_fill(w, sizeof(w), 4);
	assert_int_equal(test_open(f->fs, "tmp", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w, sizeof(w), 0), sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "tmp"), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 0), sizeof(r));
	assert_memory_equal(r, w, sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s1), 0);
	assert_int_equal(s1.f_bavail, s0.f_bavail);
	/* Renamed over while open: the same, at its last release. */
	assert_int_equal(test_open(f->fs, "old", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w, sizeof(w), 0), sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(test_put(f->fs, "new", "n", 1), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "new", VFS_ROOT_INO, "old", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, r, sizeof(r), 0), sizeof(r));
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "old"), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s1), 0);
	assert_int_equal(s1.f_bavail, s0.f_bavail);
	/* Unlinked while open when the filesystem goes away: gone at the next mount. */
	assert_int_equal(test_open(f->fs, "tmp2", O_CREAT | O_RDWR, &ino2, &fh2), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino2, fh2, w, sizeof(w), 0), sizeof(w));
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "tmp2"), 0);
	vfs_free(f->fs);        /* the handle is never released: tmp2 is an orphan */
	assert_int_equal(ponyfs_fsck_image(f->dev, PONYFS_FSCK_DATA, NULL, NULL), 1);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &s1), 0);
	assert_int_equal(s1.f_bavail, s0.f_bavail);
}

static void test_corrupt_block_reads_as_ebadmsg(void **state)
{
	struct fixture *f = *state;
	static uint8_t w[3 * 4096], r[3 * 4096];
	struct vfs_extent ext;
	struct vfs_entry e;
	struct vfs_ctx c = test_ctx();
	struct ponyfs_stats st;
	uint8_t junk[512];
	uint64_t data_start;

	test_fill(w, sizeof(w), 5);
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, "f", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, layout, e.ino, 0, sizeof(w), &ext, 1), 1);
	assert_int_equal(ext.length, sizeof(w));
	vfs_free(f->fs);
	data_start = IMG_SIZE / 16 < (4u << 20) ? (4u << 20) : IMG_SIZE / 16;
	memset(junk, 0xee, sizeof(junk));
	assert_int_equal(bdev_pwrite(f->dev, junk, sizeof(junk), data_start + ext.device_offset + 4096), 0);
	assert_true(ponyfs_fsck_image(f->dev, PONYFS_FSCK_DATA, NULL, NULL) == 1);
	assert_int_equal(ponyfs_fsck_image(f->dev, 0, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	assert_int_equal(test_get(f->fs, "f", r, 4096), 4096);     /* block 0 is fine */
	assert_int_equal(test_get(f->fs, "f", r, sizeof(r)), -EBADMSG);
	ponyfs_get_stats(f->fs, &st);
	assert_int_equal(st.csum_errors, 1);
	/* Rewriting the file heals it. */
	assert_int_equal(test_put(f->fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
}

static void test_full_filesystem_is_enospc_and_consistent(void **state)
{
	struct bdev *dev;
	struct vfs *fs;
	static uint8_t w[1 << 20], r[1 << 20];
	char name[16];
	int i, rr = 0;

	assert_int_equal(bdev_mem_new(12u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	for (i = 0; i < 20 && rr >= 0; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		test_fill(w, sizeof(w), (unsigned)i);
		rr = test_put(fs, name, w, sizeof(w));
	}
	/* The write that hit the end was short (test_put's -EIO) or ENOSPC
	 * at once; either way the next write of anything is ENOSPC. */
	assert_true(rr == -ENOSPC || rr == -EIO);
	assert_int_equal(test_put(fs, "one-more", "x", 1), -ENOSPC);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	vfs_free(fs);
	check_clean(dev);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	for (int k = 0; k < i - 1; k++) {
		snprintf(name, sizeof(name), "f%d", k);
		test_fill(w, sizeof(w), (unsigned)k);
		assert_int_equal(test_get(fs, name, r, sizeof(r)), sizeof(w));
		assert_memory_equal(r, w, sizeof(w));
	}
	vfs_free(fs);
	bdev_free(dev);
}

static void test_bad_images_are_refused(void **state)
{
	struct bdev *dev;
	struct vfs *fs;
	uint64_t db_off;
	uint8_t b[512];

	assert_int_equal(bdev_mem_new(16u << 20, &dev), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), -EINVAL);      /* not a ponyfs */
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(bdev_pread(dev, b, sizeof(b), 0), 0);
	b[0x40] ^= 1;                                   /* data_blocks, crc now wrong */
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), 0), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), -EUCLEAN);
	b[0x40] ^= 1;
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), 0), 0);
	/* Both copies of the chunk table destroyed: refused, nothing guessed. */
	assert_int_equal(bdev_pread(dev, b, sizeof(b), 0), 0);
	db_off = util_get_le64(b + 0x78);
	assert_int_equal(db_off, 3 * 4096);
	memset(b, 0x5a, sizeof(b));
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), 4096), 0);
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), 8192), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), -EUCLEAN);
	/* The database destroyed: refused, not crashed. */
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(bdev_pwrite(dev, b, sizeof(b), db_off), 0);
	assert_true(ponyfs_mount_image(dev, NULL, &fs) < 0);
	bdev_free(dev);
	assert_int_equal(bdev_mem_new(1u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), -ENOSPC);
	bdev_free(dev);
}

struct plus_seen {
	struct vfs *fs;
	unsigned entries, dots;
};

/* e as some call gave it against lookup() of its name, field by field. */
static void same_as_lookup(struct vfs *fs, const char *name, const struct vfs_entry *e)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry l;

	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &l), 0);
	assert_int_equal(e->ino, l.ino);
	assert_int_equal(e->attr.stx_ino, l.attr.stx_ino);
	assert_int_equal(e->attr.stx_mode, l.attr.stx_mode);
	assert_int_equal(e->attr.stx_nlink, l.attr.stx_nlink);
	assert_int_equal(e->attr.stx_uid, l.attr.stx_uid);
	assert_int_equal(e->attr.stx_size, l.attr.stx_size);
	assert_int_equal(e->attr.stx_blocks, l.attr.stx_blocks);
	assert_true(e->attr.stx_mask & STATX_BLOCKS);
	assert_int_equal(e->attr.stx_mtime.tv_sec, l.attr.stx_mtime.tv_sec);
	assert_int_equal(e->attr.stx_mtime.tv_nsec, l.attr.stx_mtime.tv_nsec);
	assert_int_equal(e->attr.stx_ctime.tv_nsec, l.attr.stx_ctime.tv_nsec);
	assert_int_equal(e->attr.stx_atime.tv_nsec, l.attr.stx_atime.tv_nsec);
	assert_int_equal(e->attr.stx_rdev_major, l.attr.stx_rdev_major);
	assert_int_equal(e->attr.stx_gid, l.attr.stx_gid);
	assert_int_equal(e->attr.stx_btime.tv_nsec, l.attr.stx_btime.tv_nsec);
	VFS_FORGET(fs, l.ino, 1);
}

static int compare_with_lookup(void *data, const char *name, const struct vfs_entry *e,
			       uint64_t next)
{
	struct plus_seen *p = data;

	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		assert_true(S_ISDIR(e->attr.stx_mode));
		p->dots++;
		return 0;
	}
	same_as_lookup(p->fs, name, e);
	VFS_FORGET(p->fs, e->ino, 1);
	p->entries++;
	return 0;
}

/*
 * readdirplus answers in one pass what a lookup per entry would: files
 * written back and still cached (size, times and blocks not in the
 * database yet), a directory, a symlink, a device. FUSE's READDIRPLUS
 * takes these instead of looking every entry up.
 */
static void test_readdirplus_and_creates_give_what_lookup_gives(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct plus_seen p = { .fs = f->fs };
	static uint8_t w[70000];
	struct vfs_entry e;
	uint64_t ino, fh;

	assert_int_equal(test_put(f->fs, "written", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(test_open(f->fs, "cached", O_CREAT | O_WRONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w, 12345, 0), 12345);
	/* What the calls that make names answer is what lookup gives too. */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "dir", 0750, &e), 0);
	same_as_lookup(f->fs, "dir", &e);
	assert_int_equal(VFS_CALL(f->fs, symlink, &c, "written", VFS_ROOT_INO, "link", &e), 0);
	same_as_lookup(f->fs, "link", &e);
	assert_int_equal(VFS_CALL(f->fs, mknod, &c, VFS_ROOT_INO, "dev", S_IFCHR | 0600,
				  makedev(1, 3), &e), 0);
	same_as_lookup(f->fs, "dev", &e);
	assert_int_equal(VFS_CALL(f->fs, readdirplus, &c, VFS_ROOT_INO, VFS_NO_FH, 0,
				  compare_with_lookup, &p), 0);
	assert_int_equal(p.dots, 2);
	assert_int_equal(p.entries, 5);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
}

static void same_statx(const struct statx *a, const struct statx *b)
{
	assert_int_equal(a->stx_mode, b->stx_mode);
	assert_int_equal(a->stx_uid, b->stx_uid);
	assert_int_equal(a->stx_gid, b->stx_gid);
	assert_int_equal(a->stx_nlink, b->stx_nlink);
	assert_int_equal(a->stx_size, b->stx_size);
	assert_int_equal(a->stx_blocks, b->stx_blocks);
	assert_int_equal(a->stx_atime.tv_sec, b->stx_atime.tv_sec);
	assert_int_equal(a->stx_atime.tv_nsec, b->stx_atime.tv_nsec);
	assert_int_equal(a->stx_mtime.tv_sec, b->stx_mtime.tv_sec);
	assert_int_equal(a->stx_mtime.tv_nsec, b->stx_mtime.tv_nsec);
	assert_int_equal(a->stx_ctime.tv_sec, b->stx_ctime.tv_sec);
	assert_int_equal(a->stx_ctime.tv_nsec, b->stx_ctime.tv_nsec);
	assert_int_equal(a->stx_btime.tv_nsec, b->stx_btime.tv_nsec);
}

/*
 * What setattr answers is what the kernel caches for a day (the entry and
 * attribute timeouts): it must be what a statx right after says, for every
 * kind of change, on a file written back and on one still cached.
 */
static void test_setattr_answers_what_statx_then_says(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx(), other = { .uid = 4321, .gid = 4321 };
	static const struct vfs_setattr changes[] = {
		{ .valid = VFS_SET_MODE, .mode = 06755 },
		{ .valid = VFS_SET_UID | VFS_SET_GID, .uid = 1000, .gid = 1000 },
		{ .valid = VFS_SET_ATIME | VFS_SET_MTIME, .atime = { 7, 8 }, .mtime = { 9, 10 } },
		{ .valid = VFS_SET_ATIME_NOW | VFS_SET_MTIME_NOW },
		{ .valid = VFS_SET_MTIME, .mtime = { 1234567890, 5 } },
		{ .valid = VFS_SET_MODE, .mode = 02775 },
		{ .valid = VFS_SET_SIZE, .size = 3 },
		{ .valid = VFS_SET_SIZE | VFS_SET_MODE, .size = 9000, .mode = 0640 },
		{ .valid = 0 },
	};
	static uint8_t w[20000];
	struct statx got, now;
	uint64_t ino, fh;

	assert_int_equal(test_put(f->fs, "clean", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(test_open(f->fs, "cached", O_CREAT | O_WRONLY, &ino, &fh), 0);
	for (int file = 0; file < 2; file++) {
		struct vfs_entry e;

		assert_int_equal(VFS_CALL(f->fs, lookup, &c, VFS_ROOT_INO, file ? "cached" : "clean",
					  &e), 0);
		for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
			/* The cached file gets more cached data before each change. */
			if (file)
				assert_int_equal(VFS_CALL(f->fs, write, ino, fh, w, 5000,
							  (off_t)(i * 5000)), 5000);
			assert_int_equal(VFS_CALL(f->fs, setattr, i == 5 ? &other : &c, e.ino,
						  VFS_NO_FH, &changes[i], &got), 0);
			assert_int_equal(VFS_CALL(f->fs, statx, &c, e.ino, VFS_NO_FH, 0,
						  STATX_BASIC_STATS | STATX_BTIME, &now), 0);
			same_statx(&got, &now);
		}
	}
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files_survive_remount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_links_and_renames_follow_posix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_cookies_are_stable_across_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_dotdot_from_any_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statx_computes_blocks_only_when_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdirplus_and_creates_give_what_lookup_gives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setattr_sets_modes_owners_times_and_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setattr_answers_what_statx_then_says, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattrs_round_trip_with_create_and_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statfs_tells_the_truth_about_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_frees_every_batch_of_extents, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_punch_hole_frees_blocks_and_reads_zeros, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sparse_files_past_4gib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_o_append_writes_at_the_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_unlinked_file_lives_until_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_block_reads_as_ebadmsg, setup, teardown),
		cmocka_unit_test(test_full_filesystem_is_enospc_and_consistent),
		cmocka_unit_test(test_bad_images_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
