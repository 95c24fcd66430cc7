/*
 * test_bad_input.c - bad arguments come back as -errno in the completion
 * (or from the call), never as a crash, on both paths.
 */
#include "helpers.h"

static void test_bad_fd_completes_ebadf(void **state)
{
	struct fixture *f = *state;
	char buf[16];
	struct acall_op *op = acall_get_op(f->ring);

	acall_prep_read(op, 12345, buf, sizeof(buf), 0);
	assert_int_equal(run(f, op), -EBADF);
	op = acall_get_op(f->ring);
	acall_prep_write(op, -1, buf, sizeof(buf), 0);
	assert_int_equal(run(f, op), -EBADF);
	op = acall_get_op(f->ring);
	acall_prep_fsync(op, 12345);
	assert_int_equal(run(f, op), -EBADF);
	op = acall_get_op(f->ring);
	acall_prep_getdents64(op, 12345, buf, sizeof(buf));
	assert_int_equal(run(f, op), -EBADF);
}

static void test_unknown_opcode_completes_einval(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);

	acall_prep_raw(op, ACALL_OP__MAX, 0, NULL, 0, 0);
	assert_int_equal(run(f, op), -EINVAL);
	op = acall_get_op(f->ring);
	acall_prep_raw(op, 1000, 0, NULL, 0, 0);
	assert_int_equal(run(f, op), -EINVAL);
	assert_string_equal(acall_opcode_name(1000), "?");
}

static void test_null_buffers_complete_efault(void **state)
{
	struct fixture *f = *state;
	int fd = openat(f->dfd, "n", O_RDWR | O_CREAT, 0600);
	struct acall_op *op;

	assert_int_equal(pwrite(fd, "data", 4, 0), 4);
	op = acall_get_op(f->ring);
	acall_prep_read(op, fd, NULL, 4, 0);
	assert_int_equal(run(f, op), -EFAULT);
	op = acall_get_op(f->ring);
	acall_prep_write(op, fd, NULL, 4, 0);
	assert_int_equal(run(f, op), -EFAULT);
	op = acall_get_op(f->ring);
	acall_prep_statx(op, f->dfd, "n", 0, STATX_SIZE, NULL);
	assert_int_equal(run(f, op), -EFAULT);
	op = acall_get_op(f->ring);
	acall_prep_call(op, NULL, NULL);
	assert_int_equal(run(f, op), -EFAULT);
	close(fd);
}

static void test_misuse_of_the_api_is_refused(void **state)
{
	struct fixture *f = *state;
	struct acall_ring_params bad = { .flags = 1 };
	struct acall_ring *r = NULL;
	struct acall_op *op;

	assert_int_equal(acall_ring_new(&bad, &r), -EINVAL);
	assert_null(r);
	bad = (struct acall_ring_params){ .path = 7 };
	assert_int_equal(acall_ring_new(&bad, &r), -EINVAL);
	acall_ring_free(NULL);
	acall_op_done(f->ring, NULL);
	/* Nothing in flight: waiting would never end. */
	assert_int_equal(acall_wait(f->ring, &op), -EAGAIN);
	op = acall_get_op(f->ring);
	acall_prep_nop(op);
	assert_int_equal(acall_op_wait(f->ring, op), -EINVAL);  /* not submitted */
	assert_int_equal(acall_cancel(f->ring, op), -ENOENT);
	acall_op_done(f->ring, op);                             /* never submitted */
	assert_int_equal(acall_submit(f->ring), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_bad_fd_completes_ebadf),
		BOTH_PATHS(test_unknown_opcode_completes_einval),
		BOTH_PATHS(test_null_buffers_complete_efault),
		BOTH_PATHS(test_misuse_of_the_api_is_refused),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
