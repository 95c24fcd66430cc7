/*
 * test_posix_attrs.c - the attribute rules ponyfs applies itself (src/ponyfs/attr.c),
 * through its vfs ops table on a memory bdev, as a FUSE daemon sees them:
 * set-group-ID inheritance, set-ID bits dropped by writes, truncation,
 * fallocate and chown of unprivileged callers, ctime moved by link and
 * removexattr even while newer times wait in the cache, and readdir cookies
 * kept by a rename within a directory, atime moved by a read (relatime). Each is something fstests found
 * (generic/314, 683, 423, 728, 736); the shell test ponyfs_posix_attrs
 * checks the same rules through FUSE against ext4.
 */
#include <dirent.h>
#include <linux/fs.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

/* A caller with no process to ask (pid 0), so only its ids count: uid 0 is capable. */
static struct vfs_ctx user_ctx(uid_t uid, gid_t gid)
{
	return (struct vfs_ctx){ .uid = uid, .gid = gid, .pid = 0, .umask = 022 };
}

static struct statx stat_of(struct vfs *fs, uint64_t ino)
{
	struct vfs_ctx c = user_ctx(0, 0);
	struct statx x;

	assert_int_equal(VFS_CALL(fs, statx, &c, ino, VFS_NO_FH, 0, STATX_BASIC_STATS, &x), 0);
	return x;
}

static void set_mode_owner(struct vfs *fs, uint64_t ino, mode_t mode, uid_t uid, gid_t gid)
{
	struct vfs_ctx c = user_ctx(0, 0);
	struct vfs_setattr a = { .valid = VFS_SET_UID | VFS_SET_GID, .uid = uid, .gid = gid };
	struct statx x;

	assert_int_equal(VFS_CALL(fs, setattr, &c, ino, VFS_NO_FH, &a, &x), 0);
	a = (struct vfs_setattr){ .valid = VFS_SET_MODE, .mode = mode };
	assert_int_equal(VFS_CALL(fs, setattr, &c, ino, VFS_NO_FH, &a, &x), 0);
}

static void test_setgid_directory_passes_group_and_bit_on(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = user_ctx(0, 0), u = user_ctx(1000, 1000);
	struct vfs_entry d, e;
	uint64_t fh;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "sg", 0777, &d), 0);
	set_mode_owner(f->fs, d.ino, 02777, 0, 50);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &u, d.ino, "sub", 0755, &e), 0);
	assert_int_equal(e.attr.stx_gid, 50);
	assert_int_equal(e.attr.stx_mode, S_IFDIR | 02755);
	assert_int_equal(VFS_CALL(f->fs, create, &u, d.ino, "f", 0644, O_WRONLY, &e, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(e.attr.stx_gid, 50);
	assert_int_equal(e.attr.stx_mode, S_IFREG | 0644);
	/* Not in group 50 and not capable: S_ISGID|S_IXGRP loses S_ISGID. */
	assert_int_equal(VFS_CALL(f->fs, mknod, &u, d.ino, "x", S_IFREG | 02755, 0, &e), 0);
	assert_int_equal(e.attr.stx_mode, S_IFREG | 0755);
	assert_int_equal(VFS_CALL(f->fs, symlink, &u, "f", d.ino, "l", &e), 0);
	assert_int_equal(e.attr.stx_gid, 50);
	/* Outside a set-group-ID directory, the caller's group. */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &u, VFS_ROOT_INO, "plain", 0755, &e), 0);
	assert_int_equal(e.attr.stx_gid, 1000);
	assert_int_equal(e.attr.stx_mode, S_IFDIR | 0755);
}

