/*
 * test_union_readonly.c - what fuse-overlayfs's command line asks of the
 * union engine itself (union over hostfs, no FUSE): a union of lowers
 * alone, as podman mounts image layers, merges them top first and refuses
 * every change with EROFS, writing nothing; uidmapping=/gidmapping= show
 * on-disk owners through the map and map a caller's ids back;
 * squash_to_uid/gid show one owner; static_nlink says 1 for directories.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "pony/union.h"
#include "pony/util.h"
#include "union_fixture.h"

/* The fixture's upper becomes the top lower: a whiteout of the lower's f,
 * an opaque d, a merged e with one more name, a file of its own. */
static void make_top_layer(struct fixture *f)
{
	sh("cd %s && mknod f c 0 0 && mkdir d e && echo own > new && echo 41 > e/n41 && "
	   "setfattr -n %s.overlay.opaque -v y d", f->upper, geteuid() ? "user" : "trusted");
}

static int build_readonly(struct fixture *f, struct vfs **ret)
{
	const char *lowers[] = { f->upper, f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 2,
				    .flags = geteuid() ? UNION_USERXATTR : 0 };

	return union_new(&cfg, ret);
}

static void top_sum(struct fixture *f, char *out)
{
	sh_output(out, 64, "cd %s && (find . -printf '%%p %%y %%m %%s %%U %%G %%T@ %%C@\\n' | "
		  "sort; getfattr -R -d -m - . 2>/dev/null) | md5sum", f->upper);
}

struct names {
	char list[2048];
	unsigned n;
};

static int add_name(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct names *l = data;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	strcat(l->list, name);
	strcat(l->list, " ");
	l->n++;
	return 0;
}

static void list_dir(struct vfs *fs, const struct vfs_ctx *ctx, uint64_t ino, struct names *l)
{
	memset(l, 0, sizeof(*l));
	assert_int_equal(VFS_CALL(fs, readdir, ctx, ino, VFS_NO_FH, 0, add_name, l), 0);
}

static void test_lowers_only_union_merges_top_first(void **state)
{
	struct fixture *f = *state;
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_entry e, d;
	struct names l;
	char buf[16];
	uint64_t fh;

	make_top_layer(f);
	assert_int_equal(build_readonly(f, &fs), 0);
	list_dir(fs, &f->ctx, VFS_ROOT_INO, &l);
	/* f is whited out; d, e, flink, sym from the lower; new from the top. */
	assert_int_equal(l.n, 5);
	assert_null(strstr(l.list, "f "));
	assert_non_null(strstr(l.list, "new "));
	assert_non_null(strstr(l.list, "flink "));
	assert_int_equal(vfs_walk(fs, &f->ctx, "f", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, &f->ctx, "e", &d), 0);
	list_dir(fs, &f->ctx, d.ino, &l);
	assert_int_equal(l.n, 41);               /* n1..n40 below, n41 on top */
	VFS_FORGET(fs, d.ino, 1);
	assert_int_equal(vfs_walk(fs, &f->ctx, "d", &d), 0);
	list_dir(fs, &f->ctx, d.ino, &l);
	assert_int_equal(l.n, 0);                /* opaque: the lower's x, sub hidden */
	VFS_FORGET(fs, d.ino, 1);
	assert_int_equal(vfs_walk(fs, &f->ctx, "new", &e), 0);
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, e.ino, O_RDONLY, &fh), 0);
	assert_int_equal(VFS_CALL(fs, read, e.ino, fh, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "own\n", 4);
	VFS_CALL(fs, release, e.ino, fh);
	VFS_FORGET(fs, e.ino, 1);
}

static void test_one_lower_alone_is_a_union_too(void **state)
{
	struct fixture *f = *state;
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1 };
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_entry e;
	struct names l;

	assert_int_equal(union_new(&cfg, &fs), 0);
	list_dir(fs, &f->ctx, VFS_ROOT_INO, &l);
	assert_int_equal(l.n, 5);                /* d e f flink sym */
	assert_int_equal(vfs_walk(fs, &f->ctx, "d/sub/y", &e), 0);
	VFS_FORGET(fs, e.ino, 1);
	assert_int_equal(VFS_CALL(fs, unlink, &f->ctx, VFS_ROOT_INO, "f"), -EROFS);
}

