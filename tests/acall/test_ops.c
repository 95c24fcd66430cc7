/* test_ops.c - every acall op does what its system call does, on both paths. */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "helpers.h"

static int open_file(struct fixture *f, const char *name)
{
	int fd = openat(f->dfd, name, O_RDWR | O_CREAT, 0644);

	assert_true(fd >= 0);
	return fd;
}

static void test_vector_io_round_trips(void **state)
{
	struct fixture *f = *state;
	char a[3] = "abc", b[5] = "defgh", ra[4] = { 0 }, rb[4] = { 0 };
	struct iovec w[2] = { { a, 3 }, { b, 5 } }, r[2] = { { ra, 4 }, { rb, 4 } };
	int fd = open_file(f, "vec");
	struct acall_op *op = acall_get_op(f->ring);

	acall_prep_writev(op, fd, w, 2, 10);
	assert_int_equal(run(f, op), 8);
	op = acall_get_op(f->ring);
	acall_prep_readv(op, fd, r, 2, 10);
	assert_int_equal(run(f, op), 8);
	assert_memory_equal(ra, "abcd", 4);
	assert_memory_equal(rb, "efgh", 4);
	close(fd);
}

static void test_sync_ops_succeed_on_a_written_file(void **state)
{
	struct fixture *f = *state;
	int fd = open_file(f, "sync");
	struct acall_op *op;

	assert_int_equal(pwrite(fd, "x", 1, 0), 1);
	op = acall_get_op(f->ring);
	acall_prep_fdatasync(op, fd);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_sync_file_range(op, fd, 0, 1, SYNC_FILE_RANGE_WRITE);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_fadvise(op, fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	assert_int_equal(run(f, op), 0);
	close(fd);
}

static void test_openat_and_close_manage_a_descriptor(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);
	int64_t fd;

	acall_prep_openat(op, f->dfd, "opened", O_RDWR | O_CREAT | O_EXCL, 0640);
	fd = run(f, op);
	assert_true(fd >= 0);
	assert_int_equal(faccessat(f->dfd, "opened", F_OK, 0), 0);
	op = acall_get_op(f->ring);
	acall_prep_close(op, (int)fd);
	assert_int_equal(run(f, op), 0);
	assert_int_equal(fcntl((int)fd, F_GETFD), -1);
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "opened", O_RDWR | O_CREAT | O_EXCL, 0640);
	assert_int_equal(run(f, op), -EEXIST);
}

static void test_statx_fills_the_requested_fields(void **state)
{
	struct fixture *f = *state;
	struct statx stx = { 0 };
	int fd = open_file(f, "st");
	struct acall_op *op;

	assert_int_equal(pwrite(fd, "12345", 5, 0), 5);
	op = acall_get_op(f->ring);
	acall_prep_statx(op, f->dfd, "st", 0, STATX_SIZE | STATX_MODE, &stx);
	assert_int_equal(run(f, op), 0);
	assert_int_equal(stx.stx_size, 5);
	assert_true(S_ISREG(stx.stx_mode));
	op = acall_get_op(f->ring);
	acall_prep_statx(op, f->dfd, "missing", 0, STATX_SIZE, &stx);
	assert_int_equal(run(f, op), -ENOENT);
	close(fd);
}

static void test_namespace_ops_change_the_directory(void **state)
{
	struct fixture *f = *state;
	char target[16] = { 0 };
	struct acall_op *op;

	close(open_file(f, "a"));
	op = acall_get_op(f->ring);
	acall_prep_mkdirat(op, f->dfd, "d", 0755);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_renameat2(op, f->dfd, "a", f->dfd, "d/b", RENAME_NOREPLACE);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_linkat(op, f->dfd, "d/b", f->dfd, "c", 0);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_symlinkat(op, "d/b", f->dfd, "s");
	assert_int_equal(run(f, op), 0);
	assert_int_equal(readlinkat(f->dfd, "s", target, sizeof(target) - 1), 3);
	assert_string_equal(target, "d/b");
	op = acall_get_op(f->ring);
	acall_prep_unlinkat(op, f->dfd, "c", 0);
	assert_int_equal(run(f, op), 0);
	assert_int_equal(faccessat(f->dfd, "c", F_OK, 0), -1);
	op = acall_get_op(f->ring);
	acall_prep_unlinkat(op, f->dfd, "d", AT_REMOVEDIR);
	assert_int_equal(run(f, op), -ENOTEMPTY);
	op = acall_get_op(f->ring);
	acall_prep_renameat2(op, f->dfd, "s", f->dfd, "d/b", RENAME_NOREPLACE);
	assert_int_equal(run(f, op), -EEXIST);
}

