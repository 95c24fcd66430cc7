/*
 * test_hostfs.c - hostfs driven directly through its vfs table: what it
 * creates appears in the host directory, hard links are one inode, lookups
 * of new and known inodes give the host's, readdir
 * cookies resume where they said, bad names and read-only mode are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "../open_fds.h"
#include "pony/hostfs.h"
#include "pony/util.h"

struct fixture {
	char dir[64];
	struct vfs *fs;
	struct vfs_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/pony-hostfs-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(hostfs_new(f->dir, 0, &f->fs), 0);
	vfs_ctx_self(&f->ctx);
	f->ctx.umask = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	vfs_free(f->fs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void test_create_write_read_reaches_the_host(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;
	uint64_t fh;
	char buf[16] = { 0 }, path[128];
	struct stat st;

	assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, VFS_ROOT_INO, "a", 0640,
				  O_RDWR, &e, &fh), 0);
	assert_true(S_ISREG(e.attr.stx_mode));
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "hello", 5, 0), 5);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, buf, sizeof(buf), 1), 4);
	assert_string_equal(buf, "ello");
	VFS_CALL(f->fs, release, e.ino, fh);
	snprintf(path, sizeof(path), "%s/a", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_ino, e.attr.stx_ino);
	VFS_FORGET(f->fs, e.ino, 1);
}

static void test_hard_links_are_one_inode(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry a, b, c;

	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, VFS_ROOT_INO, "a", S_IFREG | 0600,
				  0, &a), 0);
	assert_int_equal(VFS_CALL(f->fs, link, &f->ctx, a.ino, VFS_ROOT_INO, "b", &b), 0);
	assert_int_equal(a.ino, b.ino);
	assert_int_equal(b.attr.stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, "b", &c), 0);
	assert_int_equal(c.ino, a.ino);
	VFS_FORGET(f->fs, a.ino, 3);
}

/* A link asked for no entry (the union's whiteouts) is made all the same,
 * and takes no reference: one forget of the mknod's frees the inode (its
 * descriptor closes). */
static void test_link_without_entry(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry a, c;
	char pa[128], pb[128];
	struct stat sa, sb;
	int before = open_fds();

	assert_true(before > 0);

	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, VFS_ROOT_INO, "a", S_IFREG | 0600,
				  0, &a), 0);
	assert_int_equal(open_fds(), before + 1);
	assert_int_equal(VFS_CALL(f->fs, link, &f->ctx, a.ino, VFS_ROOT_INO, "b", NULL), 0);
	snprintf(pa, sizeof(pa), "%s/a", f->dir);
	snprintf(pb, sizeof(pb), "%s/b", f->dir);
	assert_int_equal(stat(pa, &sa), 0);
	assert_int_equal(stat(pb, &sb), 0);
	assert_int_equal(sa.st_ino, sb.st_ino);
	assert_int_equal(sb.st_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, link, &f->ctx, a.ino, VFS_ROOT_INO, "b", NULL), -EEXIST);
	VFS_FORGET(f->fs, a.ino, 1);
	assert_int_equal(open_fds(), before);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, "b", &c), 0);
	assert_int_equal(c.attr.stx_ino, sb.st_ino);
	VFS_FORGET(f->fs, c.ino, 1);
}

/* Looks up name in the root and checks the entry against the host's. */
static uint64_t lookup_checked(struct fixture *f, const char *name)
{
	char path[128];
	struct vfs_entry e;
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, name, &e), 0);
	assert_int_equal(e.attr.stx_ino, st.st_ino);
	assert_int_equal(e.attr.stx_size, st.st_size);
	return e.ino;
}

/*
 * Lookups of new names and of names whose inodes the table holds, in runs
 * long enough to switch the order hostfs tries (open first, statx first)
 * both ways, with names swapped on the host between them: every answer is
 * the host's inode, and one inode's lookups are one id.
 */
static void test_lookups_new_and_known_give_the_hosts_inode(void **state)
{
	struct fixture *f = *state;
	uint64_t id[3][40];
	char name[16], cmd[160];

	snprintf(cmd, sizeof(cmd), "cd %s && for i in $(seq 0 39); do head -c $i /dev/zero "
		 "> n$i; done", f->dir);
	assert_int_equal(system(cmd), 0);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "n%d", i);
			id[round][i] = lookup_checked(f, name);
			if (round)
				assert_int_equal(id[round][i], id[0][i ^ (round == 2)]);
		}
		/* Names swapped pairwise on the host: n0 <-> n1, ... */
		snprintf(cmd, sizeof(cmd), "cd %s && for i in $(seq 0 2 38); do mv n$i t && "
			 "mv n$((i + 1)) n$i && mv t n$((i + 1)); done", f->dir);
		if (round == 1)
			assert_int_equal(system(cmd), 0);
	}
	for (int i = 0; i < 40; i++)
		VFS_FORGET(f->fs, id[0][i], 3);
	/* All forgotten: new inodes again, still the host's. */
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		VFS_FORGET(f->fs, lookup_checked(f, name), 1);
	}
}

struct names { char name[64][16]; uint64_t next[64]; int n, limit; };

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct names *ns = data;

	if (ns->n == ns->limit)
		return 1;
	snprintf(ns->name[ns->n], 16, "%s", name);
	ns->next[ns->n++] = next;
	return 0;
}

