/*
 * test_union_names.c - the union's names, driven directly through the vfs
 * table (no FUSE): whiteouts and opaque directories hide lower names and
 * share one inode, removals leave whiteouts where lowers have the name and
 * nowhere else, a create replaces a whiteout, merged directories can be
 * renamed and exchanged, a directory renamed onto a whiteout is opaque, a
 * redirect is followed under an upper directory and from a lower, a changed lower is refused until rebuilt, bad
 * layers, names and redirects are refused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <cmocka.h>

#include "pony/util.h"
#include "union_fixture.h"

static void test_whiteout_and_opaque_dir_hide_lower_names(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry d, e;
	char path[160];
	struct stat st;

	walk(f, "d", &d);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "x"), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, d.ino, "x", &e), -ENOENT);
	snprintf(path, sizeof(path), "%s/d/x", f->upper);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, d.ino, "sub"), -ENOTEMPTY);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/sub", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, e.ino, "y"), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, d.ino, "sub"), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, d.ino, "sub", 0755, &e), 0);
	/* The new directory is opaque: the lower's y does not come back. */
	struct vfs_entry y;
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, e.ino, "y", &y), -ENOENT);
	VFS_FORGET(f->fs, e.ino, 1);
	VFS_FORGET(f->fs, d.ino, 1);
	remount(f);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/sub/y", &y), -ENOENT);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/x", &y), -ENOENT);
}

/* Whiteouts are links of one inode (as overlayfs makes them), left on disk
 * as plain 0/0 whiteouts once the union is gone. */
static void test_whiteouts_share_one_inode(void **state)
{
	struct fixture *f = *state;
	struct stat st[3];
	struct vfs_entry d, e;
	char path[160];

	walk(f, "e", &d);
	for (int i = 1; i <= 3; i++) {
		snprintf(path, sizeof(path), "n%d", i);
		assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, path), 0);
		assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, d.ino, path, &e), -ENOENT);
		snprintf(path, sizeof(path), "%s/e/n%d", f->upper, i);
		assert_int_equal(stat(path, &st[i - 1]), 0);
		assert_true(S_ISCHR(st[i - 1].st_mode) && st[i - 1].st_rdev == makedev(0, 0));
		assert_true(st[i - 1].st_ino == st[0].st_ino);
	}
	/* Three names here and the one in work/work the union links to. */
	assert_int_equal(st[2].st_nlink, 4);
	VFS_FORGET(f->fs, d.ino, 1);
	remount(f);
	snprintf(path, sizeof(path), "%s/e/n1", f->upper);
	assert_int_equal(stat(path, &st[0]), 0);
	assert_int_equal(st[0].st_nlink, 3);    /* work/work is left empty */
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "e/n2", &e), -ENOENT);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "e/n4", &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
}

/* What removing a name leaves in the upper, by the layers that hold it. */
static bool upper_has(struct fixture *f, const char *name, bool *whiteout)
{
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", f->upper, name);
	if (lstat(path, &st) < 0)
		return false;
	*whiteout = S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
	return true;
}

static void assert_whiteout(struct fixture *f, const char *name)
{
	struct vfs_entry e;
	bool wh = false;

	assert_true(upper_has(f, name, &wh));
	assert_true(wh);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, name, &e), -ENOENT);
}

static void assert_no_upper_name(struct fixture *f, const char *name)
{
	struct vfs_entry e;
	bool wh;

	assert_false(upper_has(f, name, &wh));
	assert_int_equal(vfs_walk(f->fs, &f->ctx, name, &e), -ENOENT);
}

/*
 * Unlink and rmdir of a name in the lower only, the upper only, or both
 * (copied up): a whiteout exactly where a lower still has the name, as
 * overlayfs leaves them; also a whiteout made again after a new file took
 * its place, and directories emptied then removed, merged or opaque.
 */