static void test_unprivileged_changes_drop_setid_bits(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = user_ctx(0, 0), u = user_ctx(1000, 1000);
	struct vfs_setattr a = { .valid = VFS_SET_SIZE, .size = 1 };
	struct vfs_entry e;
	struct statx x;
	uint64_t fh;

	assert_int_equal(VFS_CALL(f->fs, create, &c, VFS_ROOT_INO, "f", 0666, O_RDWR, &e, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	/* A write by a caller outside the group: S_ISGID goes even without S_IXGRP. */
	set_mode_owner(f->fs, e.ino, 06666, 0, 0);
	assert_int_equal(VFS_CALL(f->fs, open, &u, e.ino, O_WRONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "x", 1, 0), 1);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(stat_of(f->fs, e.ino).stx_mode, S_IFREG | 0666);
	/* A member of the group keeps S_ISGID without S_IXGRP, loses S_ISUID. */
	set_mode_owner(f->fs, e.ino, 06666, 0, 1000);
	assert_int_equal(VFS_CALL(f->fs, open, &u, e.ino, O_WRONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, e.ino, fh, 0, 0, 4096), 0);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(stat_of(f->fs, e.ino).stx_mode, S_IFREG | 02666);
	/* ... but not with S_IXGRP; truncation counts as a write. */
	set_mode_owner(f->fs, e.ino, 02676, 0, 1000);
	assert_int_equal(VFS_CALL(f->fs, setattr, &u, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_mode, S_IFREG | 0676);
	/* Root keeps both on a write. */
	set_mode_owner(f->fs, e.ino, 06777, 0, 0);
	assert_int_equal(VFS_CALL(f->fs, open, &c, e.ino, O_WRONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "x", 1, 0), 1);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(stat_of(f->fs, e.ino).stx_mode, S_IFREG | 06777);
	/* A chown drops S_ISUID and S_ISGID|S_IXGRP, even root's. */
	a = (struct vfs_setattr){ .valid = VFS_SET_UID, .uid = 7 };
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_mode, S_IFREG | 0777);
	/* Directories keep theirs. */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, VFS_ROOT_INO, "d", 0777, &e), 0);
	set_mode_owner(f->fs, e.ino, 02777, 0, 0);
	a = (struct vfs_setattr){ .valid = VFS_SET_GID, .gid = 9 };
	assert_int_equal(VFS_CALL(f->fs, setattr, &u, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_mode, S_IFDIR | 02777);
}

static int64_t ctime_ns(const struct statx *x)
{
	return x->stx_ctime.tv_sec * 1000000000ll + x->stx_ctime.tv_nsec;
}

static int64_t ctime_of(struct vfs *fs, uint64_t ino)
{
	struct statx x = stat_of(fs, ino);

	return ctime_ns(&x);
}

static void test_link_and_removexattr_move_ctime(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = user_ctx(0, 0);
	struct vfs_entry e, l;
	struct statx x;
	uint64_t fh;
	int64_t before;

	/* The file's newer times wait in the cache (written, not yet written back). */
	assert_int_equal(VFS_CALL(f->fs, create, &c, VFS_ROOT_INO, "f", 0644, O_WRONLY, &e, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "data", 4, 0), 4);
	before = ctime_ns(&e.attr);
	x = stat_of(f->fs, e.ino);
	assert_true(ctime_ns(&x) >= before);
	before = ctime_ns(&x);
	usleep(2000);
	assert_int_equal(VFS_CALL(f->fs, link, &c, e.ino, VFS_ROOT_INO, "g", &l), 0);
	assert_true(ctime_ns(&l.attr) > before);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	x = stat_of(f->fs, e.ino);
	assert_true(ctime_ns(&x) > before);     /* writeback did not undo it */

	assert_int_equal(VFS_CALL(f->fs, setxattr, &c, e.ino, "user.a", "1", 1, 0), 0);
	before = ctime_of(f->fs, e.ino);
	usleep(2000);
	assert_int_equal(VFS_CALL(f->fs, removexattr, &c, e.ino, "user.a"), 0);
	assert_true(ctime_of(f->fs, e.ino) > before);
	before = ctime_of(f->fs, e.ino);
	usleep(2000);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "g"), 0);
	assert_true(ctime_of(f->fs, e.ino) > before);
}

