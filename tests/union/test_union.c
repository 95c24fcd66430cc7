/*
 * test_union.c - union over hostfs instances, driven directly through the
 * vfs table (no FUSE): copy-up keeps data and metadata and never touches the
 * lower, st_ino survives copy-up and rebuilds, hard links stay one inode
 * (a lookup of a copied-up one's other name writes nothing), a setattr
 * changing nothing moves the ctime,
 * open files and forgotten ids let their layers go, an open lower file
 * follows its copy-up (also with reads racing it), listings read lower
 * subdirectories ahead, readdir cookies stay valid while entries come and
 * go. Names (whiteouts, removals, creates, renames, bad input) are
 * test_union_names.c's.
 */
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
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <cmocka.h>

#include "../open_fds.h"
#include "pony/util.h"
#include "union_fixture.h"

static void test_copy_up_keeps_data_mode_times_and_xattrs(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e, after;
	uint64_t fh;
	char buf[32] = { 0 }, path[160];
	struct stat st;

	sh("setfattr -n user.color -v blue %s/f 2>/dev/null || "
	   "python3 -c \"import os; os.setxattr('%s/f', 'user.color', b'blue')\"", f->lower,
	   f->lower);
	lower_sum(f, f->lower_sum);
	walk(f, "f", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDWR, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "DA", 2, 0), 2);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, buf, sizeof(buf), 0), 5);
	assert_string_equal(buf, "DAta\n");
	VFS_CALL(f->fs, release, e.ino, fh);
	snprintf(path, sizeof(path), "%s/f", f->upper);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(VFS_CALL(f->fs, getxattr, &f->ctx, e.ino, "user.color", buf,
				  sizeof(buf)), 4);
	assert_memory_equal(buf, "blue", 4);
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, e.ino, VFS_NO_FH, 0,
				  STATX_BASIC_STATS, &after.attr), 0);
	assert_int_equal(after.attr.stx_ino, e.attr.stx_ino); /* same st_ino after copy-up */
	VFS_FORGET(f->fs, e.ino, 1);
}

static void test_st_ino_is_stable_across_copy_up_and_rebuild(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e, d;
	struct vfs_setattr a = { .valid = VFS_SET_MODE, .mode = 0600 };
	struct statx x;

	walk(f, "d/x", &e);
	uint64_t ino = e.attr.stx_ino;
	assert_int_equal(VFS_CALL(f->fs, setattr, &f->ctx, e.ino, VFS_NO_FH, &a, &x), 0);
	assert_int_equal(x.stx_ino, ino);
	VFS_FORGET(f->fs, e.ino, 1);
	walk(f, "d", &d);
	uint64_t dino = d.attr.stx_ino;
	VFS_FORGET(f->fs, d.ino, 1);
	remount(f);
	walk(f, "d/x", &e);
	assert_int_equal(e.attr.stx_ino, ino);
	assert_int_equal(e.attr.stx_mode & 07777, 0600);
	walk(f, "d", &d);
	assert_int_equal(d.attr.stx_ino, dino);
	VFS_FORGET(f->fs, e.ino, 1);
	VFS_FORGET(f->fs, d.ino, 1);
}

static void test_hard_links_stay_one_inode_after_copy_up_and_rebuild(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry a, b;
	uint64_t fh;
	char buf[16] = { 0 };

	walk(f, "f", &a);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, a.ino, O_WRONLY | O_TRUNC, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, a.ino, fh, "new\n", 4, 0), 4);
	VFS_CALL(f->fs, release, a.ino, fh);
	struct statx x;
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, a.ino, VFS_NO_FH, 0, STATX_BASIC_STATS,
				  &x), 0);
	assert_int_equal(x.stx_nlink, 2); /* before "flink" is looked up */
	VFS_FORGET(f->fs, a.ino, 1);
	remount(f);
	walk(f, "flink", &b);
	assert_int_equal(b.attr.stx_size, 4);
	assert_int_equal(b.attr.stx_nlink, 2);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, b.ino, O_RDONLY, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, b.ino, fh, buf, sizeof(buf), 0), 4);
	assert_string_equal(buf, "new\n");
	VFS_CALL(f->fs, release, b.ino, fh);
	walk(f, "f", &a);
	assert_int_equal(a.ino, b.ino);
	VFS_FORGET(f->fs, a.ino, 1);
	VFS_FORGET(f->fs, b.ino, 1);
}