static void test_remove_leaves_whiteouts_only_over_lower_names(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry d, e;
	uint64_t fh;

	walk(f, "e", &d);
	/* Lower only; looked up first, as the kernel does, and not. */
	walk(f, "e/n1", &e);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "n1"), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "n2"), 0);
	assert_whiteout(f, "e/n1");
	assert_whiteout(f, "e/n2");
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "n2"), -ENOENT);
	/* Both layers: copied up by a write, then removed. */
	walk(f, "e/n3", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_WRONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "z", 1, 0), 1);
	VFS_CALL(f->fs, release, e.ino, fh);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "n3"), 0);
	assert_whiteout(f, "e/n3");
	/* Upper only: gone without a trace. */
	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, d.ino, "own", S_IFREG | 0644, 0, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "own"), 0);
	assert_no_upper_name(f, "e/own");
	/* A new file over a whiteout, removed: the whiteout again. */
	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, d.ino, "n1", S_IFREG | 0644, 0, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "n1"), 0);
	assert_whiteout(f, "e/n1");
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, d.ino, "n4"), -ENOTDIR);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, VFS_ROOT_INO, "e"), -EISDIR);
	/* A merged directory emptied (its lower names whited out): a whiteout. */
	for (int i = 4; i <= 40; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, name), 0);
	}
	VFS_FORGET(f->fs, d.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, VFS_ROOT_INO, "e"), 0);
	assert_whiteout(f, "e");
	/* Its whiteouts went with it: nothing left in the work directory but
	 * the shared whiteout. */
	sh("test -z \"$(find %s/work -mindepth 1 ! -type c)\"", f->work);
	/* A directory of the upper's own: gone, no whiteout. */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "mine", 0755, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, VFS_ROOT_INO, "mine"), 0);
	assert_no_upper_name(f, "mine");
	/* An opaque directory made where a lower one was: a whiteout again,
	 * also after a remount (the lower is asked, not remembered). */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "e", 0755, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	remount(f);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, VFS_ROOT_INO, "e"), 0);
	assert_whiteout(f, "e");
	remount(f);
	assert_whiteout(f, "e");
}

/*
 * A directory without lowers (made through the union, or the upper's own)
 * lets the upper's create decide whether a name is free: a taken name is
 * still -EEXIST for every kind of create, and a whiteout there (as kernel
 * overlayfs may leave one) is replaced by the new entry, also after a
 * remount, when the directory is known only from the upper.
 */
static void test_create_in_dir_without_lowers_replaces_whiteouts(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry d, e;
	char buf[8] = { 0 }, path[160];
	struct stat st;
	uint64_t fh;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "o", 0755, &d), 0);
	for (int round = 0; round < 2; round++) {
		const char *a = round ? "a2" : "a";

		assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, d.ino, a, 0600, O_RDWR, &e,
					  &fh), 0);
		assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "hi", 2, 0), 2);
		assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, buf, sizeof(buf), 0), 2);
		assert_string_equal(buf, "hi");
		VFS_CALL(f->fs, release, e.ino, fh);
		VFS_FORGET(f->fs, e.ino, 1);
		assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, d.ino, a, 0600, O_RDWR, &e,
					  &fh), -EEXIST);
		assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, d.ino, a, S_IFREG | 0644, 0, &e),
				 -EEXIST);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, d.ino, a, 0755, &e), -EEXIST);
		assert_int_equal(VFS_CALL(f->fs, symlink, &f->ctx, "t", d.ino, a, &e), -EEXIST);
		/* Whiteouts put in the upper under the union, then remounted. */
		sh("mknod %s/o/w%d c 0 0 && mknod %s/o/v%d c 0 0", f->upper, round, f->upper,
		   round);
		VFS_FORGET(f->fs, d.ino, 1);
		remount(f);
		walk(f, "o", &d);
		snprintf(path, sizeof(path), "w%d", round);
		assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, d.ino, path, &e), -ENOENT);
		assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, d.ino, path, 0640, O_WRONLY,
					  &e, &fh), 0);
		assert_true(S_ISREG(e.attr.stx_mode) && (e.attr.stx_mode & 07777) == 0640);
		VFS_CALL(f->fs, release, e.ino, fh);
		VFS_FORGET(f->fs, e.ino, 1);
		snprintf(path, sizeof(path), "%s/o/w%d", f->upper, round);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		snprintf(path, sizeof(path), "v%d", round);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, d.ino, path, 0700, &e), 0);
		assert_true(S_ISDIR(e.attr.stx_mode));
		VFS_FORGET(f->fs, e.ino, 1);
		snprintf(path, sizeof(path), "%s/o/v%d", f->upper, round);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
	}
	VFS_FORGET(f->fs, d.ino, 1);
	remount(f);
	sh("test \"$(cat %s/o/a %s/o/a2)\" = hihi", f->upper, f->upper);
}

static void test_directory_rename_keeps_lower_contents(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "d", VFS_ROOT_INO, "moved",
				  0), 0);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d", &e), -ENOENT);
	walk(f, "moved/sub/y", &e);
	VFS_FORGET(f->fs, e.ino, 1);
	remount(f);
	walk(f, "moved/x", &e);
	assert_int_equal(e.attr.stx_size, 2);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d", &e), -ENOENT);
}

/* Whether the upper's path has trusted.overlay.<name> (user. unprivileged). */
static bool upper_xattr(struct fixture *f, const char *path, const char *name)
{
	char p[PATH_MAX], x[64];

	snprintf(p, sizeof(p), "%s/%s", f->upper, path);
	snprintf(x, sizeof(x), "%s.overlay.%s", geteuid() ? "user" : "trusted", name);
	return lgetxattr(p, x, NULL, 0) >= 0;
}

