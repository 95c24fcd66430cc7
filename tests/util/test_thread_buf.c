/*
 * test_thread_buf.c - util_thread_buf(): one aligned buffer per thread and
 * per use, kept from call to call (the FUSE front end answers every READ
 * from it: a fresh allocation each time cut RAID6 reads through a mount to
 * a fifth), grown when asked for more, never shared between threads, and
 * freed when its thread ends (ASan's leak check runs over this test).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"

static struct util_thread_buf buf_a, buf_b;

static void test_kept_from_call_to_call_and_aligned(void **state)
{
	uint8_t *p = util_thread_buf(&buf_a, 1 << 20), *q;

	(void)state;
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 4096, 0);
	memset(p, 0xa5, 1 << 20);               /* all of it is ours */
	q = util_thread_buf(&buf_a, 4096);
	assert_ptr_equal(p, q);                 /* a smaller ask: the same buffer */
	assert_ptr_equal(util_thread_buf(&buf_a, 1 << 20), p);
	q = util_thread_buf(&buf_a, 2 << 20);   /* a larger one: grown */
	assert_non_null(q);
	assert_int_equal((uintptr_t)q % 4096, 0);
	memset(q, 0x5a, 2 << 20);
	assert_ptr_equal(util_thread_buf(&buf_a, 1 << 20), q);
}

static void test_each_use_has_its_own(void **state)
{
	uint8_t *a = util_thread_buf(&buf_a, 8192), *b = util_thread_buf(&buf_b, 8192);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
}

static void *other_thread(void *arg)
{
	uint8_t *p = util_thread_buf(&buf_a, 8192);

	memset(p, 0x11, 8192);
	*(uint8_t **)arg = p;
	return NULL;
}

static void test_each_thread_has_its_own(void **state)
{
	uint8_t *mine = util_thread_buf(&buf_a, 8192), *theirs = NULL;
	pthread_t t;

	(void)state;
	memset(mine, 0x22, 8192);
	assert_int_equal(pthread_create(&t, NULL, other_thread, &theirs), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_non_null(theirs);
	assert_ptr_not_equal(mine, theirs);     /* (theirs is freed: compared only) */
	for (size_t i = 0; i < 8192; i++)
		assert_int_equal(mine[i], 0x22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_from_call_to_call_and_aligned),
		cmocka_unit_test(test_each_use_has_its_own),
		cmocka_unit_test(test_each_thread_has_its_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
