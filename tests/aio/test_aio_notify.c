/*
 * test_aio_notify.c - every sigevent a request or a list can ask for is
 * delivered once its result is readable: SIGEV_SIGNAL with the
 * application's si_value and si_code SI_ASYNCIO, SIGEV_THREAD on a thread
 * of its own, SIGEV_NONE with nothing; a cancelled request is notified too,
 * once pony's lock is released (its handler may submit).
 * lio_listio: LIO_WAIT returns when all are done (EIO if one failed),
 * LIO_NOWAIT notifies the list once, LIO_NOP entries are skipped.
 */
#include "helpers.h"

#define SIG_REQ (SIGRTMIN + 3)

static volatile sig_atomic_t sig_count;
static volatile int sig_code, sig_value;
static volatile int sig_seen_error;     /* aio_error() of the aiocb in si_value */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sig_code = si->si_code;
	sig_value = si->si_value.sival_int;
	sig_count++;
}

static void on_signal_ptr(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sig_seen_error = aio_error(si->si_value.sival_ptr);
	sig_count++;
}

static void catch_signal(void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa = { .sa_sigaction = fn, .sa_flags = SA_SIGINFO | SA_RESTART };

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIG_REQ, &sa, NULL), 0);
	sig_count = 0;
}

static void wait_for(volatile sig_atomic_t *count, int n)
{
	for (int i = 0; i < 5000 && *count < n; i++)
		usleep(1000);
	assert_int_equal(*count, n);
}