static void test_lowers_only_union_refuses_every_change(void **state)
{
	struct fixture *f = *state;
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_setattr chmod = { .valid = VFS_SET_MODE, .mode = 0600 };
	struct vfs_entry top, low, e, dir;
	char before[64], after[64];
	struct statx x;
	uint64_t fh;

	make_top_layer(f);
	top_sum(f, before);
	assert_int_equal(build_readonly(f, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "new", &top), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "flink", &low), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "e", &dir), 0);
	assert_int_equal(VFS_CALL(fs, create, &f->ctx, VFS_ROOT_INO, "c", 0644,
				  O_WRONLY | O_CREAT, &e, &fh), -EROFS);
	assert_int_equal(VFS_CALL(fs, mkdir, &f->ctx, dir.ino, "m", 0755, &e), -EROFS);
	assert_int_equal(VFS_CALL(fs, mknod, &f->ctx, VFS_ROOT_INO, "p", S_IFIFO | 0644, 0, &e),
			 -EROFS);
	assert_int_equal(VFS_CALL(fs, symlink, &f->ctx, "t", VFS_ROOT_INO, "s", &e), -EROFS);
	assert_int_equal(VFS_CALL(fs, link, &f->ctx, low.ino, VFS_ROOT_INO, "l2", &e), -EROFS);
	assert_int_equal(VFS_CALL(fs, unlink, &f->ctx, VFS_ROOT_INO, "new"), -EROFS);
	assert_int_equal(VFS_CALL(fs, unlink, &f->ctx, VFS_ROOT_INO, "flink"), -EROFS);
	assert_int_equal(VFS_CALL(fs, unlink, &f->ctx, dir.ino, "n41"), -EROFS);
	assert_int_equal(VFS_CALL(fs, rmdir, &f->ctx, VFS_ROOT_INO, "d"), -EROFS);
	assert_int_equal(VFS_CALL(fs, rename, &f->ctx, VFS_ROOT_INO, "new", VFS_ROOT_INO, "n2",
				  0), -EROFS);
	assert_int_equal(VFS_CALL(fs, rename, &f->ctx, VFS_ROOT_INO, "flink", dir.ino, "n2",
				  0), -EROFS);
	assert_int_equal(VFS_CALL(fs, setattr, &f->ctx, top.ino, VFS_NO_FH, &chmod, &x), -EROFS);
	assert_int_equal(VFS_CALL(fs, setattr, &f->ctx, low.ino, VFS_NO_FH, &chmod, &x), -EROFS);
	assert_int_equal(VFS_CALL(fs, setxattr, &f->ctx, top.ino, "user.a", "1", 1, 0), -EROFS);
	assert_int_equal(VFS_CALL(fs, setxattr, &f->ctx, low.ino, "user.a", "1", 1, 0), -EROFS);
	assert_int_equal(VFS_CALL(fs, removexattr, &f->ctx, low.ino, "user.a"), -EROFS);
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, top.ino, O_WRONLY, &fh), -EROFS);
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, low.ino, O_RDWR, &fh), -EROFS);
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, low.ino, O_RDONLY | O_TRUNC, &fh), -EROFS);
	/* Reading is fine, and the listing of a merged directory writes nothing. */
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, low.ino, O_RDONLY, &fh), 0);
	VFS_CALL(fs, release, low.ino, fh);
	VFS_FORGET(fs, top.ino, 1);
	VFS_FORGET(fs, low.ino, 1);
	VFS_FORGET(fs, dir.ino, 1);
	vfs_free(TAKE_PTR(fs));
	top_sum(f, after);
	assert_string_equal(before, after);
}

/*
 * aufs's whiteout files, as podman extracts layers for a mount_program:
 * ".wh.f" hides f below, ".wh..wh..opq" makes d opaque, neither is shown;
 * in the top lower of a lowers-only union and in a lower under an upper.
 */