/* Whether the upper has path (lstat), and if so a whiteout there. */
static int upper_has(struct fixture *f, const char *path)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", f->upper, path);
	if (lstat(p, &st) < 0)
		return 0;
	return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) ? 2 : 1;
}

/* As overlayfs with index=on: once f is copied up, a lookup of its other
 * name flink writes nothing to the upper (in this mount or the next) and
 * shows f's inode; removing flink then drops f's link count. */
static void test_lookup_of_other_hard_link_name_writes_nothing(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry a, b;
	char buf[16] = { 0 };
	uint64_t fh;

	walk(f, "f", &a);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, a.ino, O_WRONLY | O_TRUNC, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, a.ino, fh, "new\n", 4, 0), 4);
	VFS_CALL(f->fs, release, a.ino, fh);
	for (int pass = 0; pass < 2; pass++) {
		walk(f, "flink", &b);
		assert_int_equal(b.ino, a.ino);
		assert_int_equal(b.attr.stx_ino, a.attr.stx_ino);
		assert_int_equal(b.attr.stx_nlink, 2);
		assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, b.ino, O_RDONLY, &fh), 0);
		assert_int_equal(VFS_CALL(f->fs, read, b.ino, fh, buf, sizeof(buf), 0), 4);
		assert_string_equal(buf, "new\n");
		VFS_CALL(f->fs, release, b.ino, fh);
		assert_int_equal(upper_has(f, "flink"), 0);
		VFS_FORGET(f->fs, b.ino, 1);
		VFS_FORGET(f->fs, a.ino, 1);
		remount(f);
		walk(f, "f", &a);
	}
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, VFS_ROOT_INO, "flink"), 0);
	assert_int_equal(upper_has(f, "flink"), 2);
	struct statx x;
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, a.ino, VFS_NO_FH, 0, STATX_BASIC_STATS,
				  &x), 0);
	assert_int_equal(x.stx_nlink, 1);
	VFS_FORGET(f->fs, a.ino, 1);
}

/* chown(f, -1, -1) comes as a setattr changing nothing: as on ext4 and
 * ponyfs, the ctime moves and suid goes. */
static void test_setattr_changing_nothing_updates_ctime(void **state)
{
	struct fixture *f = *state;
	struct vfs_setattr none = { .valid = 0 }, mode = { .valid = VFS_SET_MODE, .mode = 04755 };
	struct vfs_entry e;
	struct statx x;
	uint64_t fh;

	assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, VFS_ROOT_INO, "c", 0644, O_WRONLY, &e,
				  &fh), 0);
	VFS_CALL(f->fs, release, e.ino, fh);
	assert_int_equal(VFS_CALL(f->fs, setattr, &f->ctx, e.ino, VFS_NO_FH, &mode, &x), 0);
	struct statx_timestamp before = x.stx_ctime;
	usleep(20000);
	assert_int_equal(VFS_CALL(f->fs, setattr, &f->ctx, e.ino, VFS_NO_FH, &none, &x), 0);
	assert_true(x.stx_ctime.tv_sec > before.tv_sec ||
		    (x.stx_ctime.tv_sec == before.tv_sec && x.stx_ctime.tv_nsec > before.tv_nsec));
	assert_int_equal(x.stx_mode & 07777, 0755);
	VFS_FORGET(f->fs, e.ino, 1);
}

/* A FUSE mount that ends drops the RELEASEs still queued: the union closes
 * what is still open when it goes away (a lower open, a copied-up one, a
 * new file), leaving no descriptor of the layers behind (nor memory, which
 * the ASan build checks). */
