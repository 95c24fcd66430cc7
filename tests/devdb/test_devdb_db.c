/*
 * test_devdb_db.c - the database API on a real SQLite file: lookups are
 * index hits (AND of terms, quoted specs), a changed device is re-probed at
 * lookup time and its stale tags are not returned, a vanished one is marked
 * absent, duplicate UUIDs are kept and reported, remote devices come back as
 * not present, and a million synthetic entries still answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pony/devdb.h"
#include "pony/util.h"

static char dir[] = "/tmp/pony-devdb-test.XXXXXX";

/* A 64 KiB swap v1 image with label and UUID (4 KiB pages). */
static void write_swap(const char *path, const char *label, uint8_t uuid_byte)
{
	static uint8_t img[64 * 1024];
	int fd;

	memset(img, 0, sizeof(img));
	memcpy(img + 4086, "SWAPSPACE2", 10);
	img[1024] = 1;                          /* version 1, little-endian */
	img[1028] = 15;                         /* last page */
	memset(img + 1024 + 12, uuid_byte, 16); /* uuid */
	memcpy(img + 1024 + 28, label, strlen(label));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
	close(fd);
}

static struct devdb *open_db(const char *name, unsigned flags)
{
	char path[256];
	struct devdb *db;

	snprintf(path, sizeof(path), "%s/%s/devdb.sqlite", dir, name);
	assert_int_equal(devdb_open(path, flags, &db), 0);
	return db;
}

