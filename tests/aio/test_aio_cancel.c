/*
 * test_aio_cancel.c - aio_cancel really stops a request blocked in the
 * kernel (AIO_CANCELED, ECANCELED, -1, and its notification), leaves alone
 * what it must (AIO_NOTCANCELED: a socket write partly sent; AIO_ALLDONE:
 * finished work), and aio_suspend / submission report their errors:
 * timeouts (EAGAIN), signals (EINTR), bad arguments (EINVAL, EBADF) and
 * exhaustion (EAGAIN, with PONY_AIO_MAX set by main()).
 */
#include <sys/socket.h>

#include "helpers.h"

#define TEST_MAX 16     /* PONY_AIO_MAX for this program */

static void test_cancel_stops_a_read_blocked_on_an_empty_pipe(void **state)
{
	char buf[8], got[3] = { 0 };
	struct aiocb cb;
	int p[2];

	assert_int_equal(pipe(p), 0);
	cb = aiocb_for(p[0], buf, sizeof(buf), 0);
	assert_int_equal(aio_read(&cb), 0);
	settle();
	assert_int_equal(aio_error(&cb), EINPROGRESS);
	assert_int_equal(aio_cancel(p[0], &cb), AIO_CANCELED);
	assert_int_equal(aio_error(&cb), ECANCELED);
	assert_int_equal(aio_return(&cb), -1);
	/* Nothing was consumed: the next read gets what is written now. */
	assert_int_equal(write(p[1], "ok", 2), 2);
	assert_int_equal(read(p[0], got, 2), 2);
	assert_string_equal(got, "ok");
	close(p[0]);
	close(p[1]);
}

static void test_cancel_all_on_a_socket_stops_every_read(void **state)
{
	enum { N = 4 };
	char bufs[N][8];
	struct aiocb cbs[N];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = aiocb_for(sv[0], bufs[i], 8, 0);
		assert_int_equal(aio_read(&cbs[i]), 0);
	}
	settle();
	assert_int_equal(aio_cancel(sv[0], NULL), AIO_CANCELED);
	for (int i = 0; i < N; i++) {
		assert_int_equal(aio_error(&cbs[i]), ECANCELED);
		assert_int_equal(aio_return(&cbs[i]), -1);
	}
	close(sv[0]);
	close(sv[1]);
}

static void test_cancel_of_finished_work_is_all_done(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(wait_done(&cb), 0);
	assert_int_equal(aio_cancel(fd, &cb), AIO_ALLDONE);
	assert_int_equal(aio_cancel(fd, NULL), AIO_ALLDONE);
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

/*
 * Small buffered writes wait in pony for a thread to copy them: cancelling
 * them all races with that copy, and whatever the outcome, it is told
 * right: a write that says ECANCELED (-1) left the file alone, one that
 * says 0 wrote its bytes, and aio_cancel()'s answer agrees with them.
 */
static void test_cancelled_buffered_writes_leave_the_file_alone(void **state)
{
	enum { N = TEST_MAX, LEN = 512 };
	int fd = scratch_file(N * LEN, O_RDWR);
	char out[LEN], in[LEN];
	struct aiocb cbs[N];
	int r, ncanceled = 0;

	memset(out, 'x', sizeof(out));
	for (int i = 0; i < N; i++) {
		cbs[i] = aiocb_for(fd, out, LEN, (off_t)i * LEN);
		assert_int_equal(aio_write(&cbs[i]), 0);
	}
	r = aio_cancel(fd, NULL);
	assert_true(r == AIO_CANCELED || r == AIO_NOTCANCELED || r == AIO_ALLDONE);
	for (int i = 0; i < N; i++) {
		int e = wait_done(&cbs[i]);

		assert_int_equal(pread(fd, in, LEN, (off_t)i * LEN), LEN);
		if (e == ECANCELED) {
			ncanceled++;
			assert_int_equal(aio_return(&cbs[i]), -1);
			for (int k = 0; k < LEN; k++)
				assert_int_equal((unsigned char)in[k], (i * LEN + k) % 251);
		} else {
			assert_int_equal(e, 0);
			assert_int_equal(aio_return(&cbs[i]), LEN);
			assert_memory_equal(in, out, LEN);
		}
	}
	if (r == AIO_ALLDONE)
		assert_int_equal(ncanceled, 0);
	else if (r == AIO_CANCELED)
		assert_true(ncanceled > 0);
	close(fd);
}

/* A write blocked on a full socket buffer has sent part of its data: it
 * cannot be taken back, so it is not cancelled; the ones queued behind it
 * (socket writes keep their order) are. */
static void test_blocked_socket_write_is_not_cancelled(void **state)
{
	enum { N = 3, SZ = 1 << 20 };
	char *buf = calloc(1, SZ);
	struct aiocb cbs[N];
	int sv[2], sndbuf = 4096;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = aiocb_for(sv[0], buf, SZ, 0);
		assert_int_equal(aio_write(&cbs[i]), 0);
	}
	settle();
	assert_int_equal(aio_cancel(sv[0], NULL), AIO_NOTCANCELED);
	assert_int_equal(aio_error(&cbs[0]), EINPROGRESS);
	for (int i = 1; i < N; i++)
		assert_int_equal(aio_error(&cbs[i]), ECANCELED);
	/* Closing the reader ends the blocked write. */
	close(sv[1]);
	assert_int_not_equal(wait_done(&cbs[0]), EINPROGRESS);
	aio_return(&cbs[0]);
	close(sv[0]);
	free(buf);
}