static void check_wh_files(struct vfs *fs, const struct vfs_ctx *ctx)
{
	struct vfs_entry e, d;
	struct names l;

	list_dir(fs, ctx, VFS_ROOT_INO, &l);
	assert_null(strstr(l.list, ".wh."));
	assert_null(strstr(l.list, "f "));
	assert_non_null(strstr(l.list, "flink "));
	assert_int_equal(vfs_walk(fs, ctx, "f", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, ctx, ".wh.f", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, ctx, "d/x", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, ctx, "d", &d), 0);
	list_dir(fs, ctx, d.ino, &l);
	assert_string_equal(l.list, "mine ");
	VFS_FORGET(fs, d.ino, 1);
	assert_int_equal(vfs_walk(fs, ctx, "e/n7", &e), -ENOENT);
	assert_int_equal(vfs_walk(fs, ctx, "e/n8", &e), 0);
	VFS_FORGET(fs, e.ino, 1);
}

static void test_wh_files_whiteout_and_make_opaque(void **state)
{
	struct fixture *f = *state;
	const char *lowers[] = { f->upper, f->lower };
	char mid[128], up2[128], wk2[128];
	struct union_config cfg = { .lowers = lowers, .nlowers = 2, .flags = UNION_WH_FILES };
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_entry e;

	sh("cd %s && touch .wh.f && mkdir d e && touch d/.wh..wh..opq d/mine e/.wh.n7",
	   f->upper);
	assert_int_equal(union_new(&cfg, &fs), 0);
	check_wh_files(fs, &f->ctx);
	vfs_free(TAKE_PTR(fs));
	/* Without the flag they are plain files. */
	cfg.flags = 0;
	assert_int_equal(union_new(&cfg, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "f", &e), 0);
	VFS_FORGET(fs, e.ino, 1);
	vfs_free(TAKE_PTR(fs));
	/* The same layer as a lower below a writable upper. */
	snprintf(mid, sizeof(mid), "%s", f->upper);
	snprintf(up2, sizeof(up2), "%s/up2", f->top);
	snprintf(wk2, sizeof(wk2), "%s/wk2", f->top);
	sh("mkdir %s %s", up2, wk2);
	lowers[0] = mid;
	cfg = (struct union_config){ .lowers = lowers, .nlowers = 2, .upper = up2, .work = wk2,
				     .flags = UNION_WH_FILES | (geteuid() ? UNION_USERXATTR : 0) };
	assert_int_equal(union_new(&cfg, &fs), 0);
	check_wh_files(fs, &f->ctx);
}

static int build_mapped(struct fixture *f, unsigned flags, struct vfs **ret)
{
	static const struct union_idmap map[] = {
		{ .host = 0, .to = 1000, .count = 10 },
		{ .host = 100, .to = 2000, .count = 5 },
	};
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work, .flags = flags, .uidmap = map,
				    .gidmap = map, .nuidmap = 2, .ngidmap = 2,
				    .squash_uid = 7, .squash_gid = 8 };

	return union_new(&cfg, ret);
}

static void stat_path(const char *dir, const char *name, struct stat *st)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(lstat(path, st), 0);
}

