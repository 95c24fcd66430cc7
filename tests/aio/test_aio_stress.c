/*
 * test_aio_stress.c - aio_suspend() under many threads: each thread that
 * waits reaps the ring's completions itself, one at a time holds the
 * completion queue and the others sleep until it leaves, so these tests
 * hunt lost wake-ups. Twelve threads each keep four O_DIRECT reads and a
 * pipe read in flight and wait with no timeout, tiny ones and long ones
 * while a thread showers them with signals (EINTR); a long wait that times
 * out, a hang, or wrong bytes fail. And a signal handler that calls
 * aio_suspend() while its thread sleeps in aio_suspend() gets its request.
 * With all of acall's workers held by blocked pipe writes, a read queued
 * behind them is cancelled (its completion runs inside aio_cancel()).
 * acall's reaper thread, which would otherwise mask a lost wake-up as a
 * delay, is told to stand aside for a minute (PONY_ACALL_REAPER_STANDBY_US).
 */
#include <stdatomic.h>

#include "helpers.h"

#define THREADS 12
#define ROUNDS 250
#define NREAD 4
#define BS 4096
#define FILE_BLOCKS 256

static int dfd;

struct worker {
	pthread_t t;
	int p[2];
	unsigned seed;
	unsigned rounds, eintr, eagain;
	const char *bad;
};

static void on_usr1(int sig)
{
	(void)sig;
}

/* Waits until every aiocb of list is done, with the given kind of
 * timeout; NULL or an error message. */
static const char *wait_all(const struct aiocb *list[], int n, unsigned kind, struct worker *w)
{
	static const struct timespec tiny = { 0, 10000 }, zero = { 0, 0 }, one_ms = { 0, 1000000 },
				     long_ = { 3, 0 };
	const struct timespec *to = kind == 0 ? NULL : kind == 1 ? &zero : kind == 2 ? &tiny :
				    kind == 3 ? &one_ms : &long_;

	for (;;) {
		const struct aiocb *busy[NREAD + 1];
		int left = 0;
		int64_t t0;

		/* Only those in progress (NULL for the others), as a program
		 * waiting for all of them does. */
		for (int i = 0; i < n; i++) {
			busy[i] = aio_error(list[i]) == EINPROGRESS ? list[i] : NULL;
			left += busy[i] != NULL;
		}
		if (!left)
			return NULL;
		t0 = now_ns();
		if (aio_suspend(busy, n, to) == 0)
			continue;
		if (errno == EINTR) {
			w->eintr++;
			continue;
		}
		if (errno != EAGAIN)
			return "aio_suspend failed";
		w->eagain++;
		/* Four 4 KiB reads and a pipe byte already written: three
		 * seconds without a wake-up is a lost one. */
		if (to == &long_ || now_ns() - t0 > 2500000000LL)
			return "a 3 s aio_suspend timed out: lost wake-up";
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *buf;
	char c;

	if (posix_memalign((void **)&buf, BS, NREAD * BS))
		return w->bad = "no memory", NULL;
	for (unsigned r = 0; r < ROUNDS && !w->bad; r++) {
		struct aiocb cb[NREAD + 1];
		const struct aiocb *list[NREAD + 1];
		unsigned x = (unsigned)rand_r(&w->seed);
		off_t off[NREAD];

		for (int i = 0; i < NREAD; i++) {
			off[i] = (off_t)((unsigned)rand_r(&w->seed) % FILE_BLOCKS) * BS;
			cb[i] = aiocb_for(dfd, buf + i * BS, BS, off[i]);
			if (aio_read(&cb[i]) < 0)
				w->bad = "aio_read failed";
			list[i] = &cb[i];
		}
		cb[NREAD] = aiocb_for(w->p[0], &c, 1, 0);
		if (aio_read(&cb[NREAD]) < 0 || write(w->p[1], "p", 1) != 1)
			w->bad = "pipe read failed";
		list[NREAD] = &cb[NREAD];
		if (!w->bad)
			w->bad = wait_all(list, NREAD + 1, x % 5, w);
		for (int i = 0; i < NREAD + 1 && !w->bad; i++) {
			ssize_t want = i < NREAD ? BS : 1;

			if (aio_error(&cb[i]) != 0 || aio_return(&cb[i]) != want)
				w->bad = "a read failed";
			else if (i < NREAD && buf[i * BS + 17] != (unsigned char)((off[i] + 17) % 251))
				w->bad = "wrong bytes";
			else if (i == NREAD && c != 'p')
				w->bad = "wrong pipe byte";
		}
		w->rounds++;
	}
	free(buf);
	return NULL;
}

static void test_many_threads_in_aio_suspend_lose_no_wakeup(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };        /* no SA_RESTART */
	struct worker w[THREADS];
	unsigned seed = 12345, eintr = 0, eagain = 0;
	int alive;

	(void)state;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	dfd = scratch_file(FILE_BLOCKS * BS, O_RDONLY | O_DIRECT);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .seed = (unsigned)i * 104729u + 3 };
		assert_int_equal(pipe(w[i].p), 0);
		assert_int_equal(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
	}
	/* Signals at random workers until they are all done. */
	do {
		alive = 0;
		for (int i = 0; i < THREADS; i++)
			alive += w[i].rounds < ROUNDS && !w[i].bad;
		if (alive)
			pthread_kill(w[rand_r(&seed) % THREADS].t, SIGUSR1);
		usleep(2000);
	} while (alive);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].bad)
			fail_msg("thread %d, round %u: %s", i, w[i].rounds, w[i].bad);
		assert_int_equal(w[i].rounds, ROUNDS);
		eintr += w[i].eintr;
		eagain += w[i].eagain;
		close(w[i].p[0]);
		close(w[i].p[1]);
	}
	printf("%u rounds, %u EINTR, %u EAGAIN\n", THREADS * ROUNDS, eintr, eagain);
	assert_true(eagain > 0);        /* the zero timeouts did time out */
	close(dfd);
}

