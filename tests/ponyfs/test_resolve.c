/*
 * test_resolve.c - resolve (docs/scrub.md) says what lives at a volume
 * byte: a file's block with every path of its inode (hard links too) and
 * the file offset, a metadata page, or a free block; and on a filesystem
 * of 1,000,000 extents one lookup stays under 10 ms (the extents_pblock
 * index; a scan of the table takes far longer). The rows are made straight
 * in the database, in a few transactions, to keep the test fast.
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
#include <cmocka.h>

#include "../../src/ponyfs/internal.h"

#define NFILES 1000u
#define PER_FILE 1000u                  /* extents of each file, one block each, a gap between */
#define FIRST_INO 10u

struct rig {
	char dir[64];
	struct bdev *meta, *data;
	struct vfs *v;
};

static void exec_ok(struct ponyfs *fs, const char *sql)
{
	assert_int_equal(ponyfs_exec(fs, sql), 0);
}

/* NFILES files of PER_FILE extents: file i's extent k at block 2 * (i * PER_FILE + k). */
static void fill(struct ponyfs *fs)
{
	sqlite3_stmt *s;
	char sql[512];

	pthread_mutex_lock(&fs->lock);
	for (unsigned i = 0; i < NFILES; i++) {
		if (i % 100 == 0)
			exec_ok(fs, "BEGIN");
		snprintf(sql, sizeof(sql), "INSERT INTO inodes (ino, mode, uid, gid, nlink, size, atime, "
			 "mtime, ctime, btime) VALUES (%u, %u, 0, 0, 1, %u, 0, 0, 0, 0);"
			 "INSERT INTO dentries VALUES (1, CAST('f%u' AS BLOB), %u, %u);",
			 FIRST_INO + i, S_IFREG | 0644, PER_FILE * 4096, i, FIRST_INO + i, i + 3);
		exec_ok(fs, sql);
		assert_int_equal(sqlite3_prepare_v2(fs->db, "INSERT INTO extents (ino, foff, nblocks, "
						    "pblock, csums) VALUES (?1, ?2, 1, ?3, X'00000000')",
						    -1, &s, NULL), SQLITE_OK);
		for (unsigned k = 0; k < PER_FILE; k++) {
			sqlite3_bind_int64(s, 1, FIRST_INO + i);
			sqlite3_bind_int64(s, 2, k);
			sqlite3_bind_int64(s, 3, 2 * ((int64_t)i * PER_FILE + k));
			assert_int_equal(sqlite3_step(s), SQLITE_DONE);
			sqlite3_reset(s);
		}
		sqlite3_finalize(s);
		if (i % 100 == 99) {
			exec_ok(fs, "COMMIT");
			assert_int_equal(ponyfs_checkpoint_locked(fs), 0);
		}
	}
	/* A hard link in a directory: the first file has two paths. */
	snprintf(sql, sizeof(sql), "BEGIN; INSERT INTO inodes (ino, mode, uid, gid, nlink, size, atime, "
		 "mtime, ctime, btime) VALUES (5, %u, 0, 0, 2, 0, 0, 0, 0, 0);"
		 "INSERT INTO dentries VALUES (1, CAST('dir' AS BLOB), 5, %u);"
		 "INSERT INTO dentries VALUES (5, CAST('link' AS BLOB), %u, 3); COMMIT;",
		 S_IFDIR | 0755, NFILES + 3, FIRST_INO);
	exec_ok(fs, sql);
	assert_int_equal(ponyfs_checkpoint_locked(fs), 0);
	pthread_mutex_unlock(&fs->lock);
}

static int rig_setup(void **state)
{
	struct rig *rg = calloc(1, sizeof(*rg));
	struct ponyfs_mkfs_options mo = { .wal_bytes = 64u << 20 };
	char path[128];
	int fd;

	assert_non_null(rg);
	snprintf(rg->dir, sizeof(rg->dir), "/tmp/pony-resolve-XXXXXX");
	assert_non_null(mkdtemp(rg->dir));
	snprintf(path, sizeof(path), "%s/meta", rg->dir);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0 && ftruncate(fd, 512ll << 20) == 0);
	close(fd);
	assert_int_equal(bdev_file_open(path, O_RDWR, &rg->meta), 0);
	snprintf(path, sizeof(path), "%s/data", rg->dir);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0 && ftruncate(fd, 4096ll * 2 * NFILES * PER_FILE) == 0);
	close(fd);
	assert_int_equal(bdev_file_open(path, O_RDWR, &rg->data), 0);
	assert_int_equal(ponyfs_mkfs(rg->meta, rg->data, &mo), 0);
	assert_int_equal(ponyfs_mount(rg->meta, rg->data, NULL, &rg->v), 0);
	fill(ponyfs_of(rg->v));
	*state = rg;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *rg = *state;
	char cmd[128];

	vfs_free(rg->v);
	bdev_free(rg->meta);
	bdev_free(rg->data);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", rg->dir);
	assert_int_equal(system(cmd), 0);
	free(rg);
	return 0;
}

