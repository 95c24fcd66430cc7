/* test_ring.c - the ring's basic life: ops go in, results come out, records are reused. */
#include "helpers.h"

static void test_write_then_read_returns_the_data(void **state)
{
	struct fixture *f = *state;
	char in[4096], out[4096];
	int fd = openat(f->dfd, "data", O_RDWR | O_CREAT, 0600);
	struct acall_op *op;

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i * 7);
	op = acall_get_op(f->ring);
	acall_prep_write(op, fd, in, sizeof(in), 8192);
	assert_int_equal(run(f, op), 4096);
	op = acall_get_op(f->ring);
	acall_prep_fsync(op, fd);
	assert_int_equal(run(f, op), 0);
	op = acall_get_op(f->ring);
	acall_prep_read(op, fd, out, sizeof(out), 8192);
	assert_int_equal(run(f, op), 4096);
	assert_memory_equal(in, out, sizeof(in));
	close(fd);
}

static void test_batch_completes_every_op_with_its_data(void **state)
{
	struct fixture *f = *state;
	enum { N = 100 };
	char bufs[N][512];
	bool seen[N] = { false };
	int fd = openat(f->dfd, "batch", O_RDWR | O_CREAT, 0600);

	assert_true(fd >= 0);
	for (int i = 0; i < N; i++) {
		memset(bufs[i], 'a' + i % 26, sizeof(bufs[i]));
		assert_int_equal(pwrite(fd, bufs[i], 512, i * 512), 512);
		memset(bufs[i], 0, sizeof(bufs[i]));
	}
	for (int i = 0; i < N; i++) {
		struct acall_op *op = acall_get_op(f->ring);

		acall_prep_read(op, fd, bufs[i], 512, (uint64_t)i * 512);
		acall_op_set_data(op, (void *)(intptr_t)i);
	}
	assert_int_equal(acall_submit(f->ring), N);
	for (int k = 0; k < N; k++) {
		struct acall_op *op;
		int i;

		assert_int_equal(acall_wait(f->ring, &op), 0);
		i = (int)(intptr_t)acall_op_data(op);
		assert_int_equal(acall_op_result(op), 512);
		assert_false(seen[i]);
		seen[i] = true;
		assert_int_equal(bufs[i][0], 'a' + i % 26);
		assert_int_equal(bufs[i][511], 'a' + i % 26);
		acall_op_done(f->ring, op);
	}
	assert_int_equal(acall_peek(f->ring, &(struct acall_op *){ NULL }), -EAGAIN);
	close(fd);
}

static void test_op_wait_waits_for_that_op(void **state)
{
	struct fixture *f = *state;
	struct acall_op *a = acall_get_op(f->ring), *b = acall_get_op(f->ring);
	char buf[16];
	int fd = openat(f->dfd, "w", O_RDWR | O_CREAT, 0600);

	assert_int_equal(pwrite(fd, "0123456789abcdef", 16, 0), 16);
	acall_prep_read(a, fd, buf, 4, 0);
	acall_prep_nop(b);
	assert_int_equal(acall_submit(f->ring), 2);
	assert_int_equal(acall_op_wait(f->ring, a), 4);
	assert_memory_equal(buf, "0123", 4);
	assert_int_equal(acall_op_wait(f->ring, b), 0);
	acall_op_done(f->ring, a);
	acall_op_done(f->ring, b);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_write_then_read_returns_the_data),
		BOTH_PATHS(test_batch_completes_every_op_with_its_data),
		BOTH_PATHS(test_op_wait_waits_for_that_op),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