/* A directory renamed onto a whiteout (of a file, of a directory, with
 * RENAME_NOREPLACE too) takes the name, opaque: the lower's old entries
 * under the name stay hidden, after a remount too, and no whiteout is left
 * at the old name, which no lower has. */
static void test_directory_renamed_onto_whiteout_is_opaque(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry d, e;

	walk(f, "d", &d);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, "x"), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, d.ino, "n1", 0755, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, d.ino, "n1", d.ino, "x", 0), 0);
	walk(f, "d/sub", &e);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, e.ino, "y"), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rmdir, &f->ctx, d.ino, "sub"), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, d.ino, "n2", 0755, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, d.ino, "n2", d.ino, "sub",
				  RENAME_NOREPLACE), 0);
	/* A merged directory, whose old name a lower has: the whiteout moves
	 * there. */
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, VFS_ROOT_INO, "sym"), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "e", VFS_ROOT_INO, "sym",
				  0), 0);
	VFS_FORGET(f->fs, d.ino, 1);
	for (int pass = 0; pass < 2; pass++) {
		walk(f, "d/x", &e);
		assert_true(S_ISDIR(e.attr.stx_mode));
		VFS_FORGET(f->fs, e.ino, 1);
		assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/sub/y", &e), -ENOENT);
		assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/n1", &e), -ENOENT);
		assert_int_equal(vfs_walk(f->fs, &f->ctx, "e", &e), -ENOENT);
		walk(f, "sym/n40", &e);
		VFS_FORGET(f->fs, e.ino, 1);
		remount(f);
	}
	assert_true(upper_xattr(f, "d/x", "opaque") && upper_xattr(f, "d/sub", "opaque"));
	assert_true(upper_xattr(f, "sym", "redirect"));
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/d/n1", f->upper);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/e", f->upper);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* A lower directory moved under a directory of the upper's own: its
 * redirect is followed after a remount (its parent has no lowers), with
 * the same st_ino; and again with that upper as a lower of a new union. */
static void test_redirect_under_upper_directory_is_followed(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;
	uint64_t ino;

	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "nn", 0755, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "d", e.ino, "x", 0), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	walk(f, "nn/x", &e);
	ino = e.attr.stx_ino;
	VFS_FORGET(f->fs, e.ino, 1);
	remount(f);
	walk(f, "nn/x", &e);
	assert_int_equal(e.attr.stx_ino, ino);
	VFS_FORGET(f->fs, e.ino, 1);
	walk(f, "nn/x/sub/y", &e);
	VFS_FORGET(f->fs, e.ino, 1);

	char up[160], wk[160];
	const char *lowers[] = { f->upper, f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 2, .upper = up, .work = wk,
				    .flags = geteuid() ? UNION_USERXATTR : 0 };
	struct vfs *fs;

	vfs_free(f->fs);
	f->fs = NULL;
	snprintf(up, sizeof(up), "%s/upper2", f->top);
	snprintf(wk, sizeof(wk), "%s/work2", f->top);
	sh("mkdir -p %s %s", up, wk);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(union_new(&cfg, &fs), 0);
		assert_int_equal(vfs_walk(fs, &f->ctx, "nn/x/sub/y", &e), 0);
		VFS_FORGET(fs, e.ino, 1);
		assert_int_equal(vfs_walk(fs, &f->ctx, "nn/x", &e), 0);
		if (pass == 0)
			ino = e.attr.stx_ino;
		assert_int_equal(e.attr.stx_ino, ino);
		/* Copied up by a change, then found from the lower's redirect. */
		struct vfs_entry n;
		assert_int_equal(VFS_CALL(fs, mknod, &f->ctx, e.ino, pass ? "p1" : "p0",
					  S_IFREG | 0644, 0, &n), 0);
		VFS_FORGET(fs, n.ino, 1);
		VFS_FORGET(fs, e.ino, 1);
		assert_int_equal(vfs_walk(fs, &f->ctx, "d", &e), -ENOENT);
		vfs_free(fs);
	}
	assert_int_equal(build(f), 0);
}

/* Makes a directory in the upper with a redirect, as overlayfs would
 * (root only: trusted.*), and remounts. */
static void upper_redirected_dir(struct fixture *f, const char *path, const char *value)
{
	char p[PATH_MAX];

	if (geteuid() != 0)
		skip();
	snprintf(p, sizeof(p), "%s/%s", f->upper, path);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(lsetxattr(p, "trusted.overlay.redirect", value, strlen(value), 0), 0);
	remount(f);
}

/* The kernel's overlayfs renames within one directory with a relative
 * redirect (here: d renamed dd). A subdirectory moved out of it gets an
 * absolute redirect through its parent's lower name, not the union's. */