/* Volume byte x of a filesystem on plain bdevs: the metadata region, then data. */
static uint64_t data_byte(struct rig *rg, uint64_t block, uint64_t in)
{
	return ponyfs_of(rg->v)->sb.meta_bytes + block * 4096 + in;
}

static void test_block_resolves_to_every_path_and_the_file_offset(void **state)
{
	struct rig *rg = *state;
	struct vfs_resolve r = { .volume_offset = data_byte(rg, 2 * 5, 100) };

	assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_FILE);
	assert_int_equal(r.ino, FIRST_INO);
	assert_int_equal(r.file_offset, 5 * 4096 + 100);
	assert_int_equal(r.npaths, 2);
	/* Both names, in either order. */
	assert_true((!strcmp(r.paths, "/f0") && !strcmp(r.paths + 4, "/dir/link")) ||
		    (!strcmp(r.paths, "/dir/link") && !strcmp(r.paths + 10, "/f0")));

	r = (struct vfs_resolve){ .volume_offset = data_byte(rg, 2 * (777ull * PER_FILE + 3), 0) };
	assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_FILE);
	assert_int_equal(r.ino, FIRST_INO + 777);
	assert_int_equal(r.file_offset, 3 * 4096);
	assert_int_equal(r.npaths, 1);
	assert_string_equal(r.paths, "/f777");
}

static void test_gaps_are_free_and_the_region_start_is_metadata(void **state)
{
	struct rig *rg = *state;
	struct ponyfs *fs = ponyfs_of(rg->v);
	struct vfs_resolve r = { .volume_offset = data_byte(rg, 2 * 12345 + 1, 0) };

	assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_FREE);
	assert_int_equal(r.block, 2 * 12345 + 1);
	r = (struct vfs_resolve){ .volume_offset = 100 };
	assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_METADATA);
	assert_int_equal(r.meta, VFS_META_SUPERBLOCK);
	r = (struct vfs_resolve){ .volume_offset = fs->sb.db_off + 3 * 4096 + 7 };
	assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
	assert_int_equal(r.what, VFS_RESOLVE_METADATA);
	assert_int_equal(r.meta, VFS_META_DATABASE);
	assert_int_equal(r.page, 4);
	r = (struct vfs_resolve){ .volume_offset = data_byte(rg, fs->sb.data_blocks, 0) };
	assert_int_equal(VFS_CALL(rg->v, resolve, &r), -ERANGE);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One lookup among 1,000,000 extents: an index descent, under 10 ms (a
 * scan takes 157 ms). Each of 50 lookups in the plain build; under a
 * sanitizer, which slows every instruction, their median.
 */
static void test_one_lookup_in_a_million_extents_takes_under_10ms(void **state)
{
	const char *san = getenv("PONY_SANITIZE");
	bool sanitized = san && *san && strcmp(san, "none");
	struct rig *rg = *state;
	uint64_t t[50];
	int64_t n = 0;

	pthread_mutex_lock(&ponyfs_of(rg->v)->lock);
	assert_int_equal(ponyfs_sql_int(ponyfs_of(rg->v), &n, "SELECT count(*) FROM extents", 0), 0);
	pthread_mutex_unlock(&ponyfs_of(rg->v)->lock);
	assert_int_equal(n, (int64_t)NFILES * PER_FILE);
	for (unsigned i = 0; i < 50; i++) {
		uint64_t blk = 2 * ((uint64_t)(i * 7919u) % (NFILES * PER_FILE)), t0 = util_now_ns();
		struct vfs_resolve r = { .volume_offset = data_byte(rg, blk, 0) };

		assert_int_equal(VFS_CALL(rg->v, resolve, &r), 0);
		t[i] = util_now_ns() - t0;
		assert_int_equal(r.what, VFS_RESOLVE_FILE);
		assert_int_equal(r.ino, FIRST_INO + blk / 2 / PER_FILE);
	}
	qsort(t, 50, sizeof(t[0]), cmp_u64);
	print_message("lookup: median %llu us, worst %llu us\n", (unsigned long long)(t[25] / 1000),
		      (unsigned long long)(t[49] / 1000));
	assert_true((sanitized ? t[25] : t[49]) < 10 * 1000 * 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_resolves_to_every_path_and_the_file_offset),
		cmocka_unit_test(test_gaps_are_free_and_the_region_start_is_metadata),
		cmocka_unit_test(test_one_lookup_in_a_million_extents_takes_under_10ms),
	};

	return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