struct names { char name[64][16]; int n; int stop_after; uint64_t last; };

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct names *s = data;

	if ((s->stop_after && s->n == s->stop_after) || s->n == 64)
		return 1;
	snprintf(s->name[s->n++], 16, "%s", name);
	s->last = next;
	return 0;
}

static int count_of(const struct names *s, const char *name)
{
	int k = 0;

	for (int i = 0; i < s->n; i++)
		k += !strcmp(s->name[i], name);
	return k;
}

static void test_rename_in_a_directory_keeps_the_readdir_cookie(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = user_ctx(0, 0);
	struct names a = { .stop_after = 5 }, b = { 0 };
	char name[16];

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(test_put(f->fs, name, "x", 1), 0);
	}
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, VFS_ROOT_INO, 0, 0, collect, &a), 0);
	assert_string_equal(a.name[4], "f2");   /* ".", "..", f0, f1, f2 seen */
	/* Seen and unseen entries renamed, one over another, two exchanged. */
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "f0", VFS_ROOT_INO, "f0.r", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "f6", VFS_ROOT_INO, "f6.r", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "f1", VFS_ROOT_INO, "f8", 0), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, VFS_ROOT_INO, "f2", VFS_ROOT_INO, "f7",
				  RENAME_EXCHANGE), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &c, VFS_ROOT_INO, 0, a.last, collect, &b), 0);
	assert_int_equal(count_of(&b, "f0.r"), 0);      /* already seen as f0 */
	assert_int_equal(count_of(&b, "f8"), 0);        /* replaced by f1, seen */
	assert_int_equal(count_of(&b, "f2"), 0);        /* its slot was seen */
	assert_int_equal(count_of(&b, "f6.r"), 1);      /* in f6's place */
	assert_int_equal(count_of(&b, "f7"), 1);
	assert_int_equal(b.n, 6);               /* f3, f4, f5, f6.r, f7, f9 */
}

/* Threads of this process (the commit timer is one while it runs). */
static unsigned thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	unsigned n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * A read moves a two-day-old atime (relatime), in the cache and after a
 * remount; and a mount that only read stops clean: its unmount writes the
 * atime back without starting a commit timer on a filesystem about to be
 * freed (which it once did: a heap use-after-free at unmount).
 */
static void test_a_read_moves_atime_and_the_unmount_writes_it_back(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = user_ctx(0, 0);
	int64_t old = (int64_t)(time(NULL) - 2 * 86400);
	struct vfs_setattr a = { .valid = VFS_SET_ATIME,
				 .atime = { .tv_sec = old } };
	struct ponyfs_options timer = { .commit_ms = 5000 };
	struct vfs_entry e;
	struct statx x;
	unsigned threads;
	uint64_t fh;
	char buf[8];

	assert_int_equal(VFS_CALL(f->fs, create, &c, VFS_ROOT_INO, "f", 0644, O_WRONLY, &e, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "hello", 5, 0), 5);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_atime.tv_sec, old);
	vfs_free(f->fs);
	/* With a commit timer, as pony mount has: only a change starts it. */
	assert_int_equal(ponyfs_mount_image(f->dev, &timer, &f->fs), 0);
	threads = thread_count();
	assert_int_equal(VFS_CALL(f->fs, open, &c, e.ino, O_RDONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, buf, sizeof(buf), 0), 5);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_true(stat_of(f->fs, e.ino).stx_atime.tv_sec > old + 86400);
	vfs_free(f->fs);
	assert_int_equal(thread_count(), threads);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	assert_true(stat_of(f->fs, e.ino).stx_atime.tv_sec > old + 86400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_setgid_directory_passes_group_and_bit_on, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unprivileged_changes_drop_setid_bits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_link_and_removexattr_move_ctime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_read_moves_atime_and_the_unmount_writes_it_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_in_a_directory_keeps_the_readdir_cookie,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
