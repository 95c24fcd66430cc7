/*
 * test_union.c - union over hostfs instances, driven directly through the
 * vfs table (no FUSE): copy-up keeps data and metadata and never touches the
 * lower, whiteouts and opaque directories hide lower names, readdir cookies
 * stay valid while entries come and go, st_ino survives copy-up and rebuilds,
 * hard links stay one inode, an open lower file follows its copy-up (also
 * with reads racing it), listings read lower subdirectories ahead, merged
 * directories can be exchanged, removals leave whiteouts where lowers have
 * the name and nowhere else, a changed
 * lower is refused, bad input is refused.
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

#include "pony/union.h"
#include "pony/util.h"

struct fixture {
	char top[64], lower[96], upper[96], work[96];
	struct vfs *fs;
	struct vfs_ctx ctx;
	char lower_sum[64];
};

static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* A checksum of every name, mode, size, time and byte of the lower. */
static void lower_sum(struct fixture *f, char *out)
{
	char cmd[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cd %s && (find . -printf '%%p %%y %%m %%s %%T@ %%C@\\n' | "
		 "sort; find . -type f -exec cat {} +) | md5sum", f->lower);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, 64, p));
	pclose(p);
}

static int build(struct fixture *f)
{
	const char *lowers[] = { f->lower };
	struct union_config cfg = { .lowers = lowers, .nlowers = 1, .upper = f->upper,
				    .work = f->work,
				    .flags = geteuid() ? UNION_USERXATTR : 0 };

	return union_new(&cfg, &f->fs);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	umask(0);
	strcpy(f->top, "/tmp/pony-union-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->lower, sizeof(f->lower), "%s/lower", f->top);
	snprintf(f->upper, sizeof(f->upper), "%s/upper", f->top);
	snprintf(f->work, sizeof(f->work), "%s/work", f->top);
	sh("cd %s && mkdir -p lower/d/sub lower/e upper work && echo data > lower/f && "
	   "chmod 640 lower/f && touch -d 2001-02-03 lower/f && echo x > lower/d/x && "
	   "echo y > lower/d/sub/y && ln lower/f lower/flink && ln -s f lower/sym && "
	   "for i in $(seq 1 40); do echo $i > lower/e/n$i; done", f->top);
	lower_sum(f, f->lower_sum);
	assert_int_equal(build(f), 0);
	vfs_ctx_self(&f->ctx);
	f->ctx.umask = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char sum[64];

	vfs_free(f->fs);
	lower_sum(f, sum);
	assert_string_equal(sum, f->lower_sum); /* the lower never changes */
	sh("rm -rf %s", f->top);
	free(f);
	return 0;
}

static void remount(struct fixture *f)
{
	vfs_free(f->fs);
	f->fs = NULL;
	assert_int_equal(build(f), 0);
}

static void walk(struct fixture *f, const char *path, struct vfs_entry *e)
{
	assert_int_equal(vfs_walk(f->fs, &f->ctx, path, e), 0);
}

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

static int open_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
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
	before = open_fd_count();
	walk(f, "f", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDONLY, &fh), 0);
	walk(f, "d/x", &e);
	assert_int_equal(VFS_CALL(f->fs, open, &f->ctx, e.ino, O_RDWR, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, create, &f->ctx, VFS_ROOT_INO, "new", 0644,
				  O_RDWR, &c, &fh), 0);
	assert_true(open_fd_count() > before);
	remount(f);
	assert_int_equal(open_fd_count(), before);
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
	before = open_fd_count();
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "e/n%d", i + 1);
		walk(f, path, &e);
		items[i] = (struct vfs_forget){ .ino = e.ino, .nlookup = 1 };
		if (i % 2 == 0) {
			walk(f, path, &e);
			items[i].nlookup = 2;
		}
	}
	assert_true(open_fd_count() > before);
	items[38].nlookup = 1;          /* looked up twice, forgotten once */
	vfs_forget_many(f->fs, items, 40);
	assert_int_equal(VFS_CALL(f->fs, statx, &f->ctx, items[38].ino, VFS_NO_FH, 0,
				  STATX_SIZE, &st), 0);
	assert_int_equal(st.stx_size, 3);       /* "39\n" */
	vfs_forget_many(f->fs, &items[38], 1);
	walk(f, "e", &e);                        /* the walk's own references */
	VFS_FORGET(f->fs, e.ino, 1);
	assert_int_equal(open_fd_count(), before);
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

	if (geteuid() != 0)
		skip();
	sh("mkdir %s/bad && setfattr -n trusted.overlay.redirect -v '../../etc' %s/bad 2>/dev/null"
	   " || python3 -c \"import os; os.setxattr('%s/bad', 'trusted.overlay.redirect', "
	   "b'../../etc')\"", f->upper, f->upper, f->upper);
	remount(f);
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
		T(test_copy_up_keeps_data_mode_times_and_xattrs),
		T(test_st_ino_is_stable_across_copy_up_and_rebuild),
		T(test_hard_links_stay_one_inode_after_copy_up_and_rebuild),
		T(test_files_open_at_unmount_are_released),
		T(test_forget_batch_drops_what_it_names),
		T(test_data_fd_holds_what_read_gives),
		T(test_reader_of_lower_file_follows_copy_up),
		T(test_reads_racing_a_copy_up_stay_good),
		T(test_listing_reads_lower_subdirectories_ahead),
		T(test_readdir_cookies_survive_adds_and_removes),
		T(test_readdir_without_opendir_resumes_by_cookie),
		T(test_whiteout_and_opaque_dir_hide_lower_names),
		T(test_whiteouts_share_one_inode),
		T(test_remove_leaves_whiteouts_only_over_lower_names),
		T(test_create_in_dir_without_lowers_replaces_whiteouts),
		T(test_directory_rename_keeps_lower_contents),
		T(test_exchange_of_merged_directories_keeps_both_lowers),
		T(test_rename_over_lower_file_leaves_a_whiteout),
		T(test_changed_lower_is_refused_until_rebuilt),
		T(test_bad_layers_and_names_are_refused),
		T(test_corrupt_redirect_is_an_error_not_a_wrong_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
