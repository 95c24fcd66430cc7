/*
 * test_flags.c - links, barriers, and the other ways to learn of a
 * completion (callbacks, the eventfd), on both paths.
 */
#include <poll.h>
#include <stdatomic.h>
#include <sys/eventfd.h>

#include "helpers.h"

static void test_linked_ops_run_in_order(void **state)
{
	struct fixture *f = *state;
	int fd = openat(f->dfd, "link", O_RDWR | O_CREAT, 0600);
	struct acall_op *w = acall_get_op(f->ring), *s, *r;
	char buf[3] = { 0 };

	acall_prep_write(w, fd, "abc", 3, 0);
	acall_op_set_flags(w, ACALL_F_LINK);
	s = acall_get_op(f->ring);
	acall_prep_fsync(s, fd);
	acall_op_set_flags(s, ACALL_F_LINK);
	r = acall_get_op(f->ring);
	acall_prep_read(r, fd, buf, 3, 0);
	assert_int_equal(acall_submit(f->ring), 3);
	assert_int_equal(acall_op_wait(f->ring, r), 3);
	assert_int_equal(acall_op_wait(f->ring, w), 3);
	assert_int_equal(acall_op_wait(f->ring, s), 0);
	assert_memory_equal(buf, "abc", 3);
	acall_op_done(f->ring, w);
	acall_op_done(f->ring, s);
	acall_op_done(f->ring, r);
	close(fd);
}

static int64_t count_call(void *arg)
{
	atomic_int *n = arg;

	return atomic_fetch_add(n, 1) + 1;
}

static void test_failed_op_cancels_the_rest_of_its_chain(void **state)
{
	struct fixture *f = *state;
	struct acall_op *a = acall_get_op(f->ring), *b, *c;
	char buf[8];
	atomic_int calls = 0;

	acall_prep_read(a, 9999, buf, sizeof(buf), 0);    /* bad fd */
	acall_op_set_flags(a, ACALL_F_LINK);
	b = acall_get_op(f->ring);
	acall_prep_call(b, count_call, &calls);         /* a mixed chain, too */
	acall_op_set_flags(b, ACALL_F_LINK);
	c = acall_get_op(f->ring);
	acall_prep_nop(c);
	assert_int_equal(acall_submit(f->ring), 3);
	assert_int_equal(acall_op_wait(f->ring, a), -EBADF);
	assert_int_equal(acall_op_wait(f->ring, b), -ECANCELED);
	assert_int_equal(acall_op_wait(f->ring, c), -ECANCELED);
	assert_int_equal(atomic_load(&calls), 0);
	acall_op_done(f->ring, a);
	acall_op_done(f->ring, b);
	acall_op_done(f->ring, c);
}

struct order {
	atomic_int seq;
	int barrier_at, after_at;
};

static int64_t barrier_call(void *arg)
{
	struct order *o = arg;

	o->barrier_at = atomic_fetch_add(&o->seq, 1) + 1;
	return 0;
}

static int64_t after_call(void *arg)
{
	struct order *o = arg;

	o->after_at = atomic_fetch_add(&o->seq, 1) + 1;
	return 0;
}

static void test_barrier_waits_for_earlier_ops_and_holds_later_ones(void **state)
{
	struct fixture *f = *state;
	struct order o = { .seq = 0 };
	struct acall_op *rd = acall_get_op(f->ring), *bar, *after;
	char buf[4];
	int p[2];

	assert_int_equal(pipe(p), 0);
	acall_prep_read(rd, p[0], buf, 4, (uint64_t)-1);
	bar = acall_get_op(f->ring);
	acall_prep_call(bar, barrier_call, &o);
	acall_op_set_flags(bar, ACALL_F_BARRIER);
	assert_int_equal(acall_submit(f->ring), 2);
	after = acall_get_op(f->ring);
	acall_prep_call(after, after_call, &o);
	assert_int_equal(acall_submit(f->ring), 1);
	usleep(30000);
	assert_int_equal(atomic_load(&o.seq), 0);       /* both held by the read */
	assert_int_equal(write(p[1], "go!!", 4), 4);
	assert_int_equal(acall_op_wait(f->ring, rd), 4);
	assert_int_equal(acall_op_wait(f->ring, bar), 0);
	assert_int_equal(acall_op_wait(f->ring, after), 0);
	assert_int_equal(o.barrier_at, 1);
	assert_int_equal(o.after_at, 2);
	acall_op_done(f->ring, rd);
	acall_op_done(f->ring, bar);
	acall_op_done(f->ring, after);
	close(p[0]);
	close(p[1]);
}

struct cb_state {
	atomic_int n;
	atomic_int bad;
};

static void on_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct cb_state *s = arg;

	if (acall_op_result(op) != (int64_t)(intptr_t)acall_op_data(op))
		atomic_fetch_add(&s->bad, 1);
	atomic_fetch_add(&s->n, 1);
}

static void test_callbacks_run_once_per_op(void **state)
{
	struct fixture *f = *state;
	int fd = openat(f->dfd, "cb", O_RDWR | O_CREAT, 0600);
	struct cb_state s = { 0 };
	static char buf[64][100];

	assert_int_equal(ftruncate(fd, 64 * 100 - 50), 0);
	for (int i = 0; i < 64; i++) {
		struct acall_op *op = acall_get_op(f->ring);

		acall_prep_read(op, fd, buf[i], 100, (uint64_t)i * 100);
		acall_op_set_data(op, (void *)(intptr_t)(i == 63 ? 50 : 100));
		acall_op_set_callback(op, on_done, &s);
	}
	assert_int_equal(acall_submit(f->ring), 64);
	for (int i = 0; i < 5000 && atomic_load(&s.n) < 64; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&s.n), 64);
	assert_int_equal(atomic_load(&s.bad), 0);
	close(fd);
}

static void test_eventfd_signals_ring_wide_completions(void **state)
{
	struct fixture *f = *state;
	int efd = acall_ring_eventfd(f->ring);
	unsigned got = 0;
	struct acall_op *op;
	atomic_int calls = 0;

	assert_true(efd >= 0);
	assert_int_equal(acall_ring_eventfd(f->ring), efd);     /* one per ring */
	for (int i = 0; i < 10; i++)
		acall_prep_nop(acall_get_op(f->ring));
	acall_prep_call(acall_get_op(f->ring), count_call, &calls);
	assert_int_equal(acall_submit(f->ring), 11);
	while (got < 11) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };
		eventfd_t v;

		assert_int_equal(poll(&pfd, 1, 5000), 1);
		eventfd_read(efd, &v);
		while (acall_peek(f->ring, &op) == 0) {
			assert_int_equal(acall_op_result(op), acall_op_opcode(op) == ACALL_OP_CALL);
			acall_op_done(f->ring, op);
			got++;
		}
	}
	assert_int_equal(atomic_load(&calls), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PATHS(test_linked_ops_run_in_order),
		BOTH_PATHS(test_failed_op_cancels_the_rest_of_its_chain),
		BOTH_PATHS(test_barrier_waits_for_earlier_ops_and_holds_later_ones),
		BOTH_PATHS(test_callbacks_run_once_per_op),
		BOTH_PATHS(test_eventfd_signals_ring_wide_completions),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
