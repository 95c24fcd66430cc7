/*
 * test_metadata_space.c - metadata that outgrows the metadata region
 * (issue 18, point 1). Names and xattrs are refused with ENOSPC only when
 * the filesystem is full: the database grows into chunks of the data
 * region, every change that returned 0 is there after a remount, and the
 * filesystem stays usable (deletes work, then creates again). The chunk
 * table survives losing its newer copy (a crash while writing it), and an
 * image from before chunks still gets ENOSPC, never EIO. The images keep
 * the one-image ratio of metadata to data (a sixteenth), as 1 GiB has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>
#include <cmocka.h>

#include "helpers.h"
#include "pony/util.h"

#define XATTRS 8
#define XATTR_SIZE 128

static int make(struct vfs *fs, const char *name, uint64_t *ret_ino)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	uint64_t fh;
	int r = VFS_CALL(fs, create, &c, VFS_ROOT_INO, name, 0644, O_CREAT | O_EXCL | O_WRONLY, &e,
			 &fh);

	if (r == 0) {
		VFS_CALL(fs, release, e.ino, fh);
		*ret_ino = e.ino;
	}
	return r;
}

static void xattr_value(char *v, unsigned file, unsigned k)
{
	memset(v, 'a' + k, XATTR_SIZE);
	snprintf(v, XATTR_SIZE, "file %u attr %u", file, k);
}

/*
 * Files with eight 128-byte xattrs each until the filesystem is full:
 * every call answers 0 or ENOSPC, and after the first ENOSPC of a create
 * the same create still fails cleanly. Returns how many files were made
 * whole (all their xattrs set); *ret_partial: one more got fewer.
 */
static unsigned fill_with_xattrs(struct vfs *fs, unsigned first, unsigned max,
				 unsigned *ret_partial)
{
	struct vfs_ctx c = test_ctx();
	char name[32], xn[32], v[XATTR_SIZE];
	unsigned n;

	*ret_partial = 0;
	for (n = first; n < first + max; n++) {
		uint64_t ino;
		int r;

		snprintf(name, sizeof(name), "file-%06u", n);
		r = make(fs, name, &ino);
		if (r == -ENOSPC)
			break;
		assert_int_equal(r, 0);
		for (unsigned k = 0; k < XATTRS; k++) {
			snprintf(xn, sizeof(xn), "user.attr%u", k);
			xattr_value(v, n, k);
			r = VFS_CALL(fs, setxattr, &c, ino, xn, v, XATTR_SIZE, 0);
			if (r == -ENOSPC) {
				*ret_partial = k;
				return n - first;
			}
			assert_int_equal(r, 0);
		}
	}
	return n - first;
}

/* Files [first, n) whole, and file n with partial xattrs if any. */
static void check_files(struct vfs *fs, unsigned first, unsigned n, unsigned partial)
{
	struct vfs_ctx c = test_ctx();
	char name[32], xn[32], v[XATTR_SIZE], got[XATTR_SIZE];
	struct vfs_entry e;

	for (unsigned i = first; i <= n; i++) {
		unsigned want = i < n ? XATTRS : partial;

		snprintf(name, sizeof(name), "file-%06u", i);
		if (i == n && !partial)
			continue;
		assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e), 0);
		for (unsigned k = 0; k < want; k++) {
			snprintf(xn, sizeof(xn), "user.attr%u", k);
			xattr_value(v, i, k);
			assert_int_equal(VFS_CALL(fs, getxattr, &c, e.ino, xn, got, sizeof(got)),
					 XATTR_SIZE);
			assert_memory_equal(got, v, XATTR_SIZE);
		}
	}
}

static uint64_t chunks_of(struct vfs *fs)
{
	struct ponyfs_stats s;

	ponyfs_get_stats(fs, &s);
	return s.meta_chunks;
}