/* The request the handler waits for, and what it saw. */
static struct aiocb inner_cb;
static volatile sig_atomic_t inner_state;       /* 1: waiting, 2: done, 3: failed */

static void on_usr2(int sig)
{
	const struct aiocb *list[1] = { &inner_cb };

	(void)sig;
	inner_state = 1;
	while (aio_error(&inner_cb) == EINPROGRESS)
		if (aio_suspend(list, 1, NULL) < 0 && errno != EINTR) {
			inner_state = 3;
			return;
		}
	inner_state = 2;
}

struct plan {
	pthread_t target;
	int outer_w, inner_w;
};

static void *plan_main(void *arg)
{
	struct plan *p = arg;

	usleep(50000);
	pthread_kill(p->target, SIGUSR2);       /* the handler waits for inner */
	usleep(50000);
	if (write(p->inner_w, "i", 1) != 1)
		return NULL;
	usleep(50000);
	if (write(p->outer_w, "o", 1) != 1)
		return NULL;
	return NULL;
}

static void test_a_handler_suspends_while_its_thread_sleeps_in_aio_suspend(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	int outer[2], inner[2];
	char oc = 0, ic = 0;
	struct aiocb cb;
	const struct aiocb *list[1] = { &cb };
	struct plan p;
	pthread_t t;

	(void)state;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	assert_int_equal(pipe(outer), 0);
	assert_int_equal(pipe(inner), 0);
	cb = aiocb_for(outer[0], &oc, 1, 0);
	inner_cb = aiocb_for(inner[0], &ic, 1, 0);
	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(aio_read(&inner_cb), 0);
	p = (struct plan){ pthread_self(), outer[1], inner[1] };
	assert_int_equal(pthread_create(&t, NULL, plan_main, &p), 0);
	while (aio_error(&cb) == EINPROGRESS)
		if (aio_suspend(list, 1, NULL) < 0)
			assert_int_equal(errno, EINTR);
	pthread_join(t, NULL);
	assert_int_equal(inner_state, 2);
	assert_int_equal(aio_return(&inner_cb), 1);
	assert_int_equal(ic, 'i');
	assert_int_equal(aio_return(&cb), 1);
	assert_int_equal(oc, 'o');
	for (int i = 0; i < 2; i++) {
		close(outer[i]);
		close(inner[i]);
	}
}

/* The pipe the SIGEV_SIGNAL handler writes to, then waits on. */
static int late_p[2];
static struct aiocb late_cb;
static volatile sig_atomic_t late_state;        /* 2: got it, 3: failed */

static void on_rt(int sig)
{
	const struct aiocb *list[1] = { &late_cb };

	(void)sig;
	if (write(late_p[1], "l", 1) != 1) {
		late_state = 3;
		return;
	}
	while (aio_error(&late_cb) == EINPROGRESS)
		if (aio_suspend(list, 1, NULL) < 0 && errno != EINTR) {
			late_state = 3;
			return;
		}
	late_state = 2;
}

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "hung: the handler's aio_suspend never returned\n");
	_exit(1);
}