static void test_files_open_at_unmount_are_released(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e, c;
	uint64_t fh;
	int before;

	remount(f);             /* the layers' own descriptors are counted in before */
	before = open_fds();
	walk(f, "f", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDONLY, &fh), 0);
	walk(f, "d/x", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDWR, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, VFS_ROOT_INO, "new", 0644,
				  O_RDWR, &c, &fh), 0);
	assert_true(open_fds() > before);
	remount(f);
	assert_int_equal(open_fds(), before);
}

/* A batch of forgets (FUSE's BATCH_FORGET after an rm -rf) drops exactly
 * the references it names: ids looked up twice and forgotten once stay
 * usable, the rest let their layers' descriptors go. */
static void test_forget_batch_drops_what_it_names(void **state)
{
	struct fixture *f = *state;
	struct vfs_forget items[40];
	struct vfs_entry e;
	struct statx st;
	char path[32];
	int before;

	remount(f);
	before = open_fds();
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "e/n%d", i + 1);
		walk(f, path, &e);
		items[i] = (struct vfs_forget){ .ino = e.ino, .nlookup = 1 };
		if (i % 2 == 0) {
			walk(f, path, &e);
			items[i].nlookup = 2;
		}
	}
	assert_true(open_fds() > before);
	items[38].nlookup = 1;          /* looked up twice, forgotten once */
	vfs_forget_many(f->fs, items, 40);
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, items[38].ino, VFS_NO_FH, 0,
				  STATX_SIZE, &st), 0);
	assert_int_equal(st.stx_size, 3);       /* "39\n" */
	vfs_forget_many(f->fs, &items[38], 1);
	walk(f, "e", &e);                        /* the walk's own references */
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(open_fds(), before);
}

/* The descriptor the FUSE front end splices reads from holds the bytes
 * read gives: the lower's before copy-up, the upper's after. */
static void test_data_fd_holds_what_read_gives(void **state)
{
	struct fixture *f = *state;
	char buf[16] = { 0 };
	struct vfs_entry e;
	uint64_t fh;
	int fd;

	walk(f, "d/x", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDONLY, &fh), 0);
	fd = VFS_CALL(f->fs, data_fd, e.ino, fh);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 2);
	assert_string_equal(buf, "x\n");
	VFS_CALL(f->fs, release, e.ino, fh);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDWR, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, fh, "up", 2, 0), 2);
	fd = VFS_CALL(f->fs, data_fd, e.ino, fh);
	assert_true(fd >= 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 2);
	assert_string_equal(buf, "up");
	VFS_CALL(f->fs, release, e.ino, fh);
	VFS_FORGET(f->fs, e.ino, 1);
}

/* A lower file held open for reading while another open copies it up and
 * writes shows the upper's data at its next read, fstat and splice, as the
 * kernel's overlayfs does; the reader holds another name of the hard link,
 * which is the same node. The descriptor borrowed before stays valid. */
