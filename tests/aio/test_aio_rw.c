/*
 * test_aio_rw.c - reads and writes through glibc's API land on pony and
 * move the right bytes: regular files buffered and O_DIRECT, big copies,
 * many requests in flight on one fd, the *64 names, aio_fsync with O_SYNC
 * and O_DSYNC covering the writes before it, pipes and sockets, and
 * aio_return's once-only rule.
 */
#include <sys/socket.h>

#include "helpers.h"

static void test_read_returns_the_file_bytes(void **state)
{
	int fd = scratch_file(8192, O_RDWR);
	unsigned char buf[100];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 1000);

	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(wait_done(&cb), 0);
	assert_int_equal(aio_return(&cb), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(buf[i], (1000 + i) % 251);
	close(fd);
}

static void test_write_then_read_back(void **state)
{
	int fd = scratch_file(0, O_RDWR);
	char out[] = "pony writes this", in[sizeof(out)] = { 0 };
	struct aiocb w = aiocb_for(fd, out, sizeof(out), 4096), r;

	assert_int_equal(aio_write(&w), 0);
	assert_int_equal(wait_done(&w), 0);
	assert_int_equal(aio_return(&w), (ssize_t)sizeof(out));
	r = aiocb_for(fd, in, sizeof(in), 4096);
	assert_int_equal(aio_read(&r), 0);
	assert_int_equal(wait_done(&r), 0);
	assert_int_equal(aio_return(&r), (ssize_t)sizeof(in));
	assert_string_equal(in, out);
	close(fd);
}