static void test_move_out_of_relative_redirect_keeps_lowers(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	upper_redirected_dir(f, "dd", "d");
	sh("mknod %s/d c 0 0", f->upper);      /* the whiteout the rename left */
	walk(f, "dd/sub/y", &e);
	VFS_FORGET(f->fs, e.ino, 1);
	walk(f, "dd", &e);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, e.ino, "sub", VFS_ROOT_INO, "s2", 0), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	remount(f);
	walk(f, "s2/y", &e);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "dd/sub", &e), -ENOENT);
}

static void test_exchange_of_merged_directories_keeps_both_lowers(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "d", VFS_ROOT_INO, "e",
				  RENAME_EXCHANGE), 0);
	for (int pass = 0; pass < 2; pass++) {
		walk(f, "e/sub/y", &e);         /* d's lower, now under e */
		VFS_FORGET(f->fs, e.ino, 1);
		walk(f, "d/n40", &e);           /* e's lower, now under d */
		VFS_FORGET(f->fs, e.ino, 1);
		assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/x", &e), -ENOENT);
		assert_int_equal(vfs_walk(f->fs, &f->ctx, "e/n1", &e), -ENOENT);
		remount(f);                     /* the redirects are on disk */
	}
	/* A directory of the upper's own exchanged with a merged one hides the
	 * lowers of the name it takes (opaque on disk, after a remount too). */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "own", 0755, &e), 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "own", VFS_ROOT_INO, "d",
				  RENAME_EXCHANGE), 0);
	remount(f);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/n40", &e), -ENOENT);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d/x", &e), -ENOENT);
	walk(f, "own/n40", &e);
	VFS_FORGET(f->fs, e.ino, 1);
}

static void test_rename_over_lower_file_leaves_a_whiteout(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "sym", VFS_ROOT_INO, "f",
				  0), 0);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "sym", &e), -ENOENT);
	walk(f, "f", &e);
	assert_true(S_ISLNK(e.attr.stx_mode));
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "f", VFS_ROOT_INO, "g",
				  RENAME_NOREPLACE), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "g", VFS_ROOT_INO, "flink",
				  RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(VFS_CALL(f->fs, rename, &f->ctx, VFS_ROOT_INO, "g", VFS_ROOT_INO, "h",
				  RENAME_WHITEOUT), -EINVAL);
}

static void test_changed_lower_is_refused_until_rebuilt(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	walk(f, "d", &e);
	VFS_FORGET(f->fs, e.ino, 1);
	sh("touch %s/d/newer", f->lower);
	lower_sum(f, f->lower_sum);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "d", &e), -ESTALE);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "f", &e), -ESTALE);
	remount(f);
	walk(f, "d/newer", &e);
	VFS_FORGET(f->fs, e.ino, 1);
}

static void test_bad_layers_and_names_are_refused(void **state)
{
	struct fixture *f = *state;
	char inside[128], longname[NAME_MAX + 2];
	const char *lowers[] = { f->lower };
	const char *missing[] = { "/nonexistent/pony" };
	struct union_config cfg = { .lowers = missing, .nlowers = 1, .upper = f->upper,
				    .work = f->work };
	struct vfs *fs;
	struct vfs_entry e;

	assert_int_equal(union_new(&cfg, &fs), -ENOENT);
	snprintf(inside, sizeof(inside), "%s/e", f->lower);
	cfg.lowers = lowers;
	cfg.upper = inside;
	assert_int_equal(union_new(&cfg, &fs), -ELOOP);
	cfg.upper = f->upper;
	cfg.nlowers = 0;
	assert_int_equal(union_new(&cfg, &fs), -EINVAL);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, longname, &e),
			 -ENAMETOOLONG);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, longname, 0755, &e),
			 -ENAMETOOLONG);
}

static void test_corrupt_redirect_is_an_error_not_a_wrong_tree(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;

	upper_redirected_dir(f, "bad", "../../etc");
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "bad", &e), -EIO);
	/* A character device that is not 0/0 is no whiteout: it shows. */
	sh("mknod %s/chr c 1 3", f->upper);
	walk(f, "chr", &e);
	assert_true(S_ISCHR(e.attr.stx_mode));
	VFS_FORGET(f->fs, e.ino, 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_whiteout_and_opaque_dir_hide_lower_names),
		T(test_whiteouts_share_one_inode),
		T(test_remove_leaves_whiteouts_only_over_lower_names),
		T(test_create_in_dir_without_lowers_replaces_whiteouts),
		T(test_directory_rename_keeps_lower_contents),
		T(test_directory_renamed_onto_whiteout_is_opaque),
		T(test_redirect_under_upper_directory_is_followed),
		T(test_move_out_of_relative_redirect_keeps_lowers),
		T(test_exchange_of_merged_directories_keeps_both_lowers),
		T(test_rename_over_lower_file_leaves_a_whiteout),
		T(test_changed_lower_is_refused_until_rebuilt),
		T(test_bad_layers_and_names_are_refused),
		T(test_corrupt_redirect_is_an_error_not_a_wrong_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