static void test_reader_of_lower_file_follows_copy_up(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e, link;
	char buf[32] = { 0 };
	uint64_t rfh, wfh;
	struct statx x;
	int old_fd, fd;

	walk(f, "flink", &link);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, link.ino, O_RDONLY, &rfh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, link.ino, rfh, buf, sizeof(buf), 0), 5);
	assert_string_equal(buf, "data\n");
	old_fd = VFS_CALL(f->fs, data_fd, link.ino, rfh);
	assert_true(old_fd >= 0);
	assert_false(f->fs->ops->data_fd_stable(f->fs, link.ino, rfh));

	walk(f, "f", &e);
	assert_int_equal(e.ino, link.ino);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_WRONLY | O_TRUNC, &wfh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, e.ino, wfh, "new upper data", 14, 0), 14);
	VFS_CALL(f->fs, release, e.ino, wfh);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(VFS_CALL(f->fs, read, link.ino, rfh, buf, sizeof(buf), 0), 14);
	assert_string_equal(buf, "new upper data");
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, link.ino, rfh, 0, STATX_BASIC_STATS,
				  &x), 0);
	assert_int_equal(x.stx_size, 14);
	assert_int_equal(x.stx_ino, e.attr.stx_ino);
	assert_true(f->fs->ops->data_fd_stable(f->fs, link.ino, rfh));
	fd = VFS_CALL(f->fs, data_fd, link.ino, rfh);
	assert_true(fd >= 0 && fd != old_fd);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 14);
	/* The replaced lower descriptor is still open, on the lower's data. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(pread(old_fd, buf, sizeof(buf), 0), 5);
	assert_string_equal(buf, "data\n");
	VFS_CALL(f->fs, release, link.ino, rfh);
	VFS_FORGET(f->fs, e.ino, 1);
	VFS_FORGET(f->fs, link.ino, 1);
}

struct racer {
	struct vfs *fs;
	uint64_t ino, fh;
	atomic_bool *stop;
	int bad;
	long reads;
};

static void *race_reads(void *arg)
{
	struct racer *r = arg;
	struct statx x;
	char buf[8];

	while (!atomic_load(r->stop) || r->reads == 0) {
		int fd = VFS_CALL(r->fs, data_fd, r->ino, r->fh);

		if (VFS_CALL(r->fs, read, r->ino, r->fh, buf, sizeof(buf), 0) != 2 ||
		    memcmp(buf, "1\n", 2) || fd < 0 || pread(fd, buf, sizeof(buf), 0) != 2 ||
		    VFS_CALL(r->fs, statx, NULL, r->ino, r->fh, 0, STATX_SIZE, &x) ||
		    x.stx_size != 2)
			r->bad++;
		r->reads++;
	}
	return NULL;
}

/* Reads on other threads through one open handle while a chmod copies the
 * file up: every read, splice descriptor and fstat stays good (the replaced
 * handle is kept until release; ASan sees any use after free). */
static void test_reads_racing_a_copy_up_stay_good(void **state)
{
	struct fixture *f = *state;
	struct vfs_setattr a = { .valid = VFS_SET_MODE, .mode = 0604 };
	atomic_bool stop = false;
	struct racer r[4];
	pthread_t t[4];
	struct vfs_entry e;
	struct statx x;
	uint64_t fh;

	walk(f, "e/n1", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDONLY, &fh), 0);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){ .fs = f->fs, .ino = e.ino, .fh = fh, .stop = &stop };
		assert_int_equal(pthread_create(&t[i], NULL, race_reads, &r[i]), 0);
	}
	usleep(20000);
	assert_int_equal(VFS_CALL(f->fs, setattr, &f->ctx, e.ino, VFS_NO_FH, &a, &x), 0);
	usleep(20000);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].bad, 0);
	}
	assert_true(f->fs->ops->data_fd_stable(f->fs, e.ino, fh));
	VFS_CALL(f->fs, release, e.ino, fh);
	VFS_FORGET(f->fs, e.ino, 1);
}

static unsigned long long counter(struct vfs *fs, const char *name)
{
	char buf[256], *p;

	assert_true(VFS_CALL(fs, counters, buf, sizeof(buf)) > 0);
	p = strstr(buf, name);
	assert_non_null(p);
	return strtoull(p + strlen(name) + 1, NULL, 10);
}

static int count_entry(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	++*(int *)data;
	return 0;
}

/* Listing a directory has its lower subdirectories read ahead on the
 * union's thread (what a cold `find` waits for), and nothing shown
 * changes; with UNION_NO_PREFETCH nothing is read ahead. */
/* A copy-up's data is copied with the union's lock dropped (copy_up.c). */
struct opener {
	struct fixture *f;
	uint64_t ino;
	int result;
	atomic_bool done;
};

static void *open_for_write(void *arg)
{
	struct opener *o = arg;
	uint64_t fh;

	o->result = VFS_CALL(o->f->fs, open, &o->f->ctx, o->ino, O_WRONLY, &fh);
	if (o->result == 0)
		VFS_CALL(o->f->fs, release, o->ino, fh);
	atomic_store(&o->done, true);
	return NULL;
}

/* Whether work/work holds a regular file: a copy under way. */
static bool copy_in_work(struct fixture *f)
{
	char dir[160];
	struct dirent *d;
	bool found = false;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/work", f->work);
	dp = opendir(dir);
	while (dp && (d = readdir(dp)))
		found |= d->d_type == DT_REG && !strncmp(d->d_name, "#pony.", 6);
	if (dp)
		closedir(dp);
	return found;
}