/* One thread alone. A request's SIGEV_SIGNAL lands on the thread that
 * completed it, in aio_suspend: the handler then starts a request and
 * waits for it. Sent while that thread still held the completion queue,
 * nobody could complete it (the reaper stands aside, and could not take
 * the queue anyway). */
static void test_a_completion_signal_handler_can_wait_in_aio_suspend(void **state)
{
	struct sigaction sa = { .sa_handler = on_rt };
	unsigned char *buf = NULL;
	struct aiocb cb;
	const struct aiocb *list[1] = { &cb };
	int fd;

	(void)state;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	signal(SIGALRM, on_alarm);
	assert_int_equal(posix_memalign((void **)&buf, BS, BS), 0);
	fd = scratch_file(16 * BS, O_RDONLY | O_DIRECT);
	assert_int_equal(pipe(late_p), 0);
	for (int rep = 0; rep < 20; rep++) {
		unsigned char c = 0;

		late_state = 0;
		late_cb = aiocb_for(late_p[0], &c, 1, 0);
		assert_int_equal(aio_read(&late_cb), 0);
		cb = aiocb_for(fd, buf, BS, (rep % 16) * BS);
		cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cb.aio_sigevent.sigev_signo = SIGRTMIN + 1;
		alarm(20);
		assert_int_equal(aio_read(&cb), 0);
		while (aio_error(&cb) == EINPROGRESS || !late_state)
			if (aio_suspend(list, 1, NULL) < 0)
				assert_int_equal(errno, EINTR);
		alarm(0);
		assert_int_equal(aio_return(&cb), BS);
		assert_int_equal(late_state, 2);
		assert_int_equal(aio_return(&late_cb), 1);
		assert_int_equal(c, 'l');
	}
	close(late_p[0]);
	close(late_p[1]);
	close(fd);
	free(buf);
}

/* With every acall worker held by a blocked pipe write, a big buffered
 * read waits in acall's queue; cancelling it completes it at once, inside
 * acall_cancel(), on the cancelling thread that holds pony's lock: the one
 * explicit re-entry of src/aio (op_done_locked()), which must give
 * AIO_CANCELED, not a deadlock on the plain lock. */
static void test_cancel_of_a_request_queued_behind_busy_workers(void **state)
{
	enum { NPIPE = 24, SZ = 1 << 20 };     /* more pipes than acall's 16 workers */
	char *buf = calloc(1, SZ), *rbuf = malloc(SZ);
	struct aiocb cbs[NPIPE], rd;
	int p[NPIPE][2], fd;

	assert_non_null(buf);
	assert_non_null(rbuf);
	for (int i = 0; i < NPIPE; i++) {
		assert_int_equal(pipe(p[i]), 0);
		cbs[i] = aiocb_for(p[i][1], buf, SZ, 0);
		assert_int_equal(aio_write(&cbs[i]), 0);
	}
	settle();
	fd = scratch_file(SZ, O_RDONLY);
	rd = aiocb_for(fd, rbuf, SZ, 0);
	assert_int_equal(aio_read(&rd), 0);
	settle();
	assert_int_equal(aio_error(&rd), EINPROGRESS);
	assert_int_equal(aio_cancel(fd, &rd), AIO_CANCELED);
	assert_int_equal(aio_error(&rd), ECANCELED);
	assert_int_equal(aio_return(&rd), -1);
	for (int i = 0; i < NPIPE; i++) {
		for (ssize_t got = 0, n; got < SZ; got += n) {
			n = read(p[i][0], rbuf, SZ);
			assert_true(n > 0);
		}
		assert_int_equal(wait_done(&cbs[i]), 0);
		assert_int_equal(aio_return(&cbs[i]), SZ);
		close(p[i][0]);
		close(p[i][1]);
	}
	close(fd);
	free(buf);
	free(rbuf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_threads_in_aio_suspend_lose_no_wakeup),
		cmocka_unit_test(test_a_handler_suspends_while_its_thread_sleeps_in_aio_suspend),
		cmocka_unit_test(test_a_completion_signal_handler_can_wait_in_aio_suspend),
		cmocka_unit_test(test_cancel_of_a_request_queued_behind_busy_workers),
	};

	setenv("PONY_ACALL_REAPER_STANDBY_US", "60000000", 1);
	return cmocka_run_group_tests(tests, require_pony, NULL);
}