/*
 * A 64 MiB ponyfs (4 MiB of metadata region, as 1 GiB has 64 MiB): files
 * with eight xattrs each fill its database many times over; it grows into
 * the data region and refuses only when the filesystem is full. Before,
 * the 2,300th file or so got ENOENT, its transaction's files vanished and
 * every later change failed with EIO.
 */
static void test_xattr_heavy_files_fill_the_filesystem_not_the_region(void **state)
{
	struct vfs_ctx c = test_ctx();
	struct statvfs s;
	struct bdev *dev;
	struct vfs *fs;
	unsigned n, partial;
	uint64_t ino;

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	n = fill_with_xattrs(fs, 0, 1000000, &partial);
	assert_true(n > 20000);         /* the region alone held about 2,300 */
	assert_true(chunks_of(fs) > 10);
	assert_int_equal(VFS_CALL(fs, statfs, VFS_ROOT_INO, &s), 0);
	assert_true(s.f_bavail < 64);   /* full: data and metadata */
	/* Still usable: a delete works, and makes room for a name again. */
	for (unsigned i = 0; i < 20; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file-%06u", i);
		assert_int_equal(VFS_CALL(fs, unlink, &c, VFS_ROOT_INO, name), 0);
	}
	assert_int_equal(make(fs, "after", &ino), 0);
	assert_int_equal(VFS_CALL(fs, setxattr, &c, ino, "user.x", "y", 1, 0), 0);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	check_files(fs, 20, n, partial);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "after", &(struct vfs_entry){ 0 }), 0);
	vfs_free(fs);
	bdev_free(dev);
}

/*
 * Empty files on 16 MiB until ENOSPC (before: 4,096 or 8,192 succeeded,
 * then EIO, and a remount found 2,048 fewer): the refused create changed
 * nothing, every acknowledged one is there after a remount, and statfs
 * counts inodes that are really there and as many as the room left holds.
 */
static void test_empty_files_until_enospc_all_survive(void **state)
{
	struct vfs_ctx c = test_ctx();
	struct statvfs s0, s1, s2;
	struct vfs_entry e;
	struct bdev *dev;
	struct vfs *fs;
	char name[32];
	unsigned n;
	uint64_t ino;
	int r = 0;

	assert_int_equal(bdev_mem_new(16u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(VFS_CALL(fs, statfs, VFS_ROOT_INO, &s0), 0);
	assert_true(s0.f_files < 1000000);      /* not a billion */
	for (n = 0; r == 0; n++) {
		snprintf(name, sizeof(name), "f%07u", n);
		r = make(fs, name, &ino);
		if (n == 999)   /* 1,000 made */
			assert_int_equal(VFS_CALL(fs, statfs, VFS_ROOT_INO, &s1), 0);
	}
	n--;
	assert_int_equal(r, -ENOSPC);
	assert_true(n > 20000);
	assert_int_equal(s1.f_files - s1.f_ffree, s0.f_files - s0.f_ffree + 1000);
	assert_true(s1.f_ffree < s0.f_ffree);
	assert_int_equal(VFS_CALL(fs, statfs, VFS_ROOT_INO, &s2), 0);
	assert_int_equal(s2.f_files - s2.f_ffree, s0.f_files - s0.f_ffree + n);
	assert_true(s2.f_ffree < s0.f_ffree / 10);
	/* The refused name is not there; the same create fails the same way. */
	snprintf(name, sizeof(name), "f%07u", n);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e), -ENOENT);
	assert_int_equal(make(fs, name, &ino), -ENOSPC);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%07u", i);
		assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e), 0);
	}
	vfs_free(fs);
	bdev_free(dev);
}

struct logged { int added; };

static void log_sink(void *arg, int prio, const char *text)
{
	((struct logged *)arg)->added += strstr(text, "added 1 metadata chunks") != NULL;
}

/*
 * Growth commits a chunk to meta_chunks, then writes the chunk table. A
 * crash in between leaves the table without it: here its newer copy is
 * torn. The mount takes the older copy, adds the chunk from meta_chunks
 * (logged), and everything is there; fsck is clean.
 */
