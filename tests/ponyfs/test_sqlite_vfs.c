/*
 * test_sqlite_vfs.c - SQLite runs on ponyfs's sqlite3_vfs over a bdev: the
 * database and its WAL live in their byte ranges and survive a close; a
 * commit is a flush of the bdev; and after a crash at any point of the
 * write log (a record bdev), the database opens, passes integrity_check and
 * holds every transaction committed before the last flush, never a part of one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/ponyfs/internal.h"

#define DEV_SIZE (8u << 20)

struct range { uint64_t off, len; };
static const struct range db_range = { 4096, 5u << 20 };
static const struct range wal_range = { 4096 + (5u << 20), 2u << 20 };

/* The database and WAL each in one range of dev. */
static int open_ranges(struct bdev *dev, const struct range *d, const struct range *w, sqlite3 **ret)
{
	struct bdev *const devs[2] = { dev, NULL };
	static struct ponyfs_sqlite_map dm, wm;

	dm.n = wm.n = 1;
	dm.e[0] = (struct ponyfs_sqlite_extent){ .off = d->off, .len = d->len, .dev = PONYFS_SQLITE_META };
	wm.e[0] = (struct ponyfs_sqlite_extent){ .off = w->off, .len = w->len, .dev = PONYFS_SQLITE_META };
	return ponyfs_sqlite_open(devs, &dm, &wm, ret);
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* db, just opened, holds rows rows in t and passes its integrity check; closes it. */
static void check_rows_and_close(sqlite3 *db, int64_t rows)
{
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), rows);
	assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_integrity_check WHERE "
				   "integrity_check != 'ok'"), 0);
	ponyfs_sqlite_close(db);
}

static void test_database_and_wal_persist_on_the_bdev(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	uint8_t magic[4];

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(open_ranges(m, &db_range, &wal_range, &db), 0);
	exec_ok(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);"
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) "
		"INSERT INTO t (v) SELECT randomblob(3000) FROM c;");
	/* Committed and still in the WAL: its header is on the bdev. */
	assert_int_equal(bdev_pread(m, magic, 4, wal_range.off), 0);
	assert_int_equal(util_get_be32(magic) & ~1u, 0x377f0682);
	ponyfs_sqlite_close(db);
	assert_int_equal(open_ranges(m, &db_range, &wal_range, &db), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 200);
	assert_int_equal(query_int(db, "SELECT sum(length(v)) FROM t"), 600000);
	exec_ok(db, "DELETE FROM t WHERE k % 2 = 0");
	ponyfs_sqlite_close(db);
	assert_int_equal(open_ranges(m, &db_range, &wal_range, &db), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 100);
	ponyfs_sqlite_close(db);
	bdev_free(m);
}

static void test_ranges_outside_the_bdev_are_refused(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	struct range far = { DEV_SIZE - 4096, 1u << 20 };
	struct range odd = { 100, 1u << 20 };

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(open_ranges(m, &db_range, &far, &db), -EINVAL);
	assert_int_equal(open_ranges(m, &odd, &wal_range, &db), -EINVAL);
	bdev_free(m);
}

static void test_full_database_range_is_enospc_not_corruption(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	struct range small = { 4096, 64 * 4096 };
	int rc = SQLITE_OK, ok = 0;

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(open_ranges(m, &small, &wal_range, &db), 0);
	exec_ok(db, "CREATE TABLE t (v BLOB); PRAGMA wal_autocheckpoint = 10;");
	for (int i = 0; i < 2000 && rc == SQLITE_OK; i++) {
		rc = sqlite3_exec(db, "INSERT INTO t VALUES (randomblob(4000))", NULL, NULL, NULL);
		ok += rc == SQLITE_OK;
	}
	assert_int_equal(rc & 0xff, SQLITE_FULL);
	ponyfs_sqlite_close(db);
	/* What committed before the range filled up is all there, intact. */
	assert_int_equal(open_ranges(m, &small, &wal_range, &db), 0);
	check_rows_and_close(db, ok);
	bdev_free(m);
}

/*
 * The database and its WAL each start in a small range of one bdev (the
 * metadata region) and go on in extents of another (the data region),
 * added while the database is open, as metadata chunks are: what SQLite
 * writes past its fixed range lands in those extents, and all of it is
 * there after a close and a reopen with the same extents.
 */