/* 64 reads of 4 KiB in flight at once on one O_DIRECT fd, each right. */
static void test_many_odirect_reads_in_flight_on_one_fd(void **state)
{
	enum { N = 64, BS = 4096 };
	int fd = scratch_file(N * BS, O_RDONLY | O_DIRECT);
	struct aiocb cbs[N];
	unsigned char *buf = NULL;

	assert_int_equal(posix_memalign((void **)&buf, BS, N * BS), 0);
	for (int i = 0; i < N; i++) {
		int k = (i * 37) % N;   /* random-ish order */

		cbs[i] = aiocb_for(fd, buf + (size_t)k * BS, BS, (off_t)k * BS);
		assert_int_equal(aio_read(&cbs[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(wait_done(&cbs[i]), 0);
		assert_int_equal(aio_return(&cbs[i]), BS);
	}
	for (size_t i = 0; i < (size_t)N * BS; i++)
		assert_int_equal(buf[i], i % 251);
	free(buf);
	close(fd);
}

/* 32 O_DIRECT writes of 4 KiB in flight at once on one fd land where
 * they should (read back through a buffered fd of the same file). */
static void test_many_odirect_writes_in_flight_on_one_fd(void **state)
{
	enum { N = 32, BS = 4096 };
	char path[] = "/var/tmp/pony-aio-test.XXXXXX";
	int fd = mkstemp(path), dfd, k;
	struct aiocb cbs[N];
	unsigned char *buf = NULL, back[BS];

	assert_true(fd >= 0);
	dfd = open(path, O_WRONLY | O_DIRECT);
	assert_true(dfd >= 0);
	unlink(path);
	assert_int_equal(posix_memalign((void **)&buf, BS, N * BS), 0);
	for (int i = 0; i < N; i++) {
		k = (i * 7) % N;
		memset(buf + (size_t)k * BS, 'A' + k % 26, BS);
		cbs[i] = aiocb_for(dfd, buf + (size_t)k * BS, BS, (off_t)k * BS);
		assert_int_equal(aio_write(&cbs[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(wait_done(&cbs[i]), 0);
		assert_int_equal(aio_return(&cbs[i]), BS);
	}
	for (k = 0; k < N; k++) {
		assert_int_equal(pread(fd, back, BS, (off_t)k * BS), BS);
		for (int b = 0; b < BS; b++)
			assert_int_equal(back[b], 'A' + k % 26);
	}
	free(buf);
	close(dfd);
	close(fd);
}

/* Big buffered copies take the worker path: the bytes are the same. */
static void test_big_buffered_read_and_write(void **state)
{
	enum { SZ = 1 << 20 };
	int fd = scratch_file(SZ, O_RDWR), fd2 = scratch_file(0, O_RDWR);
	unsigned char *buf = malloc(SZ), *back = malloc(SZ);
	struct aiocb r = aiocb_for(fd, buf, SZ, 0), w, r2;

	assert_int_equal(aio_read(&r), 0);
	assert_int_equal(wait_done(&r), 0);
	assert_int_equal(aio_return(&r), SZ);
	w = aiocb_for(fd2, buf, SZ, 0);
	assert_int_equal(aio_write(&w), 0);
	assert_int_equal(wait_done(&w), 0);
	assert_int_equal(aio_return(&w), SZ);
	r2 = aiocb_for(fd2, back, SZ, 0);
	assert_int_equal(aio_read(&r2), 0);
	assert_int_equal(wait_done(&r2), 0);
	assert_int_equal(aio_return(&r2), SZ);
	for (size_t i = 0; i < SZ; i++)
		assert_int_equal(back[i], i % 251);
	free(buf);
	free(back);
	close(fd);
	close(fd2);
}

/* What -D_FILE_OFFSET_BITS=64 calls: the *64 names, at a big offset. */
static void test_64_names_reach_past_4_gib(void **state)
{
	int (*read64)(struct aiocb64 *) = (int (*)(struct aiocb64 *))dlsym(RTLD_DEFAULT, "aio_read64");
	int (*write64)(struct aiocb64 *) = (int (*)(struct aiocb64 *))dlsym(RTLD_DEFAULT, "aio_write64");
	ssize_t (*return64)(struct aiocb64 *) =
		(ssize_t (*)(struct aiocb64 *))dlsym(RTLD_DEFAULT, "aio_return64");
	int fd = scratch_file(0, O_RDWR);
	char out[] = "far", in[4] = { 0 };
	struct aiocb64 cb;

	assert_non_null(read64);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = out;
	cb.aio_nbytes = 3;
	cb.aio_offset = (off64_t)5 << 30;
	assert_int_equal(write64(&cb), 0);
	assert_int_equal(wait_done((struct aiocb *)&cb), 0);
	assert_int_equal(return64(&cb), 3);
	cb.aio_buf = in;
	assert_int_equal(read64(&cb), 0);
	assert_int_equal(wait_done((struct aiocb *)&cb), 0);
	assert_int_equal(return64(&cb), 3);
	assert_string_equal(in, "far");
	close(fd);
}

/* An fsync completes only after every write submitted before it. */
static void test_fsync_covers_earlier_writes(void **state)
{
	enum { N = 32 };
	int fd = scratch_file(0, O_RDWR);
	static char buf[N][4096];
	struct aiocb w[N], s;

	for (int op = 0; op < 2; op++) {
		for (int i = 0; i < N; i++) {
			memset(buf[i], 'a' + i % 26, sizeof(buf[i]));
			w[i] = aiocb_for(fd, buf[i], sizeof(buf[i]), (off_t)i * 4096);
			assert_int_equal(aio_write(&w[i]), 0);
		}
		s = aiocb_for(fd, NULL, 0, 0);
		assert_int_equal(aio_fsync(op ? O_DSYNC : O_SYNC, &s), 0);
		assert_int_equal(wait_done(&s), 0);
		assert_int_equal(aio_return(&s), 0);
		for (int i = 0; i < N; i++) {
			assert_int_equal(aio_error(&w[i]), 0);
			assert_int_equal(aio_return(&w[i]), 4096);
		}
	}
	close(fd);
}

static void test_fsync_rejects_bad_op_and_fd(void **state)
{
	struct aiocb s = aiocb_for(-1, NULL, 0, 0);

	assert_int_equal(aio_fsync(O_SYNC, &s), -1);
	assert_int_equal(errno, EBADF);
	s.aio_fildes = 0;
	assert_int_equal(aio_fsync(O_RDWR, &s), -1);
	assert_int_equal(errno, EINVAL);
}

/* O_APPEND writes land in submission order, none overwriting another. */
static void test_append_writes_keep_submission_order(void **state)
{
	enum { N = 50 };
	int fd = scratch_file(0, O_WRONLY | O_APPEND);
	int rfd;
	char bufs[N][8], all[N * 8 + 1] = { 0 };
	struct aiocb w[N];
	char path[64];

	for (int i = 0; i < N; i++) {
		snprintf(bufs[i], sizeof(bufs[i]), "<%05d>", i);
		w[i] = aiocb_for(fd, bufs[i], 7, 0);
		assert_int_equal(aio_write(&w[i]), 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(wait_done(&w[i]), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rfd = open(path, O_RDONLY);
	assert_true(rfd >= 0);
	assert_int_equal(pread(rfd, all, sizeof(all), 0), N * 7);
	for (int i = 0; i < N; i++) {
		char want[8];

		snprintf(want, sizeof(want), "<%05d>", i);
		assert_memory_equal(all + i * 7, want, 7);
	}
	close(rfd);
	close(fd);
}

/* Reads of a pipe get its data in submission order. */
static void test_pipe_reads_complete_in_order(void **state)
{
	enum { N = 8 };
	char bufs[N][4];
	struct aiocb r[N];
	int p[2];

	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < N; i++) {
		r[i] = aiocb_for(p[0], bufs[i], 4, 0);
		assert_int_equal(aio_read(&r[i]), 0);
	}
	settle();
	for (int i = 0; i < N; i++) {
		char v[5];

		snprintf(v, sizeof(v), "%04d", i);
		assert_int_equal(write(p[1], v, 4), 4);
	}
	for (int i = 0; i < N; i++) {
		char v[5];

		snprintf(v, sizeof(v), "%04d", i);
		assert_int_equal(wait_done(&r[i]), 0);
		assert_int_equal(aio_return(&r[i]), 4);
		assert_memory_equal(bufs[i], v, 4);
	}
	close(p[0]);
	close(p[1]);
}

/* A read waiting for data on a socket does not hold back a write on the
 * same fd: requests on one fd run concurrently (glibc would deadlock). */
/* An fd number closed and reused for a pipe is a pipe to pony, even just
 * after small buffered writes on the file it was (whose queue may still be
 * kept for a drainer): reads on it keep their order. */
static void test_reused_fd_number_is_looked_at_again(void **state)
{
	for (int round = 0; round < 50; round++) {
		int fd = scratch_file(0, O_RDWR), p[2];
		char out[4] = "abcd", a[2], b[2];
		struct aiocb w = aiocb_for(fd, out, sizeof(out), 0), r1, r2;

		assert_int_equal(aio_write(&w), 0);
		assert_int_equal(wait_done(&w), 0);
		assert_int_equal(aio_return(&w), 4);
		assert_int_equal(pipe(p), 0);
		assert_int_equal(dup2(p[0], fd), fd);   /* fd is now the pipe */
		close(p[0]);
		r1 = aiocb_for(fd, a, 2, 0);
		r2 = aiocb_for(fd, b, 2, 0);
		assert_int_equal(aio_read(&r1), 0);
		assert_int_equal(aio_read(&r2), 0);
		assert_int_equal(write(p[1], "0011", 4), 4);
		assert_int_equal(wait_done(&r1), 0);
		assert_int_equal(wait_done(&r2), 0);
		assert_int_equal(aio_return(&r1), 2);
		assert_int_equal(aio_return(&r2), 2);
		assert_memory_equal(a, "00", 2);
		assert_memory_equal(b, "11", 2);
		close(fd);
		close(p[1]);
	}
}

static void test_socket_write_passes_a_blocked_read(void **state)
{
	char in[4], out[4] = "ping", got[4];
	struct aiocb r, w;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	r = aiocb_for(sv[0], in, sizeof(in), 0);
	assert_int_equal(aio_read(&r), 0);
	settle();
	w = aiocb_for(sv[0], out, sizeof(out), 0);
	assert_int_equal(aio_write(&w), 0);
	assert_int_equal(wait_done(&w), 0);
	assert_int_equal(aio_return(&w), 4);
	assert_int_equal(aio_error(&r), EINPROGRESS);
	assert_int_equal(read(sv[1], got, 4), 4);
	assert_memory_equal(got, "ping", 4);
	assert_int_equal(write(sv[1], "pong", 4), 4);
	assert_int_equal(wait_done(&r), 0);
	assert_int_equal(aio_return(&r), 4);
	assert_memory_equal(in, "pong", 4);
	close(sv[0]);
	close(sv[1]);
}

/* Writes blocked on full sockets (each holds a worker) do not hold back
 * a write to another socket with room. */
static void test_blocked_socket_writes_do_not_hold_back_others(void **state)
{
	enum { N = 4, SZ = 1 << 20 };
	char *buf = calloc(1, SZ);
	struct aiocb cbs[N + 1];
	int sv[N + 1][2], sndbuf = 4096;

	for (int i = 0; i <= N; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
		assert_int_equal(setsockopt(sv[i][0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
					    sizeof(sndbuf)), 0);
		cbs[i] = aiocb_for(sv[i][0], buf, i < N ? SZ : 100, 0);
		assert_int_equal(aio_write(&cbs[i]), 0);
	}
	assert_int_equal(wait_done(&cbs[N]), 0);
	assert_int_equal(aio_return(&cbs[N]), 100);
	for (int i = 0; i < N; i++) {
		assert_int_equal(aio_error(&cbs[i]), EINPROGRESS);
		close(sv[i][1]);        /* the blocked write ends (EPIPE) */
		assert_int_not_equal(wait_done(&cbs[i]), EINPROGRESS);
		aio_return(&cbs[i]);
		close(sv[i][0]);
	}
	close(sv[N][0]);
	close(sv[N][1]);
	free(buf);
}

static void test_return_is_given_once(void **state)
{
	int fd = scratch_file(16, O_RDWR);
	char buf[16];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0), never;

	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(wait_done(&cb), 0);
	assert_int_equal(aio_return(&cb), 16);
	assert_int_equal(aio_return(&cb), -1);
	assert_int_equal(errno, EINVAL);
	never = aiocb_for(fd, buf, sizeof(buf), 0);
	assert_int_equal(aio_return(&never), -1);
	assert_int_equal(errno, EINVAL);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_returns_the_file_bytes),
		cmocka_unit_test(test_write_then_read_back),
		cmocka_unit_test(test_many_odirect_reads_in_flight_on_one_fd),
		cmocka_unit_test(test_many_odirect_writes_in_flight_on_one_fd),
		cmocka_unit_test(test_big_buffered_read_and_write),
		cmocka_unit_test(test_64_names_reach_past_4_gib),
		cmocka_unit_test(test_fsync_covers_earlier_writes),
		cmocka_unit_test(test_fsync_rejects_bad_op_and_fd),
		cmocka_unit_test(test_append_writes_keep_submission_order),
		cmocka_unit_test(test_pipe_reads_complete_in_order),
		cmocka_unit_test(test_reused_fd_number_is_looked_at_again),
		cmocka_unit_test(test_socket_write_passes_a_blocked_read),
		cmocka_unit_test(test_blocked_socket_writes_do_not_hold_back_others),
		cmocka_unit_test(test_return_is_given_once),
	};

	return cmocka_run_group_tests(tests, require_pony, NULL);
}