static void test_a_torn_chunk_table_is_made_whole_from_the_database(void **state)
{
	struct logged l = { 0 };
	uint8_t sb[512], junk[512];
	struct bdev *dev;
	struct vfs *fs;
	uint64_t gen[2], ctab;
	unsigned n, partial;
	int newer;

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	for (n = 0; chunks_of(fs) < 3; n += 100)
		assert_int_equal(fill_with_xattrs(fs, n, 100, &partial), 100);
	vfs_free(fs);
	/* The newer copy of the chunk table, torn. */
	assert_int_equal(bdev_pread(dev, sb, sizeof(sb), 0), 0);
	ctab = util_get_le64(sb + 0x70);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(bdev_pread(dev, junk, sizeof(junk), ctab + 4096u * (unsigned)i), 0);
		gen[i] = util_get_le64(junk + 16);
	}
	newer = gen[1] > gen[0];
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(bdev_pwrite(dev, junk, sizeof(junk), ctab + 4096u * (unsigned)newer + 512), 0);
	util_log_set_sink(log_sink, &l);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	util_log_set_sink(NULL, NULL);
	assert_int_equal(l.added, 1);
	assert_int_equal(chunks_of(fs), 3);
	check_files(fs, 0, n, 0);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	bdev_free(dev);
}

/*
 * An image laid out before chunks (no chunk table): it mounts, cannot
 * grow, and refuses with ENOSPC when its metadata region is full, keeping
 * every file it acknowledged.
 */
static void test_an_image_without_chunks_refuses_with_enospc(void **state)
{
	struct ponyfs_mkfs_options o = { .fixed_metadata = true };
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	struct bdev *dev;
	struct vfs *fs;
	unsigned n, partial;
	char name[32];

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, &o), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	n = fill_with_xattrs(fs, 0, 1000000, &partial);
	assert_true(n > 1000 && n < 10000);
	assert_int_equal(chunks_of(fs), 0);
	snprintf(name, sizeof(name), "file-%06u", 0);
	assert_int_equal(VFS_CALL(fs, unlink, &c, VFS_ROOT_INO, name), 0);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	snprintf(name, sizeof(name), "file-%06u", n - 1);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, name, &e), 0);
	vfs_free(fs);
	bdev_free(dev);
}

/*
 * An unlink leaves the row of the file it deletes as it is (ponyfs_inode_
 * delete_locked(), linked): the row goes later in the same transaction.
 * But a reservation on the way may commit, and what commits then must
 * say nlink 0, an orphan the next mount deletes, never a file without a
 * name that still counts one. Here the victim's xattrs make its delete
 * reserve more than its name's removal did, and an open transaction of k
 * xattrs on the root leaves less room each time, until a commit falls
 * between the two: the state a crash right after the unlink leaves (the
 * image as it is, the rest of the delete not committed) lacks the name.
 * Mounted, it must fsck clean.
 */
#define MIDWAY_IMG (16u << 20)