static void test_files_grow_into_extents_of_another_bdev(void **state)
{
	struct bdev *meta, *data;
	struct bdev *devs[2];
	static struct ponyfs_sqlite_map dm, wm;
	sqlite3 *db;
	int rc = SQLITE_OK, ok = 0;
	uint8_t magic[16];

	assert_int_equal(bdev_mem_new(1u << 20, &meta), 0);
	assert_int_equal(bdev_mem_new(16u << 20, &data), 0);
	devs[0] = meta;
	devs[1] = data;
	dm.n = wm.n = 1;
	dm.e[0] = (struct ponyfs_sqlite_extent){ .off = 0, .len = 64 * 4096, .dev = PONYFS_SQLITE_META };
	wm.e[0] = (struct ponyfs_sqlite_extent){ .off = 64 * 4096, .len = 64 * 4096,
						 .dev = PONYFS_SQLITE_META };
	assert_int_equal(ponyfs_sqlite_open(devs, &dm, &wm, &db), 0);
	exec_ok(db, "CREATE TABLE t (v BLOB)");
	for (int i = 0; i < 200 && rc == SQLITE_OK; i++) {
		rc = sqlite3_exec(db, "INSERT INTO t VALUES (randomblob(3000))", NULL, NULL, NULL);
		ok += rc == SQLITE_OK;
		if (i % 10 == 9)
			sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	}
	assert_int_equal(rc & 0xff, SQLITE_FULL);
	/* Room: 4 MiB for the database, 1 MiB more WAL, both on data. */
	dm.e[1] = (struct ponyfs_sqlite_extent){ .off = 8u << 20, .len = 4u << 20, .dev = PONYFS_SQLITE_DATA };
	wm.e[1] = (struct ponyfs_sqlite_extent){ .off = 1u << 20, .len = 1u << 20, .dev = PONYFS_SQLITE_DATA };
	assert_int_equal(ponyfs_sqlite_extend(db, PONYFS_SQLITE_DB, &dm.e[1]), 0);
	assert_int_equal(ponyfs_sqlite_extend(db, PONYFS_SQLITE_WAL, &wm.e[1]), 0);
	dm.n = wm.n = 2;
	assert_int_equal(ponyfs_sqlite_room(db, PONYFS_SQLITE_DB), (64u << 12) + (4u << 20));
	sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	exec_ok(db, "BEGIN");
	for (int i = 0; i < 250; i++)
		exec_ok(db, "INSERT INTO t VALUES (randomblob(3000))");
	exec_ok(db, "COMMIT");
	ok += 250;
	assert_int_equal(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL),
			 SQLITE_OK);
	ponyfs_sqlite_close(db);
	/* The database's pages past its fixed range are on data. */
	assert_int_equal(bdev_pread(data, magic, 16, 8u << 20), 0);
	assert_true(memcmp(magic, (uint8_t[16]){ 0 }, 16));
	assert_int_equal(ponyfs_sqlite_open(devs, &dm, &wm, &db), 0);
	check_rows_and_close(db, ok);
	bdev_free(meta);
	bdev_free(data);
}

/* Each step commits one transaction adding 10 rows of row number i. */
static void test_every_crash_point_holds_whole_committed_transactions(void **state)
{
	struct bdev *disk, *log, *rec, *target;
	sqlite3 *db;
	uint64_t n;

	assert_int_equal(bdev_mem_new(DEV_SIZE, &disk), 0);
	assert_int_equal(bdev_mem_new(64u << 20, &log), 0);
	assert_int_equal(bdev_record_new(disk, log, &rec), 0);
	assert_int_equal(open_ranges(rec, &db_range, &wal_range, &db), 0);
	exec_ok(db, "CREATE TABLE t (step INTEGER, v BLOB); PRAGMA wal_autocheckpoint = 40;");
	for (int i = 1; i <= 30; i++) {
		char sql[200];

		snprintf(sql, sizeof(sql), "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
			 "FROM c WHERE x < 10) INSERT INTO t SELECT %d, randomblob(%d) FROM c",
			 i, 500 + i * 97);
		exec_ok(db, sql);
	}
	assert_int_equal(bdev_record_count(log, &n), 0);
	/* Replay every prefix: it opens, is intact, and holds steps 1..k whole. */
	for (uint64_t k = 0; k <= n; k++) {
		int64_t steps, rows, bad;
		sqlite3 *c;

		assert_int_equal(bdev_mem_new(DEV_SIZE, &target), 0);
		assert_int_equal(bdev_record_replay(log, target, k), 0);
		assert_int_equal(open_ranges(target, &db_range, &wal_range, &c), 0);
		if (query_int(c, "SELECT count(*) FROM sqlite_schema WHERE name = 't'") == 1) {
			steps = query_int(c, "SELECT coalesce(max(step), 0) FROM t");
			rows = query_int(c, "SELECT count(*) FROM t");
			bad = query_int(c, "SELECT count(*) FROM pragma_integrity_check WHERE "
					"integrity_check != 'ok'");
			assert_int_equal(bad, 0);
			assert_int_equal(rows, steps * 10);
		}
		ponyfs_sqlite_close(c);
		bdev_free(target);
	}
	assert_true(n > 30);    /* at least a write and a flush per commit */
	ponyfs_sqlite_close(db);
	bdev_free(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_database_and_wal_persist_on_the_bdev),
		cmocka_unit_test(test_ranges_outside_the_bdev_are_refused),
		cmocka_unit_test(test_full_database_range_is_enospc_not_corruption),
		cmocka_unit_test(test_files_grow_into_extents_of_another_bdev),
		cmocka_unit_test(test_every_crash_point_holds_whole_committed_transactions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