/* While a big file's data is copied up, other calls go on (they did not
 * while the lock was held for the whole copy), and an unlink of that very
 * file waits for the copy, then removes it: no copy is left behind. */
static void test_copy_up_of_data_lets_other_calls_run(void **state)
{
	struct fixture *f = *state;
	struct opener o = { .f = f };
	struct vfs_entry big, other, gone;
	unsigned during = 0;
	pthread_t t;
	struct statx x;

	sh("dd if=/dev/urandom of=%s/big bs=1M count=192 status=none", f->lower);
	lower_sum(f, f->lower_sum);
	remount(f);
	walk(f, "big", &big);
	walk(f, "d/x", &other);
	o.ino = big.ino;
	assert_int_equal(pthread_create(&t, NULL, open_for_write, &o), 0);
	while (!atomic_load(&o.done) && !copy_in_work(f))
		usleep(200);
	while (!atomic_load(&o.done)) {
		assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, other.ino, VFS_NO_FH, 0,
					  STATX_BASIC_STATS, &x), 0);
		if (!atomic_load(&o.done))
			during++;
		if (during == 20)
			break;
	}
	print_message("%u statx calls answered during the copy-up\n", during);
	assert_true(during >= 20);
	/* The copy is still running: the unlink waits for it. */
	assert_false(atomic_load(&o.done));
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, VFS_ROOT_INO, "big"), 0);
	pthread_join(t, NULL);
	/* An unlink that went first would have left a whiteout where the
	 * copy's rename (RENAME_NOREPLACE) then failed. */
	assert_int_equal(o.result, 0);
	assert_int_equal(vfs_walk(f->fs, &f->ctx, "big", &gone), -ENOENT);
	assert_false(copy_in_work(f));
	VFS_FORGET(f->fs, big.ino, 1);
}

static void test_listing_reads_lower_subdirectories_ahead(void **state)
{
	struct fixture *f = *state;
	struct vfs_entry e;
	int n = 0;

	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, VFS_ROOT_INO, VFS_NO_FH, 0,
				  count_entry, &n), 0);
	/* ".", "..", d, e, f, flink, sym; d and e are lower directories. */
	assert_int_equal(n, 7);
	for (int i = 0; i < 500 && counter(f->fs, "union_prefetch_dirs") < 2; i++)
		usleep(10000);
	assert_int_equal(counter(f->fs, "union_prefetch_dirs"), 2);
	assert_int_equal(counter(f->fs, "union_prefetch_queued"), 0);
	/* The thread's lookups of e's entries serve the walker's. */
	walk(f, "e/n7", &e);
	assert_int_equal(e.attr.stx_size, 2);
	assert_int_equal(counter(f->fs, "union_prefetch_lookups_taken"), 1);
	VFS_FORGET(f->fs, e.ino, 1);
	n = 0;
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, VFS_ROOT_INO, VFS_NO_FH, 0,
				  count_entry, &n), 0);
	assert_int_equal(n, 7);

	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work, .flags = UNION_NO_PREFETCH |
				    (geteuid() ? UNION_USERXATTR : 0) };
	vfs_free(f->fs);
	assert_int_equal(union_new(&cfg, &f->fs), 0);
	n = 0;
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, VFS_ROOT_INO, VFS_NO_FH, 0,
				  count_entry, &n), 0);
	usleep(50000);
	assert_int_equal(counter(f->fs, "union_prefetch_dirs"), 0);
}

struct names { char name[128][16]; uint64_t next[128]; int n; };

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct names *ns = data;

	if (ns->n == 128)
		return 1;
	snprintf(ns->name[ns->n], 16, "%s", name);
	ns->next[ns->n++] = next;
	return 0;
}

static bool listed(const struct names *ns, const char *name)
{
	for (int i = 0; i < ns->n; i++)
		if (!strcmp(ns->name[i], name))
			return true;
	return false;
}