static void test_signal_carries_value_and_si_asyncio(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	catch_signal(on_signal);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_REQ;
	cb.aio_sigevent.sigev_value.sival_int = 4242;
	assert_int_equal(aio_read(&cb), 0);
	wait_for(&sig_count, 1);
	assert_int_equal(sig_code, SI_ASYNCIO);
	assert_int_equal(sig_value, 4242);
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

/* The handler already sees the result (published before the signal). */
static void test_result_is_readable_in_the_handler(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	catch_signal(on_signal_ptr);
	sig_seen_error = -2;
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_REQ;
	cb.aio_sigevent.sigev_value.sival_ptr = &cb;
	assert_int_equal(aio_read(&cb), 0);
	wait_for(&sig_count, 1);
	assert_int_equal(sig_seen_error, 0);
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

static volatile sig_atomic_t thread_count;
static volatile int thread_value;
static pthread_t thread_self;

static void on_thread(union sigval v)
{
	thread_value = v.sival_int;
	thread_self = pthread_self();
	thread_count++;
}

static void test_thread_runs_the_function_elsewhere(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	thread_count = 0;
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = on_thread;
	cb.aio_sigevent.sigev_value.sival_int = 77;
	assert_int_equal(aio_read(&cb), 0);
	wait_for(&thread_count, 1);
	assert_int_equal(thread_value, 77);
	assert_false(pthread_equal(thread_self, pthread_self()));
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

static void test_none_sends_nothing(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	catch_signal(on_signal);
	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(wait_done(&cb), 0);
	usleep(20000);
	assert_int_equal(sig_count, 0);
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

static void test_cancelled_request_is_notified(void **state)
{
	char buf[8];
	struct aiocb cb;
	int p[2];

	catch_signal(on_signal);
	assert_int_equal(pipe(p), 0);
	cb = aiocb_for(p[0], buf, sizeof(buf), 0);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_REQ;
	cb.aio_sigevent.sigev_value.sival_int = 5;
	assert_int_equal(aio_read(&cb), 0);
	settle();
	assert_int_equal(aio_cancel(p[0], &cb), AIO_CANCELED);
	wait_for(&sig_count, 1);
	assert_int_equal(sig_value, 5);
	assert_int_equal(aio_error(&cb), ECANCELED);
	close(p[0]);
	close(p[1]);
}

static struct aiocb handler_cb;
static volatile int handler_submitted;

/* Submits handler_cb: the signal came after pony let its lock go. */
static void on_signal_submit(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	handler_submitted = aio_write(&handler_cb) == 0;
	sig_count++;
}

/* A request queued behind another on a pipe is cancelled inside
 * aio_cancel(), under pony's lock; its signal, sent to this process, lands
 * on this thread, and only once the lock is released: its handler may
 * submit a request (a plain lock taken twice would hang). */
static void test_handler_of_a_cancelled_request_can_submit(void **state)
{
	int fd = scratch_file(0, O_RDWR);
	char buf[2][8], out[4] = "abc";
	struct aiocb cbs[2];
	int p[2];

	catch_signal(on_signal_submit);
	handler_submitted = 0;
	handler_cb = aiocb_for(fd, out, sizeof(out), 0);
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < 2; i++) {
		cbs[i] = aiocb_for(p[0], buf[i], sizeof(buf[i]), 0);
		cbs[i].aio_sigevent.sigev_notify = i ? SIGEV_SIGNAL : SIGEV_NONE;
		cbs[i].aio_sigevent.sigev_signo = SIG_REQ;
		assert_int_equal(aio_read(&cbs[i]), 0);
	}
	settle();
	assert_int_equal(aio_cancel(p[0], &cbs[1]), AIO_CANCELED);
	wait_for(&sig_count, 1);
	assert_true(handler_submitted);
	assert_int_equal(wait_done(&handler_cb), 0);
	assert_int_equal(aio_return(&handler_cb), sizeof(out));
	assert_int_equal(aio_cancel(p[0], &cbs[0]), AIO_CANCELED);
	assert_int_equal(aio_error(&cbs[1]), ECANCELED);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void test_lio_wait_returns_with_all_done(void **state)
{
	enum { N = 16 };
	int fd = scratch_file(N * 512, O_RDWR);
	static char bufs[N][512];
	struct aiocb cbs[N + 1], *list[N + 2];

	for (int i = 0; i < N; i++) {
		cbs[i] = aiocb_for(fd, bufs[i], 512, i * 512);
		cbs[i].aio_lio_opcode = LIO_READ;
		list[i] = &cbs[i];
	}
	cbs[N] = aiocb_for(fd, NULL, 0, 0);
	cbs[N].aio_lio_opcode = LIO_NOP;
	list[N] = &cbs[N];
	list[N + 1] = NULL;
	assert_int_equal(lio_listio(LIO_WAIT, list, N + 2, NULL), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(aio_error(&cbs[i]), 0);
		assert_int_equal(aio_return(&cbs[i]), 512);
		assert_int_equal((unsigned char)bufs[i][0], (i * 512) % 251);
	}
	close(fd);
}

static void test_lio_wait_says_eio_when_one_fails(void **state)
{
	int fd = scratch_file(512, O_RDWR);
	char a[512], b[512];
	struct aiocb good = aiocb_for(fd, a, 512, 0), bad = aiocb_for(-1, b, 512, 0);
	struct aiocb *list[2] = { &good, &bad };

	good.aio_lio_opcode = LIO_READ;
	bad.aio_lio_opcode = LIO_READ;
	assert_int_equal(lio_listio(LIO_WAIT, list, 2, NULL), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(aio_error(&good), 0);
	assert_int_equal(aio_error(&bad), EBADF);
	close(fd);
}

static void test_lio_nowait_notifies_the_list_once(void **state)
{
	enum { N = 8 };
	int fd = scratch_file(N * 512, O_RDWR);
	static char bufs[N][512];
	struct aiocb cbs[N], *list[N];
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIG_REQ };

	catch_signal(on_signal);
	sev.sigev_value.sival_int = 99;
	for (int i = 0; i < N; i++) {
		cbs[i] = aiocb_for(fd, bufs[i], 512, i * 512);
		cbs[i].aio_lio_opcode = LIO_WRITE;
		list[i] = &cbs[i];
	}
	assert_int_equal(lio_listio(LIO_NOWAIT, list, N, &sev), 0);
	wait_for(&sig_count, 1);
	assert_int_equal(sig_value, 99);
	for (int i = 0; i < N; i++)
		assert_int_equal(aio_return(&cbs[i]), 512);
	usleep(20000);
	assert_int_equal(sig_count, 1);
	close(fd);
}

static void test_lio_nowait_thread_notification(void **state)
{
	int fd = scratch_file(512, O_RDWR);
	char buf[512];
	struct aiocb cb = aiocb_for(fd, buf, 512, 0), *list[1] = { &cb };
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD };

	thread_count = 0;
	sev.sigev_notify_function = on_thread;
	sev.sigev_value.sival_int = 31;
	cb.aio_lio_opcode = LIO_READ;
	assert_int_equal(lio_listio(LIO_NOWAIT, list, 1, &sev), 0);
	wait_for(&thread_count, 1);
	assert_int_equal(thread_value, 31);
	assert_int_equal(aio_return(&cb), 512);
	close(fd);
}

static void test_lio_rejects_bad_mode(void **state)
{
	struct aiocb *list[1] = { NULL };

	assert_int_equal(lio_listio(12345, list, 1, NULL), -1);
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_carries_value_and_si_asyncio),
		cmocka_unit_test(test_result_is_readable_in_the_handler),
		cmocka_unit_test(test_thread_runs_the_function_elsewhere),
		cmocka_unit_test(test_none_sends_nothing),
		cmocka_unit_test(test_cancelled_request_is_notified),
		cmocka_unit_test(test_handler_of_a_cancelled_request_can_submit),
		cmocka_unit_test(test_lio_wait_returns_with_all_done),
		cmocka_unit_test(test_lio_wait_says_eio_when_one_fails),
		cmocka_unit_test(test_lio_nowait_notifies_the_list_once),
		cmocka_unit_test(test_lio_nowait_thread_notification),
		cmocka_unit_test(test_lio_rejects_bad_mode),
	};

	return cmocka_run_group_tests(tests, require_pony, NULL);
}
