/*
 * test_cancel.c - an op blocked in the kernel (a read from an empty pipe)
 * can be cancelled on both paths, and a ring freed with ops in flight shuts
 * down cleanly (ASan checks that nothing leaks).
 */
#include "helpers.h"

static void test_cancel_stops_a_read_from_an_empty_pipe(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);
	char buf[8];
	int p[2];
	int64_t r;

	assert_int_equal(pipe(p), 0);
	acall_prep_read(op, p[0], buf, sizeof(buf), (uint64_t)-1);
	assert_int_equal(acall_submit(f->ring), 1);
	usleep(20000);  /* let it block */
	assert_int_equal(acall_cancel(f->ring, op), 0);
	r = acall_op_wait(f->ring, op);
	assert_true(r == -ECANCELED || r == -EINTR);
	acall_op_done(f->ring, op);
	/* The ring still works, and the pipe was not read from. */
	assert_int_equal(write(p[1], "ok", 2), 2);
	op = acall_get_op(f->ring);
	acall_prep_read(op, p[0], buf, sizeof(buf), (uint64_t)-1);
	assert_int_equal(run(f, op), 2);
	assert_memory_equal(buf, "ok", 2);
	close(p[0]);
	close(p[1]);
}

static void test_cancel_of_a_completed_op_is_refused(void **state)
{
	struct fixture *f = *state;
	struct acall_op *op = acall_get_op(f->ring);

	acall_prep_nop(op);
	assert_int_equal(acall_submit(f->ring), 1);
	assert_int_equal(acall_op_wait(f->ring, op), 0);
	assert_int_equal(acall_cancel(f->ring, op), -ENOENT);
	acall_op_done(f->ring, op);
}

static void test_queued_op_behind_blocked_ones_is_cancelled(void **state)
{
	struct fixture *f = *state;
	struct acall_op *ops[4];
	char buf[4][8];
	int p[2];

	assert_int_equal(pipe(p), 0);
	/* More blocking reads than workers: some wait in the queue. */
	for (int i = 0; i < 4; i++) {
		ops[i] = acall_get_op(f->ring);
		acall_prep_read(ops[i], p[0], buf[i], 8, (uint64_t)-1);
	}
	assert_int_equal(acall_submit(f->ring), 4);
	usleep(20000);
	for (int i = 3; i >= 0; i--)
		assert_int_equal(acall_cancel(f->ring, ops[i]), 0);
	for (int i = 0; i < 4; i++) {
		int64_t r = acall_op_wait(f->ring, ops[i]);

		assert_true(r == -ECANCELED || r == -EINTR);
		acall_op_done(f->ring, ops[i]);
	}
	close(p[0]);
	close(p[1]);
}

/* No fixture: the ring is freed while its ops still block. */
static void ring_freed_with_blocked_ops(enum acall_path path)
{
	struct acall_ring_params prm = { .path = path, .workers = 2 };
	struct acall_ring *ring;
	char buf[3][8];
	int p[2];

	assert_int_equal(acall_ring_new(&prm, &ring), 0);
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < 3; i++)
		acall_prep_read(acall_get_op(ring), p[0], buf[i], 8, (uint64_t)-1);
	assert_int_equal(acall_submit(ring), 3);
	acall_prep_nop(acall_get_op(ring));     /* prepared, never submitted */
	usleep(20000);
	acall_ring_free(ring);
	close(p[0]);
	close(p[1]);
}

static void test_ring_freed_with_ops_in_flight_shuts_down(void **state)
{
	(void)state;
	ring_freed_with_blocked_ops(ACALL_PATH_URING);
	ring_freed_with_blocked_ops(ACALL_PATH_WORKERS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_cancel_stops_a_read_from_an_empty_pipe),
		BOTH_PATHS(test_cancel_of_a_completed_op_is_refused),
		BOTH_PATHS(test_queued_op_behind_blocked_ones_is_cancelled),
		cmocka_unit_test(test_ring_freed_with_ops_in_flight_shuts_down),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