static void test_cancel_rejects_bad_fd_and_mismatch(void **state)
{
	struct aiocb cb = aiocb_for(0, NULL, 0, 0);

	assert_int_equal(aio_cancel(-1, NULL), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(aio_cancel(1, &cb), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_suspend_times_out_with_eagain(void **state)
{
	char buf[8];
	struct aiocb cb;
	const struct aiocb *list[2] = { NULL, &cb };
	struct timespec ts = { .tv_nsec = 50000000 };
	int p[2];
	int64_t t0;

	assert_int_equal(pipe(p), 0);
	cb = aiocb_for(p[0], buf, sizeof(buf), 0);
	assert_int_equal(aio_read(&cb), 0);
	t0 = now_ns();
	assert_int_equal(aio_suspend(list, 2, &ts), -1);
	assert_int_equal(errno, EAGAIN);
	assert_true(now_ns() - t0 >= 50000000);
	/* And returns at once when one is done. */
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(aio_suspend(list, 2, NULL), 0);
	assert_int_equal(aio_error(&cb), 0);
	assert_int_equal(aio_return(&cb), 1);
	close(p[0]);
	close(p[1]);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_suspend_is_interrupted_by_a_signal(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm };   /* no SA_RESTART */
	char buf[8];
	struct aiocb cb;
	const struct aiocb *list[1] = { &cb };
	int p[2];

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(pipe(p), 0);
	cb = aiocb_for(p[0], buf, sizeof(buf), 0);
	assert_int_equal(aio_read(&cb), 0);
	ualarm(50000, 0);
	assert_int_equal(aio_suspend(list, 1, NULL), -1);
	assert_int_equal(errno, EINTR);
	assert_int_equal(aio_cancel(p[0], &cb), AIO_CANCELED);
	close(p[0]);
	close(p[1]);
}

static void test_bad_offset_and_priority_are_einval(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[8];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), -1);

	assert_int_equal(aio_read(&cb), -1);
	assert_int_equal(errno, EINVAL);
	cb.aio_offset = 0;
	cb.aio_reqprio = -1;
	assert_int_equal(aio_write(&cb), -1);
	assert_int_equal(errno, EINVAL);
	cb.aio_reqprio = AIO_PRIO_DELTA_MAX + 1;
	assert_int_equal(aio_read(&cb), -1);
	assert_int_equal(errno, EINVAL);
	cb.aio_reqprio = 0;
	cb.aio_sigevent.sigev_notify = 12345;
	assert_int_equal(aio_read(&cb), -1);
	assert_int_equal(errno, EINVAL);
	close(fd);
}

/* As glibc: a read of a bad fd, or a write to a read-only one, is
 * accepted and fails through aio_error(). */
static void test_bad_fd_fails_through_aio_error(void **state)
{
	int fd = scratch_file(64, O_RDONLY);
	char buf[8];
	struct aiocb r = aiocb_for(-1, buf, sizeof(buf), 0), w;

	assert_int_equal(aio_read(&r), 0);
	assert_int_equal(wait_done(&r), EBADF);
	assert_int_equal(aio_return(&r), -1);
	w = aiocb_for(fd, buf, sizeof(buf), 0);
	assert_int_equal(aio_write(&w), 0);
	assert_int_equal(wait_done(&w), EBADF);
	assert_int_equal(aio_return(&w), -1);
	close(fd);
}

static void test_exhaustion_is_eagain(void **state)
{
	char bufs[TEST_MAX + 1][4];
	struct aiocb cbs[TEST_MAX + 1];
	int p[2];

	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < TEST_MAX; i++) {
		cbs[i] = aiocb_for(p[0], bufs[i], 4, 0);
		assert_int_equal(aio_read(&cbs[i]), 0);
	}
	cbs[TEST_MAX] = aiocb_for(p[0], bufs[TEST_MAX], 4, 0);
	assert_int_equal(aio_read(&cbs[TEST_MAX]), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(aio_cancel(p[0], NULL), AIO_CANCELED);
	/* Room again. */
	assert_int_equal(aio_read(&cbs[TEST_MAX]), 0);
	assert_int_equal(aio_cancel(p[0], NULL), AIO_CANCELED);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cancel_stops_a_read_blocked_on_an_empty_pipe),
		cmocka_unit_test(test_cancel_all_on_a_socket_stops_every_read),
		cmocka_unit_test(test_cancel_of_finished_work_is_all_done),
		cmocka_unit_test(test_blocked_socket_write_is_not_cancelled),
		cmocka_unit_test(test_cancelled_buffered_writes_leave_the_file_alone),
		cmocka_unit_test(test_cancel_rejects_bad_fd_and_mismatch),
		cmocka_unit_test(test_suspend_times_out_with_eagain),
		cmocka_unit_test(test_suspend_is_interrupted_by_a_signal),
		cmocka_unit_test(test_bad_offset_and_priority_are_einval),
		cmocka_unit_test(test_bad_fd_fails_through_aio_error),
		cmocka_unit_test(test_exhaustion_is_eagain),
	};

	/* Read when the first request creates the ring. */
	setenv("PONY_AIO_MAX", "16", 1);
	return cmocka_run_group_tests(tests, require_pony, NULL);
}