static void test_readdir_cookies_survive_adds_and_removes(void **state)
{
	struct fixture *f = *state;
	struct names all = { .n = 0 }, rest = { .n = 0 };
	struct vfs_entry d, e;
	uint64_t dh;

	walk(f, "e", &d);
	assert_int_equal(VFS_CALL(f->fs, opendir, &f->ctx, d.ino, &dh), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, dh, 0, collect, &all), 0);
	assert_int_equal(all.n, 42);
	/* Remove and add names, then resume after the 20th entry. */
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, all.name[30]), 0);
	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, d.ino, "added", S_IFREG | 0644, 0, &e),
			 0);
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, dh, all.next[19], collect,
				  &rest), 0);
	/* Entries 20..41 of the first listing come back, in order, none twice. */
	for (int i = 20, j = 0; i < all.n; i++, j++)
		assert_string_equal(rest.name[j], all.name[i]);
	VFS_CALL(f->fs, releasedir, d.ino, dh);
	/* A new listing: the removed name gone (whiteout), the new one there. */
	struct names again = { .n = 0 };
	assert_int_equal(VFS_CALL(f->fs, opendir, &f->ctx, d.ino, &dh), 0);
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, dh, 0, collect, &again), 0);
	assert_false(listed(&again, all.name[30]));
	assert_true(listed(&again, "added"));
	assert_int_equal(again.n, 42);
	VFS_CALL(f->fs, releasedir, d.ino, dh);
	VFS_FORGET(f->fs, d.ino, 1);
}

/* The FUSE front end lists union directories without opendir (no OPENDIR
 * round trip): readdir by inode alone keeps the same cookie guarantees. */
static void test_readdir_without_opendir_resumes_by_cookie(void **state)
{
	struct fixture *f = *state;
	struct names all = { .n = 0 }, rest = { .n = 0 }, again = { .n = 0 };
	struct vfs_entry d, e;

	walk(f, "e", &d);
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, VFS_NO_FH, 0, collect, &all),
			 0);
	assert_int_equal(all.n, 42);
	assert_int_equal(VFS_CALL(f->fs, unlink, &f->ctx, d.ino, all.name[30]), 0);
	assert_int_equal(VFS_CALL(f->fs, mknod, &f->ctx, d.ino, "added2", S_IFREG | 0644, 0, &e),
			 0);
	VFS_FORGET(f->fs, e.ino, 1);
	/* Resuming after the 20th: the rest of the listing taken at cookie 0
	 * (a snapshot, as opendir's), in order, nothing twice. */
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, VFS_NO_FH, all.next[19],
				  collect, &rest), 0);
	for (int i = 20, j = 0; i < all.n; i++, j++)
		assert_string_equal(rest.name[j], all.name[i]);
	/* From cookie 0 again: a fresh listing. */
	assert_int_equal(VFS_CALL(f->fs, readdir, &f->ctx, d.ino, VFS_NO_FH, 0, collect, &again),
			 0);
	assert_false(listed(&again, all.name[30]));
	assert_true(listed(&again, "added2"));
	assert_int_equal(again.n, 42);
	VFS_FORGET(f->fs, d.ino, 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_copy_up_keeps_data_mode_times_and_xattrs),
		T(test_st_ino_is_stable_across_copy_up_and_rebuild),
		T(test_hard_links_stay_one_inode_after_copy_up_and_rebuild),
		T(test_lookup_of_other_hard_link_name_writes_nothing),
		T(test_setattr_changing_nothing_updates_ctime),
		T(test_files_open_at_unmount_are_released),
		T(test_forget_batch_drops_what_it_names),
		T(test_data_fd_holds_what_read_gives),
		T(test_reader_of_lower_file_follows_copy_up),
		T(test_reads_racing_a_copy_up_stay_good),
		T(test_copy_up_of_data_lets_other_calls_run),
		T(test_listing_reads_lower_subdirectories_ahead),
		T(test_readdir_cookies_survive_adds_and_removes),
		T(test_readdir_without_opendir_resumes_by_cookie),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
