/*
 * ponyfs_dio.c - a test helper: asynchronous direct writes beside buffered
 * readers must never leave stale pages in the page cache (what fstests'
 * generic/451 checks with libaio; here through io_uring, which submits the
 * same kind of asynchronous kiocb).
 *
 *   ponyfs_dio FILE SECONDS
 *
 * Two readers read FILE through the page cache in a loop while the writer
 * rewrites all of it with O_DIRECT through io_uring, a new byte each round,
 * and then reads it back buffered. Exit 0 when every read-back matched,
 * 1 (and the round and offset on stderr) at the first stale byte, 2 when
 * the test cannot run.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (640u << 10)
#define READERS 2

static void reader(const char *path)
{
	static char buf[FILE_SIZE];

	for (;;) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			if (pread(fd, buf, sizeof(buf), 0) < 0)
				_exit(2);
			close(fd);
		}
	}
}

static int write_direct(struct io_uring *ring, int fd, const void *buf)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int r;

	io_uring_prep_write(sqe, fd, buf, FILE_SIZE, 0);
	r = io_uring_submit(ring);
	if (r < 0)
		return r;
	r = io_uring_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return r == (int)FILE_SIZE ? 0 : r < 0 ? r : -EIO;
}

static int rounds(const char *path, int seconds)
{
	static char check[FILE_SIZE];
	struct io_uring ring;
	time_t end = time(NULL) + seconds;
	void *buf;
	int fd, r = 0;

	if (posix_memalign(&buf, 4096, FILE_SIZE) || io_uring_queue_init(4, &ring, 0) < 0)
		return 2;
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0) {
		perror("open O_DIRECT");
		return 2;
	}
	for (unsigned n = 1; !r && time(NULL) < end; n++) {
		int bfd;

		memset(buf, (int)(n & 0xff), FILE_SIZE);
		r = write_direct(&ring, fd, buf);
		if (r < 0) {
			fprintf(stderr, "direct write: %s\n", strerror(-r));
			return 2;
		}
		bfd = open(path, O_RDONLY);
		if (bfd < 0 || pread(bfd, check, FILE_SIZE, 0) != (ssize_t)FILE_SIZE)
			return 2;
		close(bfd);
		for (size_t i = 0; i < FILE_SIZE; i++) {
			if (check[i] != (char)(n & 0xff)) {
				fprintf(stderr, "round %u: stale byte at %zu (0x%02x, not 0x%02x)\n",
					n, i, (unsigned char)check[i], n & 0xff);
				r = 1;
				break;
			}
		}
	}
	close(fd);
	io_uring_queue_exit(&ring);
	free(buf);
	return r;
}

int main(int argc, char **argv)
{
	pid_t pids[READERS];
	int fd, r;

	if (argc != 3) {
		fprintf(stderr, "usage: ponyfs_dio FILE SECONDS\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, FILE_SIZE) < 0)
		return 2;
	close(fd);
	for (int i = 0; i < READERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			reader(argv[1]);
	}
	r = rounds(argv[1], atoi(argv[2]));
	for (int i = 0; i < READERS; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
	return r;
}