static void test_a_delete_cut_by_a_commit_leaves_an_orphan(void **state)
{
	struct vfs_ctx c = test_ctx();
	uint8_t *base = malloc(MIDWAY_IMG), *img = malloc(MIDWAY_IMG);
	char xn[32], v[3000];
	struct vfs_entry e;
	struct bdev *dev, *copy;
	struct vfs *fs;
	uint64_t ino;
	bool cut = false;

	assert_non_null(base);
	assert_non_null(img);
	memset(v, 'v', sizeof(v));
	assert_int_equal(bdev_mem_new(MIDWAY_IMG, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	assert_int_equal(make(fs, "victim", &ino), 0);
	for (unsigned i = 0; i < 40; i++) {
		snprintf(xn, sizeof(xn), "user.big%u", i);
		assert_int_equal(VFS_CALL(fs, setxattr, &c, ino, xn, v, sizeof(v), 0), 0);
	}
	vfs_free(fs);
	assert_int_equal(bdev_pread(dev, base, MIDWAY_IMG, 0), 0);
	for (unsigned k = 0; k < 2000 && !cut; k++) {
		assert_int_equal(bdev_pwrite(dev, base, MIDWAY_IMG, 0), 0);
		assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
		for (unsigned i = 0; i < k; i++) {
			snprintf(xn, sizeof(xn), "user.fill%u", i);
			assert_int_equal(VFS_CALL(fs, setxattr, &c, VFS_ROOT_INO, xn, v, sizeof(v), 0), 0);
		}
		assert_int_equal(VFS_CALL(fs, unlink, &c, VFS_ROOT_INO, "victim"), 0);
		assert_int_equal(bdev_pread(dev, img, MIDWAY_IMG, 0), 0);
		vfs_free(fs);
		assert_int_equal(bdev_mem_new(MIDWAY_IMG, &copy), 0);
		assert_int_equal(bdev_pwrite(copy, img, MIDWAY_IMG, 0), 0);
		assert_int_equal(ponyfs_mount_image(copy, NULL, &fs), 0);
		cut = VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "victim", &e) == -ENOENT;
		vfs_free(fs);
		if (cut)
			assert_int_equal(ponyfs_fsck_image(copy, 0, NULL, NULL), 0);
		bdev_free(copy);
	}
	assert_true(cut);       /* else this test no longer tests what it says */
	bdev_free(dev);
	free(base);
	free(img);
}

/*
 * A setattr changes one cell, the inode's row (and, for a chmod, its access
 * ACL's, when it has one), and reserves that. It reserved seven cells, one
 * per statement it once ran: an untar's three setattrs a file then measured
 * the space in use (writing SQLite's dirty pages to the WAL) every ~14
 * files. Here 1,000 files with an untar's chown, chmod and utimes each, in
 * one transaction, measure it at most 60 times (45 here; reserving seven
 * cells, 124).
 */
#define SETATTR_FILES 1000

static void test_an_untars_setattrs_reserve_the_cells_they_change(void **state)
{
	struct vfs_ctx c = test_ctx();
	const struct vfs_setattr sets[] = {
		{ .valid = VFS_SET_UID | VFS_SET_GID, .uid = c.uid, .gid = c.gid },
		{ .valid = VFS_SET_MODE, .mode = 0640 },
		{ .valid = VFS_SET_ATIME | VFS_SET_MTIME, .atime = { 1000000, 0 }, .mtime = { 1000000, 0 } },
	};
	struct ponyfs_stats s0, s1;
	struct bdev *dev;
	struct vfs *fs;
	struct statx x;
	char name[32];
	uint64_t ino;

	assert_int_equal(bdev_mem_new(256u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	ponyfs_get_stats(fs, &s0);
	for (unsigned n = 0; n < SETATTR_FILES; n++) {
		snprintf(name, sizeof(name), "f%05u", n);
		assert_int_equal(make(fs, name, &ino), 0);
		for (size_t k = 0; k < ARRAY_SIZE(sets); k++)
			assert_int_equal(VFS_CALL(fs, setattr, &c, ino, VFS_NO_FH, &sets[k], &x), 0);
		assert_int_equal(x.stx_mode & 07777, 0640);
	}
	ponyfs_get_stats(fs, &s1);
	assert_int_equal(s1.commits, s0.commits);
	assert_true(s1.space_measures - s0.space_measures <= 60);
	vfs_free(fs);
	assert_int_equal(ponyfs_fsck_image(dev, 0, NULL, NULL), 0);
	bdev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xattr_heavy_files_fill_the_filesystem_not_the_region),
		cmocka_unit_test(test_empty_files_until_enospc_all_survive),
		cmocka_unit_test(test_a_torn_chunk_table_is_made_whole_from_the_database),
		cmocka_unit_test(test_an_image_without_chunks_refuses_with_enospc),
		cmocka_unit_test(test_a_delete_cut_by_a_commit_leaves_an_orphan),
		cmocka_unit_test(test_an_untars_setattrs_reserve_the_cells_they_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
