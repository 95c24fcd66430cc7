/*
 * helpers.h - what the POSIX AIO tests share. Each test program uses only
 * glibc's <aio.h>; meson builds it twice: linked with libpony-aio.so, and
 * linked with glibc alone and run with LD_PRELOAD=libpony-aio.so. Either
 * way it first proves that the aio_* it calls are pony's, so a pass can
 * never be glibc's.
 */
#ifndef PONY_TEST_AIO_HELPERS_H
#define PONY_TEST_AIO_HELPERS_H

#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

/* Fails unless every name resolves into libpony-aio.so. */
static inline int require_pony(void **state)
{
	static const char *const names[] = {
		"aio_read", "aio_read64", "aio_write", "aio_write64", "aio_fsync",
		"aio_error", "aio_return", "aio_suspend", "aio_cancel", "lio_listio",
		"lio_listio64",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		Dl_info info;
		void *fn = dlsym(RTLD_DEFAULT, names[i]);

		if (!fn || !dladdr(fn, &info) || !strstr(info.dli_fname, "libpony-aio")) {
			fprintf(stderr, "%s is not pony's (%s)\n", names[i],
				fn && dladdr(fn, &info) ? info.dli_fname : "?");
			return -1;
		}
	}
	return 0;
}

/* An unlinked scratch file of size bytes, each byte i%251, opened with
 * flags (O_RDWR, O_RDONLY | O_DIRECT, ...). */
static inline int scratch_file(size_t size, int flags)
{
	char path[] = "/var/tmp/pony-aio-test.XXXXXX";
	int fd = mkstemp(path);
	unsigned char *buf = malloc(size ? size : 1);

	assert_true(fd >= 0 && buf);
	for (size_t i = 0; i < size; i++)
		buf[i] = (unsigned char)(i % 251);
	assert_int_equal(pwrite(fd, buf, size, 0), (ssize_t)size);
	free(buf);
	close(fd);
	fd = open(path, flags);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static inline struct aiocb aiocb_for(int fd, void *buf, size_t len, off_t off)
{
	struct aiocb cb;

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	cb.aio_sigevent.sigev_notify = SIGEV_NONE;
	return cb;
}

/* Waits with aio_suspend() until cb completes; returns aio_error(). */
static inline int wait_done(struct aiocb *cb)
{
	const struct aiocb *list[1] = { cb };
	int e;

	while ((e = aio_error(cb)) == EINPROGRESS)
		if (aio_suspend(list, 1, NULL) < 0)
			assert_int_equal(errno, EINTR);
	return e;
}

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Lets a request reach the kernel and block there. */
static inline void settle(void)
{
	usleep(30000);
}

#endif