static void test_scan_then_find_is_an_index_hit(void **state)
{
	struct devdb *db = open_db("a", 0);
	char p[256], *path = NULL;
	const char *names[] = { "TYPE", "LABEL" }, *values[] = { "swap", "alpha" };
	struct devdb_dev **devs;
	struct devdb_scan_stats st;
	const char *scan[] = { p };
	size_t n;

	snprintf(p, sizeof(p), "%s/alpha.img", dir);
	write_swap(p, "alpha", 0x11);
	assert_int_equal(devdb_scan(db, scan, 1, 0, NULL, NULL, &st), 0);
	assert_int_equal(st.probed, 1);
	assert_int_equal(st.found, 1);
	assert_int_equal(devdb_find(db, names, values, 2, &devs, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(devs[0]->path, p);
	assert_true(devs[0]->present);
	assert_string_equal(devdb_tags_get(&devs[0]->tags, "UUID"), "11111111-1111-1111-1111-111111111111");
	devdb_devs_free(devs, n);
	values[0] = "ext4";
	assert_int_equal(devdb_find(db, names, values, 2, &devs, &n), -ENOENT);
	assert_int_equal(devdb_resolve_spec(db, "LABEL=\"alpha\"", &path), 0);
	assert_string_equal(path, p);
	free(path);
	/* rescan: nothing read */
	assert_int_equal(devdb_scan(db, scan, 1, 0, NULL, NULL, &st), 0);
	assert_int_equal(st.probed, 0);
	assert_int_equal(st.unchanged, 1);
	devdb_close(db);
}

static void test_changed_device_is_reprobed_at_lookup(void **state)
{
	struct devdb *db = open_db("b", 0);
	struct devdb_dev *d;
	char p[256];
	struct timespec ts[2] = { { 0, UTIME_NOW }, { 1, 0 } };

	snprintf(p, sizeof(p), "%s/beta.img", dir);
	write_swap(p, "before", 0x22);
	assert_int_equal(devdb_update_path(db, p), 1);
	assert_int_equal(devdb_update_path(db, p), 0);          /* unchanged: no probe */
	write_swap(p, "after", 0x22);
	utimensat(AT_FDCWD, p, ts, 0);                          /* a new mtime, whatever the clock */
	assert_int_equal(devdb_find_tag(db, "LABEL", "before", &d), -ENOENT);
	assert_int_equal(devdb_find_tag(db, "LABEL", "after", &d), 0);
	assert_string_equal(d->path, p);
	devdb_dev_free(d);
	/* gone: marked absent, not returned, still listed */
	unlink(p);
	assert_int_equal(devdb_find_tag(db, "LABEL", "after", &d), -ENOENT);
	assert_int_equal(devdb_get(db, p, &d), 0);
	assert_false(d->present);
	devdb_dev_free(d);
	devdb_close(db);
}

static void test_copies_are_two_devices_and_reported(void **state)
{
	struct devdb *db = open_db("c", 0);
	char p1[256], p2[256], p3[256], **uuids;
	const char *paths[] = { p1, p2, p3 };
	struct devdb_dev *d;
	size_t n;

	snprintf(p1, sizeof(p1), "%s/c1.img", dir);
	snprintf(p2, sizeof(p2), "%s/c2.img", dir);
	snprintf(p3, sizeof(p3), "%s/c1-link.img", dir);
	write_swap(p1, "copy", 0x33);
	write_swap(p2, "copy", 0x33);
	unlink(p3);
	assert_int_equal(link(p1, p3), 0);
	assert_int_equal(devdb_scan(db, paths, 3, 0, NULL, NULL, NULL), 0);
	assert_int_equal(devdb_duplicate_uuids(db, &uuids, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(uuids[0], "33333333-3333-3333-3333-333333333333");
	free(uuids[0]);
	free(uuids);
	/* the hard link is a second path of c1's device; preferred: the shortest */
	assert_int_equal(devdb_get(db, p3, &d), 0);
	assert_int_equal(d->npaths, 2);
	assert_string_equal(d->path, p1);
	devdb_dev_free(d);
	devdb_close(db);
}

static void test_remote_device_is_returned_not_present(void **state)
{
	struct devdb *db = open_db("d", 0);
	struct devdb_tags t = { 0 };
	struct devdb_dev *d;
	char *path;

	assert_int_equal(devdb_tags_add(&t, "UUID", "abcd"), 0);
	assert_int_equal(devdb_register(db, "nbd://127.0.0.1:10809/x", &t), 0);
	assert_int_equal(devdb_register(db, "no-scheme", &t), -EINVAL);
	devdb_tags_done(&t);
	assert_int_equal(devdb_find_tag(db, "UUID", "abcd", &d), 0);
	assert_false(d->present);
	assert_string_equal(d->connect, "nbd://127.0.0.1:10809/x");
	devdb_dev_free(d);
	assert_int_equal(devdb_resolve_spec(db, "UUID=abcd", &path), -ENODEV);
	assert_int_equal(devdb_forget(db, "nbd://127.0.0.1:10809/x"), 0);
	assert_int_equal(devdb_find_tag(db, "UUID", "abcd", &d), -ENOENT);
	assert_int_equal(devdb_forget(db, "nbd://127.0.0.1:10809/x"), -ENOENT);
	devdb_close(db);
}

static void test_hundred_thousand_synthetic_entries_answer(void **state)
{
	struct devdb *db = open_db("e", DEVDB_OPEN_NOVERIFY);
	struct devdb_dev *d;
	uint64_t t0;

	assert_int_equal(devdb_add_synthetic(db, "/syn/", 100000), 0);
	t0 = util_now_ns();
	for (int i = 0; i < 1000; i++) {
		char label[32];

		snprintf(label, sizeof(label), "syn%d", (i * 7919) % 100000);
		assert_int_equal(devdb_find_tag(db, "LABEL", label, &d), 0);
		devdb_dev_free(d);
	}
	print_message("1000 lookups in 100000 entries: %.1f us each\n",
		      (double)(util_now_ns() - t0) / 1000 / 1000);
	assert_int_equal(devdb_find_tag(db, "LABEL", "syn100000", &d), -ENOENT);
	devdb_close(db);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static off_t wal_size(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/devdb.sqlite-wal", dir, name);
	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* A forced rescan answers "same result, nothing to write" with one query:
 * it must still see new contents behind an unchanged identity. */
static void test_forced_rescan_stores_only_what_changed(void **state)
{
	struct devdb *db = open_db("f", 0);
	struct timespec keep[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	struct devdb_scan_stats st;
	struct devdb_dev *d;
	struct stat sb;
	char p[256];
	const char *scan[] = { p };
	off_t wal;

	snprintf(p, sizeof(p), "%s/gamma.img", dir);
	write_swap(p, "old", 0x33);
	assert_int_equal(devdb_scan(db, scan, 1, 0, NULL, NULL, &st), 0);
	/* same file, same size, same mtime: only the label differs */
	assert_int_equal(stat(p, &sb), 0);
	keep[1] = sb.st_mtim;
	write_swap(p, "new", 0x33);
	assert_int_equal(utimensat(AT_FDCWD, p, keep, 0), 0);
	assert_int_equal(devdb_scan(db, scan, 1, 0, NULL, NULL, &st), 0);
	assert_int_equal(st.unchanged, 1);                      /* identity equal: not read */
	assert_int_equal(devdb_scan(db, scan, 1, DEVDB_SCAN_FORCE, NULL, NULL, &st), 0);
	assert_int_equal(st.probed, 1);
	assert_int_equal(devdb_find_tag(db, "LABEL", "old", &d), -ENOENT);
	assert_int_equal(devdb_find_tag(db, "LABEL", "new", &d), 0);
	devdb_dev_free(d);
	/* forced again, nothing new: nothing written (the WAL would grow) */
	wal = wal_size("f");
	assert_int_equal(devdb_scan(db, scan, 1, DEVDB_SCAN_FORCE, NULL, NULL, &st), 0);
	assert_int_equal(st.probed, 1);
	assert_int_equal(wal_size("f"), wal);
	devdb_close(db);
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_then_find_is_an_index_hit),
		cmocka_unit_test(test_changed_device_is_reprobed_at_lookup),
		cmocka_unit_test(test_copies_are_two_devices_and_reported),
		cmocka_unit_test(test_remote_device_is_returned_not_present),
		cmocka_unit_test(test_hundred_thousand_synthetic_entries_answer),
		cmocka_unit_test(test_forced_rescan_stores_only_what_changed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