static void test_idmap_shows_disk_ids_and_maps_callers_back(void **state)
{
	struct fixture *f = *state;
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_ctx ctx = f->ctx;
	struct vfs_entry e;
	struct stat st;
	uint64_t fh;

	if (geteuid() != 0)
		skip();
	sh("chown 102:3 %s/e/n2 && chown 20:20 %s/e/n3", f->lower, f->lower);
	lower_sum(f, f->lower_sum);
	assert_int_equal(build_mapped(f, 0, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "e/n2", &e), 0);
	assert_int_equal(e.attr.stx_uid, 2002);
	assert_int_equal(e.attr.stx_gid, 1003);
	VFS_FORGET(fs, e.ino, 1);
	/* Not in the map: the overflow id, as the kernel shows unmapped ids. */
	assert_int_equal(vfs_walk(fs, &f->ctx, "e/n3", &e), 0);
	assert_int_equal(e.attr.stx_uid, UNION_ID_OVERFLOW);
	assert_int_equal(e.attr.stx_gid, UNION_ID_OVERFLOW);
	VFS_FORGET(fs, e.ino, 1);
	/* A caller shown as 1003:2004 makes files owned by 3:104 on disk. */
	ctx.uid = 1003;
	ctx.gid = 2004;
	assert_int_equal(VFS_CALL(fs, create, &ctx, VFS_ROOT_INO, "c", 0644,
				  O_WRONLY | O_CREAT, &e, &fh), 0);
	VFS_CALL(fs, release, e.ino, fh);
	assert_int_equal(e.attr.stx_uid, 1003);
	assert_int_equal(e.attr.stx_gid, 2004);
	stat_path(f->upper, "c", &st);
	assert_int_equal(st.st_uid, 3);
	assert_int_equal(st.st_gid, 104);
	assert_int_equal(VFS_CALL(fs, mkdir, &ctx, VFS_ROOT_INO, "m", 0755, &e), 0);
	VFS_FORGET(fs, e.ino, 1);
	stat_path(f->upper, "m", &st);
	assert_int_equal(st.st_uid, 3);
	/* chown through the union: to the disk's ids; -1 stays "unchanged". */
	struct vfs_setattr a = { .valid = VFS_SET_UID | VFS_SET_GID, .uid = 1005,
				 .gid = (gid_t)-1 };
	struct statx x;
	assert_int_equal(vfs_walk(fs, &f->ctx, "c", &e), 0);
	assert_int_equal(VFS_CALL(fs, setattr, &f->ctx, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_uid, 1005);
	assert_int_equal(x.stx_gid, 2004);
	VFS_FORGET(fs, e.ino, 1);
	stat_path(f->upper, "c", &st);
	assert_int_equal(st.st_uid, 5);
	assert_int_equal(st.st_gid, 104);
}

static void test_squash_shows_one_owner(void **state)
{
	struct fixture *f = *state;
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_entry e;

	assert_int_equal(build_mapped(f, UNION_SQUASH_UID, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "f", &e), 0);
	assert_int_equal(e.attr.stx_uid, 7);
	/* The group still goes through the map: on-disk 0 is 1000. */
	assert_int_equal(e.attr.stx_gid, geteuid() ? UNION_ID_OVERFLOW : 1000);
	VFS_FORGET(fs, e.ino, 1);
	vfs_free(TAKE_PTR(fs));
	assert_int_equal(build_mapped(f, UNION_SQUASH_UID | UNION_SQUASH_GID, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "d/sub/y", &e), 0);
	assert_int_equal(e.attr.stx_uid, 7);
	assert_int_equal(e.attr.stx_gid, 8);
	VFS_FORGET(fs, e.ino, 1);
}

static void test_static_nlink_says_one_for_directories(void **state)
{
	struct fixture *f = *state;
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work, .flags = UNION_STATIC_NLINK };
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct vfs_entry e, s;
	struct statx x;

	/* A directory of the upper's own with two subdirectories: 4 links. */
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, "n", 0755, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, e.ino, "a", 0755, &s), 0);
	VFS_FORGET(f->fs, s.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, e.ino, "b", 0755, &s), 0);
	VFS_FORGET(f->fs, s.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, e.ino, VFS_NO_FH, 0,
				  STATX_BASIC_STATS, &x), 0);
	assert_int_equal(x.stx_nlink, 4);
	VFS_FORGET(f->fs, e.ino, 1);
	vfs_free(TAKE_PTR(f->fs));
	assert_int_equal(union_new(&cfg, &fs), 0);
	assert_int_equal(vfs_walk(fs, &f->ctx, "n", &e), 0);
	assert_int_equal(e.attr.stx_nlink, 1);
	VFS_FORGET(fs, e.ino, 1);
	assert_int_equal(vfs_walk(fs, &f->ctx, "f", &e), 0);
	assert_int_equal(e.attr.stx_nlink, 2);   /* files keep theirs (flink) */
	VFS_FORGET(fs, e.ino, 1);
}

static void test_bad_id_maps_are_refused(void **state)
{
	struct fixture *f = *state;
	struct union_idmap map[UNION_MAX_IDMAPS + 1] = { { 0, 0, 1 } };
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work, .uidmap = map,
				    .nuidmap = UNION_MAX_IDMAPS + 1 };
	struct vfs *fs = NULL;

	assert_int_equal(union_new(&cfg, &fs), -EINVAL);
	assert_null(fs);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_lowers_only_union_merges_top_first),
		T(test_one_lower_alone_is_a_union_too),
		T(test_wh_files_whiteout_and_make_opaque),
		T(test_lowers_only_union_refuses_every_change),
		T(test_idmap_shows_disk_ids_and_maps_callers_back),
		T(test_squash_shows_one_owner),
		T(test_static_nlink_says_one_for_directories),
		T(test_bad_id_maps_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
