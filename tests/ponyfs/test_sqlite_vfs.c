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
static const struct ponyfs_sqlite_range db_range = { 4096, 5u << 20 };
static const struct ponyfs_sqlite_range wal_range = { 4096 + (5u << 20), 2u << 20 };

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

static void test_database_and_wal_persist_on_the_bdev(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	uint8_t magic[4];

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(ponyfs_sqlite_open(m, &db_range, &wal_range, &db), 0);
	exec_ok(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);"
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) "
		"INSERT INTO t (v) SELECT randomblob(3000) FROM c;");
	/* Committed and still in the WAL: its header is on the bdev. */
	assert_int_equal(bdev_pread(m, magic, 4, wal_range.off), 0);
	assert_int_equal(util_get_be32(magic) & ~1u, 0x377f0682);
	ponyfs_sqlite_close(db);
	assert_int_equal(ponyfs_sqlite_open(m, &db_range, &wal_range, &db), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 200);
	assert_int_equal(query_int(db, "SELECT sum(length(v)) FROM t"), 600000);
	exec_ok(db, "DELETE FROM t WHERE k % 2 = 0");
	ponyfs_sqlite_close(db);
	assert_int_equal(ponyfs_sqlite_open(m, &db_range, &wal_range, &db), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), 100);
	ponyfs_sqlite_close(db);
	bdev_free(m);
}

static void test_ranges_outside_the_bdev_are_refused(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	struct ponyfs_sqlite_range far = { DEV_SIZE - 4096, 1u << 20 };
	struct ponyfs_sqlite_range odd = { 100, 1u << 20 };

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(ponyfs_sqlite_open(m, &db_range, &far, &db), -EINVAL);
	assert_int_equal(ponyfs_sqlite_open(m, &odd, &wal_range, &db), -EINVAL);
	bdev_free(m);
}

static void test_full_database_range_is_enospc_not_corruption(void **state)
{
	struct bdev *m;
	sqlite3 *db;
	struct ponyfs_sqlite_range small = { 4096, 64 * 4096 };
	int rc = SQLITE_OK, ok = 0;

	assert_int_equal(bdev_mem_new(DEV_SIZE, &m), 0);
	assert_int_equal(ponyfs_sqlite_open(m, &small, &wal_range, &db), 0);
	exec_ok(db, "CREATE TABLE t (v BLOB); PRAGMA wal_autocheckpoint = 10;");
	for (int i = 0; i < 2000 && rc == SQLITE_OK; i++) {
		rc = sqlite3_exec(db, "INSERT INTO t VALUES (randomblob(4000))", NULL, NULL, NULL);
		ok += rc == SQLITE_OK;
	}
	assert_int_equal(rc & 0xff, SQLITE_FULL);
	ponyfs_sqlite_close(db);
	/* What committed before the range filled up is all there, intact. */
	assert_int_equal(ponyfs_sqlite_open(m, &small, &wal_range, &db), 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM t"), ok);
	assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_integrity_check WHERE "
				   "integrity_check != 'ok'"), 0);
	ponyfs_sqlite_close(db);
	bdev_free(m);
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
	assert_int_equal(ponyfs_sqlite_open(rec, &db_range, &wal_range, &db), 0);
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
		assert_int_equal(ponyfs_sqlite_open(target, &db_range, &wal_range, &c), 0);
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
		cmocka_unit_test(test_every_crash_point_holds_whole_committed_transactions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