static void test_readdir_resumes_at_a_cookie(void **state)
{
	struct fixture *f = *state;
	struct names all = { .limit = 64 }, part = { .limit = 64 };
	struct vfs_entry e;
	uint64_t dh;

	for (int i = 0; i < 10; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, name, 0755, &e), 0);
		VFS_FORGET(f->fs, e.ino, 1);
	}
	assert_int_equal(VFS_CALL(f->fs, opendir, &f->ctx, VFS_ROOT_INO, &dh), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, VFS_ROOT_INO, dh, 0, collect, &all), 0);
	assert_int_equal(all.n, 12);
	/* Resume after the fifth entry: the rest, in the same order. */
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, VFS_ROOT_INO, dh, all.next[4],
				  collect, &part), 0);
	assert_int_equal(part.n, 7);
	for (int i = 0; i < 7; i++)
		assert_string_equal(part.name[i], all.name[i + 5]);
	VFS_CALL(f->fs, releasedir, VFS_ROOT_INO, dh);
}

static void test_bad_names_are_refused(void **state)
{
	struct fixture *f = *state;
	char longname[NAME_MAX + 2];
	struct vfs_entry e;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, longname, &e),
			 -ENAMETOOLONG);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &f->ctx, VFS_ROOT_INO, longname, 0755, &e),
			 -ENAMETOOLONG);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, "a/b", &e), -EINVAL);
	assert_int_equal(VFS_CALL(f->fs, lookup, &f->ctx, VFS_ROOT_INO, "nope", &e), -ENOENT);
}

static void test_xattrs_and_whiteout_nodes_round_trip(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;
	char buf[16];

	if (geteuid() != 0)
		skip();
	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, VFS_ROOT_INO, "wh", S_IFCHR | 0,
				  makedev(0, 0), &e), 0);
	assert_true(S_ISCHR(e.attr.stx_mode));
	assert_int_equal(e.attr.stx_rdev_major, 0);
	assert_int_equal(VFS_CALL(f->fs, setxattr, &f->ctx, VFS_ROOT_INO, "trusted.pony", "y", 1,
				  0), 0);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &f->ctx, VFS_ROOT_INO, "trusted.pony", buf,
				  sizeof(buf)), 1);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &f->ctx, VFS_ROOT_INO, "trusted.pony", buf, 0),
			 1);
	VFS_FORGET(f->fs, e.ino, 1);
}

static void test_readonly_instance_refuses_changes(void **state)
{
	struct fixture *f = *state;
	struct vfs *ro;
	struct vfs_entry e;
	uint64_t fh;

	assert_int_equal(hostfs_new(f->dir, HOSTFS_READONLY, &ro), 0);
	assert_int_equal(VFS_CALL(ro, mkdir, &f->ctx, VFS_ROOT_INO, "d", 0755, &e), -EROFS);
	assert_int_equal(VFS_CALL(ro, create, &f->ctx, VFS_ROOT_INO, "c", 0644, O_RDWR, &e, &fh),
			 -EROFS);
	vfs_free(ro);
}

/* Past a share of RLIMIT_NOFILE, files are kept as handles (root): an
 * instance holds more files than it could hold descriptors. */
static void test_holds_more_files_than_descriptors(void **state)
{
	struct fixture *f = *state;
	struct rlimit old, low = { .rlim_cur = 64 };
	struct vfs_entry e[200], again;
	char name[16], buf[8];
	struct vfs *fs;
	uint64_t fh;

	if (geteuid() != 0)
		skip();
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(hostfs_new(f->dir, 0, &fs), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(VFS_CALL(fs, mknod, &f->ctx, VFS_ROOT_INO, name, S_IFREG | 0644,
					  0, &e[i]), 0);
	}
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(VFS_CALL(fs, lookup, &f->ctx, VFS_ROOT_INO, name, &again), 0);
		assert_int_equal(again.ino, e[i].ino);
	}
	assert_int_equal(VFS_CALL(fs, open, &f->ctx, e[199].ino, O_RDWR, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, e[199].ino, fh, "ok", 2, 0), 2);
	assert_int_equal(VFS_CALL(fs, read, e[199].ino, fh, buf, sizeof(buf), 0), 2);
	VFS_CALL(fs, release, e[199].ino, fh);
	/* A file is no directory: names under it are ENOTDIR, not EBADF. */
	assert_int_equal(VFS_CALL(fs, lookup, &f->ctx, e[150].ino, "x", &again), -ENOTDIR);
	assert_int_equal(VFS_CALL(fs, mkdir, &f->ctx, e[150].ino, "x", 0755, &again), -ENOTDIR);
	for (int i = 0; i < 200; i++)
		VFS_FORGET(fs, e[i].ino, 2);
	vfs_free(fs);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void test_missing_root_is_enoent(void **state)
{
	struct vfs *fs;

	assert_int_equal(hostfs_new("/nonexistent/pony", 0, &fs), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_write_read_reaches_the_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_are_one_inode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_without_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookups_new_and_known_give_the_hosts_inode,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_resumes_at_a_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattrs_and_whiteout_nodes_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_instance_refuses_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_more_files_than_descriptors, setup, teardown),
		cmocka_unit_test(test_missing_root_is_enoent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
