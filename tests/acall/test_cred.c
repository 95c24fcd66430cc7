/*
 * test_cred.c - ops carry their submitter's credentials: what acall creates
 * for uid 1000 belongs to uid 1000, and what uid 1000 may not open it
 * cannot open through acall either, on both paths. Needs root.
 */
#include <sys/stat.h>

#include "helpers.h"

static const struct acall_cred user1000 = {
	.fsuid = 1000, .fsgid = 1000, .ngroups = 1, .groups = { 1000 },
};

static void test_file_created_for_a_user_is_owned_by_that_user(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);
	struct stat st;
	int64_t fd;

	assert_int_equal(fchmod(f->dfd, 0777), 0);
	acall_prep_openat(op, f->dfd, "mine", O_RDWR | O_CREAT | O_EXCL, 0644);
	acall_op_set_cred(op, &user1000);
	fd = run(f, op);
	assert_true(fd >= 0);
	assert_int_equal(fstat((int)fd, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 1000);
	close((int)fd);
	/* The same thread's next op, without credentials, is root again. */
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "root", O_RDWR | O_CREAT | O_EXCL, 0644);
	fd = run(f, op);
	assert_true(fd >= 0);
	assert_int_equal(fstat((int)fd, &st), 0);
	assert_int_equal(st.st_uid, 0);
	close((int)fd);
}

static void test_root_only_file_is_refused_to_a_user(void **state)
{
	struct fixture *f = *state;
	int fd = openat(f->dfd, "secret", O_RDWR | O_CREAT, 0600);
	struct acall_op *op;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fchmod(f->dfd, 0755), 0);
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "secret", O_RDONLY, 0);
	acall_op_set_cred(op, &user1000);
	assert_int_equal(run(f, op), -EACCES);
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "secret", O_RDONLY, 0);
	fd = (int)run(f, op);
	assert_true(fd >= 0);   /* root itself still may */
	close(fd);
}

static void test_groups_grant_access_per_op(void **state)
{
	struct fixture *f = *state;
	struct acall_cred in_group = user1000;
	int fd = openat(f->dfd, "grp", O_RDWR | O_CREAT, 0640);
	struct acall_op *op;

	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 0, 4242), 0);
	assert_int_equal(fchmod(fd, 0640), 0);
	close(fd);
	assert_int_equal(fchmod(f->dfd, 0755), 0);
	in_group.groups[1] = 4242;
	in_group.ngroups = 2;
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "grp", O_RDONLY, 0);
	acall_op_set_cred(op, &in_group);
	fd = (int)run(f, op);
	assert_true(fd >= 0);
	close(fd);
	op = acall_get_op(f->ring);
	acall_prep_openat(op, f->dfd, "grp", O_RDONLY, 0);
	acall_op_set_cred(op, &user1000);
	assert_int_equal(run(f, op), -EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_file_created_for_a_user_is_owned_by_that_user),
		BOTH_PATHS(test_root_only_file_is_refused_to_a_user),
		BOTH_PATHS(test_groups_grant_access_per_op),
	};

	if (geteuid() != 0) {
		printf("SKIP: needs root (switches to uid 1000)\n");
		return 77;
	}
	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
