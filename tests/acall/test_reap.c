/*
 * test_reap.c - acall_reap_wait(): completions on the waiting thread. Proves
 * that callbacks run on the caller once it keeps reaping (the reaper thread
 * stands aside), that timeouts and signals end the wait, and, with many
 * threads reaping one ring at once (one holds the CQ, the others sleep on
 * the word), that no completion is ever lost: a wait with a long timeout
 * that times out although its op completed long before is a lost wake-up.
 * io_uring only (without it the function is a plain futex wait).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"

/* The layer's word: moved by every callback, then acall_reap_wake(). */
static _Atomic uint32_t word;

struct one {
	struct acall_ring *ring;
	_Atomic bool done;
	pthread_t ran_on;
	int64_t res;
};

static void cb_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct one *o = arg;

	o->res = acall_op_result(op);
	o->ran_on = pthread_self();
	atomic_store(&o->done, true);
	atomic_fetch_add(&word, 1);
	acall_reap_wake(ring);          /* wakes word's sleepers too */
}

/* A read of one byte from fd with cb_done into o. */
static void submit_read(struct acall_ring *ring, int fd, char *buf, struct one *o)
{
	struct acall_op *op = acall_get_op(ring);

	assert_non_null(op);
	atomic_store(&o->done, false);
	o->ring = ring;
	acall_prep_read(op, fd, buf, 1, (uint64_t)-1);
	acall_op_set_callback(op, cb_done, o);
	assert_int_equal(acall_submit(ring), 1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits for o with acall_reap_wait(); each wait at most timeout_ns (0:
 * none). -1 on a long wait that timed out (the op is done in a moment: a
 * lost wake-up) or an unexpected return; no cmocka assert, so that
 * threads may call it. */
static int reap_until_done(struct acall_ring *ring, struct one *o, long timeout_ns)
{
	while (!atomic_load(&o->done)) {
		uint32_t seen = atomic_load(&word);
		struct timespec ts = { timeout_ns / 1000000000, timeout_ns % 1000000000 };
		int r;

		if (atomic_load(&o->done))
			break;
		r = acall_reap_wait(ring, &word, seen, timeout_ns ? &ts : NULL);
		if (r != 0 && r != -ETIMEDOUT && r != -EINTR)
			return -1;
		if (r == -ETIMEDOUT && timeout_ns >= 1000000000L) {
			fprintf(stderr, "a %ld ms wait timed out (done: %d)\n",
				timeout_ns / 1000000, (int)atomic_load(&o->done));
			return -1;
		}
	}
	return 0;
}

static void test_callbacks_run_on_the_reaping_thread(void **state)
{
	struct fixture *f = *state;
	unsigned here = 0;
	int p[2];
	char c;

	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < 200; i++) {
		struct one o = { .res = 0 };
		struct timespec ms = { 0, 1000000 };
		int r;

		submit_read(f->ring, p[0], &c, &o);
		/* This thread comes by while the read waits for its byte (a
		 * wait that times out): from then on the reaper stands aside.
		 * Without it the test raced the reaper, which the submission
		 * woke: when the reaper got into the CQ first, the callback
		 * ran there before this thread looked, so this thread never
		 * waited and the reaper never stood aside (0 of 200 under
		 * ASan on a loaded machine). A holder of the CQ leaving moves
		 * the word too (acall_cq_unlock), so 0 is an answer as well. */
		r = acall_reap_wait(f->ring, &word, atomic_load(&word), &ms);
		assert_true(r == 0 || r == -ETIMEDOUT);
		assert_int_equal(write(p[1], "x", 1), 1);
		assert_int_equal(reap_until_done(f->ring, &o, 0), 0);
		assert_int_equal(o.res, 1);
		here += pthread_equal(o.ran_on, pthread_self()) != 0;
	}
	/* Before acall_reap_wait() existed every one ran on the reaper. The
	 * first may still (the reaper was already in the CQ when this thread
	 * came by), and a rare one elsewhere (at most 2 of 200 in 60 ASan runs
	 * beside two busy loops): allowed, since a lost stand-aside shows as
	 * most of them on the reaper. */
	if (here < 190)
		fail_msg("only %u of 200 callbacks ran on the reaping thread", here);
	close(p[0]);
	close(p[1]);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct kicker {
	pthread_t target;
	long delay_us;
};

static void *kick_later(void *arg)
{
	struct kicker *k = arg;

	usleep((useconds_t)k->delay_us);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

static void test_wait_ends_on_timeout_and_on_a_signal(void **state)
{
	struct fixture *f = *state;
	struct sigaction sa = { .sa_handler = on_usr1 };        /* no SA_RESTART */
	struct timespec ts = { 0, 30000000 };
	struct one o = { .res = 0 };
	struct kicker k = { pthread_self(), 50000 };
	pthread_t t;
	int64_t t0;
	int p[2];
	char c;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	assert_int_equal(pipe(p), 0);
	submit_read(f->ring, p[0], &c, &o);     /* blocks: the pipe is empty */
	t0 = now_ns();
	assert_int_equal(acall_reap_wait(f->ring, &word, atomic_load(&word), &ts), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 29000000);
	assert_false(atomic_load(&o.done));

	assert_int_equal(pthread_create(&t, NULL, kick_later, &k), 0);
	t0 = now_ns();
	assert_int_equal(acall_reap_wait(f->ring, &word, atomic_load(&word), NULL), -EINTR);
	assert_true(now_ns() - t0 < 5000000000LL);
	pthread_join(t, NULL);
	assert_false(atomic_load(&o.done));

	/* The op is still there and completes normally. */
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(reap_until_done(f->ring, &o, 2000000000L), 0);
	assert_int_equal(o.res, 1);
	assert_int_equal(c, 'y');
	close(p[0]);
	close(p[1]);
}

static int64_t sleep_50ms(void *arg)
{
	(void)arg;
	usleep(50000);
	return 7;
}

/* An op on a worker completes with no CQE: its callback moves the word and
 * kicks the thread sleeping in io_uring_enter. */
static void test_a_worker_completion_wakes_the_thread_in_the_cq(void **state)
{
	struct fixture *f = *state;

	for (int rep = 0; rep < 5; rep++) {
		struct acall_op *op = acall_get_op(f->ring);
		struct one o = { .ring = f->ring };
		int64_t t0 = now_ns();

		assert_non_null(op);
		acall_prep_call(op, sleep_50ms, NULL);
		acall_op_set_callback(op, cb_done, &o);
		assert_int_equal(acall_submit(f->ring), 1);
		assert_int_equal(reap_until_done(f->ring, &o, 2000000000L), 0);
		assert_int_equal(o.res, 7);
		assert_true(now_ns() - t0 < 1500000000LL);
	}
}

struct handover {
	struct acall_ring *ring;
	int p[2];
	struct one o;
	char c;
	int r;
};

static void *handover_main(void *arg)
{
	struct handover *h = arg;

	h->r = reap_until_done(h->ring, &h->o, 2000000000L);
	return NULL;
}

/* A holds the CQ, B finds it busy and sleeps on the word; A's op
 * completes and A leaves; B's op completes only then. B must be in the CQ
 * by then (the holder wakes it as it leaves), or nobody reaps it. */
static void test_a_waiter_behind_the_cq_holder_takes_over(void **state)
{
	struct fixture *f = *state;

	for (int rep = 0; rep < 10; rep++) {
		struct handover h[2];
		pthread_t t[2];

		for (int i = 0; i < 2; i++) {
			h[i] = (struct handover){ .ring = f->ring };
			assert_int_equal(pipe(h[i].p), 0);
			submit_read(f->ring, h[i].p[0], &h[i].c, &h[i].o);
		}
		assert_int_equal(pthread_create(&t[0], NULL, handover_main, &h[0]), 0);
		usleep(5000);
		assert_int_equal(pthread_create(&t[1], NULL, handover_main, &h[1]), 0);
		usleep(5000);
		assert_int_equal(write(h[0].p[1], "a", 1), 1);
		pthread_join(t[0], NULL);
		usleep(20000);
		assert_int_equal(write(h[1].p[1], "b", 1), 1);
		pthread_join(t[1], NULL);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(h[i].r, 0);
			assert_int_equal(h[i].o.res, 1);
			close(h[i].p[0]);
			close(h[i].p[1]);
		}
	}
}

#define STRESS_THREADS 12
#define STRESS_ROUNDS 1500

struct stress {
	struct acall_ring *ring;
	int p[2];
	unsigned seed;
	unsigned rounds;
	bool bad;
};

/* A thread's round: a read on its pipe; the byte written before or after
 * the submission, by itself or by its neighbour; waited for with no, a
 * tiny or a long timeout. */
static void *stress_main(void *arg)
{
	struct stress *s = arg;
	char c;

	for (unsigned i = 0; i < STRESS_ROUNDS; i++) {
		struct one o = { .res = 0 };
		unsigned r = rand_r(&s->seed);
		static const long timeouts[] = { 0, 1000, 50000, 2000000000L };

		struct acall_op *op = acall_get_op(s->ring);

		if (!op || ((r & 1) && write(s->p[1], "s", 1) != 1))
			break;
		o.ring = s->ring;
		acall_prep_read(op, s->p[0], &c, 1, (uint64_t)-1);
		acall_op_set_callback(op, cb_done, &o);
		if (acall_submit(s->ring) != 1)
			break;
		if (!(r & 1)) {
			if (r & 2)
				sched_yield();
			if (write(s->p[1], "s", 1) != 1)
				break;
		}
		if (reap_until_done(s->ring, &o, timeouts[(r >> 2) & 3]) < 0 ||
		    o.res != 1 || c != 's') {
			fprintf(stderr, "round %u: read %lld\n", i, (long long)o.res);
			s->bad = true;
			break;
		}
		s->rounds++;
	}
	return NULL;
}

static void test_many_threads_reaping_lose_no_completion(void **state)
{
	struct fixture *f = *state;
	struct stress s[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];

	for (int i = 0; i < STRESS_THREADS; i++) {
		s[i] = (struct stress){ .ring = f->ring, .seed = (unsigned)i * 7919u + 1 };
		assert_int_equal(pipe(s[i].p), 0);
		assert_int_equal(pthread_create(&t[i], NULL, stress_main, &s[i]), 0);
	}
	for (int i = 0; i < STRESS_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_false(s[i].bad);
		assert_int_equal(s[i].rounds, STRESS_ROUNDS);
		close(s[i].p[0]);
		close(s[i].p[1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_callbacks_run_on_the_reaping_thread,
						setup_uring, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_wait_ends_on_timeout_and_on_a_signal,
						setup_uring, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_a_worker_completion_wakes_the_thread_in_the_cq,
						setup_uring, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_a_waiter_behind_the_cq_holder_takes_over,
						setup_uring, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_many_threads_reaping_lose_no_completion,
						setup_uring, fixture_teardown),
	};

	/* The reaper takes the CQ back only after a minute without callers:
	 * a lost wake-up shows as a wait that times out. */
	setenv("PONY_ACALL_REAPER_STANDBY_US", "60000000", 1);
	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
