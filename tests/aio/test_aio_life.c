/*
 * test_aio_life.c - the ring's life in a process: nothing is started until
 * the first request (a program that links libpony-aio but never uses it
 * pays nothing), and fork follows the documented rule (docs/aio.md): the
 * parent's requests in flight complete in the parent, the child's copies
 * of their aiocbs read ECANCELED, and the child gets a ring of its own.
 */
#include <dirent.h>
#include <sys/wait.h>

#include "helpers.h"

static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Must run first: before it, no request was ever made in this process. */
static void test_ring_is_created_on_first_request(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	assert_int_equal(thread_count(), 1);
	assert_int_equal(aio_read(&cb), 0);
	assert_int_equal(wait_done(&cb), 0);
	assert_true(thread_count() > 1);
	assert_int_equal(aio_return(&cb), 64);
	close(fd);
}

/* Child side of the fork test; exits 0 on success, a line number else. */
static int child(struct aiocb *inherited, int fd)
{
	char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);

	if (aio_error(inherited) != ECANCELED)
		return __LINE__;
	if (aio_return(inherited) != -1)
		return __LINE__;
	if (aio_read(&cb) != 0)
		return __LINE__;
	if (wait_done(&cb) != 0 || aio_return(&cb) != 64)
		return __LINE__;
	return 0;
}

static void test_fork_keeps_parent_requests_and_gives_child_a_ring(void **state)
{
	int fd = scratch_file(64, O_RDWR);
	char buf[8];
	struct aiocb cb;
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	cb = aiocb_for(p[0], buf, sizeof(buf), 0);
	assert_int_equal(aio_read(&cb), 0);
	settle();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(&cb, fd));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's read is still there, and completes. */
	assert_int_equal(aio_error(&cb), EINPROGRESS);
	assert_int_equal(write(p[1], "hi", 2), 2);
	assert_int_equal(wait_done(&cb), 0);
	assert_int_equal(aio_return(&cb), 2);
	assert_memory_equal(buf, "hi", 2);
	close(p[0]);
	close(p[1]);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_is_created_on_first_request),
		cmocka_unit_test(test_fork_keeps_parent_requests_and_gives_child_a_ring),
	};

	return cmocka_run_group_tests(tests, require_pony, NULL);
}