static void test_size_ops_change_the_file_size(void **state)
{
	struct fixture *f = *state;
	int fd = open_file(f, "size");
	struct acall_op *op = acall_get_op(f->ring);
	struct stat st;

	acall_prep_fallocate(op, fd, 0, 0, 1 << 20);
	assert_int_equal(run(f, op), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 1 << 20);
	op = acall_get_op(f->ring);
	acall_prep_ftruncate(op, fd, 12345);
	assert_int_equal(run(f, op), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 12345);
	close(fd);
}

static void test_getdents64_lists_the_directory(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	int dfd = openat(f->dfd, ".", O_RDONLY | O_DIRECTORY);
	struct acall_op *op = acall_get_op(f->ring);
	bool found = false;
	int64_t n;

	close(open_file(f, "listed"));
	acall_prep_getdents64(op, dfd, buf, sizeof(buf));
	n = run(f, op);
	assert_true(n > 0);
	for (int64_t pos = 0; pos < n;) {
		struct dirent64 *d = (struct dirent64 *)(buf + pos);

		found |= !strcmp(d->d_name, "listed");
		pos += d->d_reclen;
	}
	assert_true(found);
	close(dfd);
}

static void test_fchmod_and_fchown_change_the_inode(void **state)
{
	struct fixture *f = *state;
	int fd = open_file(f, "perm");
	struct acall_op *op = acall_get_op(f->ring);
	struct stat st;

	acall_prep_fchmod(op, fd, 0600);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_fchown(op, fd, getuid(), getgid());
	assert_int_equal(run(f, op), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, getuid());
	close(fd);
}

static void test_xattrs_round_trip(void **state)
{
	struct fixture *f = *state;
	char path[128], value[16] = { 0 };
	struct acall_op *op = acall_get_op(f->ring);
	int64_t r;

	close(open_file(f, "x"));
	snprintf(path, sizeof(path), "%s/x", f->dir);
	acall_prep_setxattr(op, path, "user.pony", "hello", 5, 0);
	r = run(f, op);
	if (r == -EOPNOTSUPP) {
		printf("note: no user xattrs on %s\n", f->dir);
		return;
	}
	assert_int_equal(r, 0);
	op = acall_get_op(f->ring);
	acall_prep_getxattr(op, path, "user.pony", value, sizeof(value));
	assert_int_equal(run(f, op), 5);
	assert_string_equal(value, "hello");
	op = acall_get_op(f->ring);
	acall_prep_getxattr(op, path, "user.none", value, sizeof(value));
	assert_int_equal(run(f, op), -ENODATA);
}

static int64_t add_one(void *arg)
{
	int *x = arg;

	return ++*x;
}

static void test_call_runs_the_function_and_returns_its_value(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);
	int x = 41;

	acall_prep_call(op, add_one, &x);
	assert_int_equal(run(f, op), 42);
	assert_int_equal(x, 42);
}

static void test_routing_follows_the_path(void **state)
{
	struct fixture *f = *state;

	if (f->path == ACALL_PATH_WORKERS) {
		assert_int_equal(acall_ring_route(f->ring, ACALL_OP_READ), ACALL_PATH_WORKERS);
		assert_int_equal(acall_ring_route(f->ring, ACALL_OP_STATX), ACALL_PATH_WORKERS);
	} else {
		assert_int_equal(acall_ring_route(f->ring, ACALL_OP_READ), ACALL_PATH_URING);
		assert_int_equal(acall_ring_route(f->ring, ACALL_OP_STATX), ACALL_PATH_URING);
	}
	/* io_uring has no op for these, whatever the path. */
	assert_int_equal(acall_ring_route(f->ring, ACALL_OP_GETDENTS64), ACALL_PATH_WORKERS);
	assert_int_equal(acall_ring_route(f->ring, ACALL_OP_CALL), ACALL_PATH_WORKERS);
	assert_string_equal(acall_opcode_name(ACALL_OP_STATX), "statx");
	assert_int_equal(acall_opcode_from_name("ftruncate"), ACALL_OP_FTRUNCATE);
	assert_int_equal(acall_opcode_from_name("nonsense"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_vector_io_round_trips),
		BOTH_PATHS(test_sync_ops_succeed_on_a_written_file),
		BOTH_PATHS(test_openat_and_close_manage_a_descriptor),
		BOTH_PATHS(test_statx_fills_the_requested_fields),
		BOTH_PATHS(test_namespace_ops_change_the_directory),
		BOTH_PATHS(test_size_ops_change_the_file_size),
		BOTH_PATHS(test_getdents64_lists_the_directory),
		BOTH_PATHS(test_fchmod_and_fchown_change_the_inode),
		BOTH_PATHS(test_xattrs_round_trip),
		BOTH_PATHS(test_call_runs_the_function_and_returns_its_value),
		BOTH_PATHS(test_routing_follows_the_path),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
