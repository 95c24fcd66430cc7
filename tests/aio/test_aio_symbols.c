/*
 * test_aio_symbols.c - every versioned name a binary built against glibc
 * can reference binds to libpony-aio.so and works: aio_* and lio_listio,
 * their *64 names, at GLIBC_2.34 (programs built today), GLIBC_2.2.5
 * (older binaries) and lio_listio's GLIBC_2.4. The program references
 * each version explicitly (.symver on an undefined alias, as a binary
 * linked against that glibc would), so under LD_PRELOAD this is the
 * unmodified-binary case for old and new binaries alike.
 */
#include "helpers.h"

/* An undefined alias whose reference is name@version. */
#define AIO_REF(alias, ver_name) __asm__(".symver " #alias ", " ver_name)

typedef int read_fn(struct aiocb *);
typedef int error_fn(const struct aiocb *);
typedef ssize_t return_fn(struct aiocb *);
typedef int suspend_fn(const struct aiocb *const[], int, const struct timespec *);
typedef int lio_fn(int, struct aiocb *const[], int, struct sigevent *);

#define VERSIONS(X) \
	X(aio_read_new, "aio_read@GLIBC_2.34") X(aio_read_old, "aio_read@GLIBC_2.2.5") \
	X(aio_read64_new, "aio_read64@GLIBC_2.34") X(aio_read64_old, "aio_read64@GLIBC_2.2.5") \
	X(aio_write_new, "aio_write@GLIBC_2.34") X(aio_write_old, "aio_write@GLIBC_2.2.5") \
	X(aio_write64_new, "aio_write64@GLIBC_2.34") X(aio_write64_old, "aio_write64@GLIBC_2.2.5") \
	X(aio_fsync_new, "aio_fsync@GLIBC_2.34") X(aio_fsync_old, "aio_fsync@GLIBC_2.2.5") \
	X(aio_fsync64_new, "aio_fsync64@GLIBC_2.34") X(aio_fsync64_old, "aio_fsync64@GLIBC_2.2.5") \
	X(aio_error_new, "aio_error@GLIBC_2.34") X(aio_error_old, "aio_error@GLIBC_2.2.5") \
	X(aio_error64_new, "aio_error64@GLIBC_2.34") X(aio_error64_old, "aio_error64@GLIBC_2.2.5") \
	X(aio_return_new, "aio_return@GLIBC_2.34") X(aio_return_old, "aio_return@GLIBC_2.2.5") \
	X(aio_return64_new, "aio_return64@GLIBC_2.34") \
	X(aio_return64_old, "aio_return64@GLIBC_2.2.5") \
	X(aio_suspend_new, "aio_suspend@GLIBC_2.34") X(aio_suspend_old, "aio_suspend@GLIBC_2.2.5") \
	X(aio_suspend64_new, "aio_suspend64@GLIBC_2.34") \
	X(aio_suspend64_old, "aio_suspend64@GLIBC_2.2.5") \
	X(aio_cancel_new, "aio_cancel@GLIBC_2.34") X(aio_cancel_old, "aio_cancel@GLIBC_2.2.5") \
	X(aio_cancel64_new, "aio_cancel64@GLIBC_2.34") \
	X(aio_cancel64_old, "aio_cancel64@GLIBC_2.2.5") \
	X(aio_init_new, "aio_init@GLIBC_2.34") X(aio_init_old, "aio_init@GLIBC_2.2.5") \
	X(lio_listio_new, "lio_listio@GLIBC_2.34") X(lio_listio_24, "lio_listio@GLIBC_2.4") \
	X(lio_listio_old, "lio_listio@GLIBC_2.2.5") \
	X(lio_listio64_new, "lio_listio64@GLIBC_2.34") \
	X(lio_listio64_24, "lio_listio64@GLIBC_2.4") \
	X(lio_listio64_old, "lio_listio64@GLIBC_2.2.5")

#define DECLARE(alias, ver_name) extern void alias(void); AIO_REF(alias, ver_name);
VERSIONS(DECLARE)

static const struct {
	const char *name;
	void (*fn)(void);
} refs[] = {
#define ENTRY(alias, ver_name) { ver_name, alias },
	VERSIONS(ENTRY)
};

static void test_every_versioned_name_binds_to_pony(void **state)
{
	for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) {
		Dl_info info;

		if (!dladdr((void *)refs[i].fn, &info) || !strstr(info.dli_fname, "libpony-aio"))
			fail_msg("%s bound to %s", refs[i].name,
				 dladdr((void *)refs[i].fn, &info) ? info.dli_fname : "?");
	}
}

/* Reads 64 bytes at 100 through one version's read/error/suspend/return. */
static void read_through(void (*rd)(void), void (*er)(void), void (*su)(void), void (*rt)(void))
{
	int fd = scratch_file(4096, O_RDONLY);
	unsigned char buf[64];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 100);
	const struct aiocb *list[1] = { &cb };

	assert_int_equal(((read_fn *)(void *)rd)(&cb), 0);
	while (((error_fn *)(void *)er)(&cb) == EINPROGRESS)
		((suspend_fn *)(void *)su)(list, 1, NULL);
	assert_int_equal(((error_fn *)(void *)er)(&cb), 0);
	assert_int_equal(((return_fn *)(void *)rt)(&cb), 64);
	for (int i = 0; i < 64; i++)
		assert_int_equal(buf[i], (100 + i) % 251);
	close(fd);
}

static void test_old_and_new_versions_do_the_work(void **state)
{
	read_through(aio_read_old, aio_error_old, aio_suspend_old, aio_return_old);
	read_through(aio_read_new, aio_error_new, aio_suspend_new, aio_return_new);
	read_through(aio_read64_old, aio_error64_old, aio_suspend64_old, aio_return64_old);
	read_through(aio_read64_new, aio_error64_new, aio_suspend64_new, aio_return64_new);
}

static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

/* lio_listio of one read whose aiocb asks for SIGUSR1; how many came. */
static int lio_signals(void (*lio)(void))
{
	int fd = scratch_file(4096, O_RDONLY);
	char buf[16];
	struct aiocb cb = aiocb_for(fd, buf, sizeof(buf), 0);
	struct aiocb *list[1] = { &cb };

	cb.aio_lio_opcode = LIO_READ;
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIGUSR1;
	usr1_count = 0;
	assert_int_equal(((lio_fn *)(void *)lio)(LIO_WAIT, list, 1, NULL), 0);
	assert_int_equal(aio_return(&cb), 16);
	for (int i = 0; i < 100 && !usr1_count; i++)
		usleep(1000);
	usleep(10000);  /* a second one would have come by now */
	close(fd);
	return usr1_count;
}

/* GLIBC_2.2.5's lio_listio ignored the aiocbs' own sigevents; 2.4 on
 * send them, as POSIX says. */
static void test_old_lio_listio_keeps_its_old_meaning(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(lio_signals(lio_listio_old), 0);
	assert_int_equal(lio_signals(lio_listio64_old), 0);
	assert_int_equal(lio_signals(lio_listio_24), 1);
	assert_int_equal(lio_signals(lio_listio64_24), 1);
	assert_int_equal(lio_signals(lio_listio_new), 1);
	assert_int_equal(lio_signals(lio_listio64_new), 1);
	signal(SIGUSR1, SIG_DFL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_versioned_name_binds_to_pony),
		cmocka_unit_test(test_old_and_new_versions_do_the_work),
		cmocka_unit_test(test_old_lio_listio_keeps_its_old_meaning),
	};

	return cmocka_run_group_tests(tests, require_pony, NULL);
}
