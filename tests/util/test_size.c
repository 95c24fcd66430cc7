/* test_size.c - sizes parse as people write them and bad ones are refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"

static void test_parse_size_accepts_binary_units(void **state)
{
	uint64_t v;

	assert_int_equal(util_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(util_parse_size("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(util_parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(util_parse_size("1MiB", &v), 0);
	assert_int_equal(v, 1u << 20);
	assert_int_equal(util_parse_size("2G", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(util_parse_size("3TB", &v), 0);
	assert_int_equal(v, 3ull << 40);
}

static void test_parse_size_refuses_garbage(void **state)
{
	uint64_t v = 7;

	assert_int_equal(util_parse_size("", &v), -EINVAL);
	assert_int_equal(util_parse_size("K", &v), -EINVAL);
	assert_int_equal(util_parse_size("-1", &v), -EINVAL);
	assert_int_equal(util_parse_size("12Q", &v), -EINVAL);
	assert_int_equal(util_parse_size("12KX", &v), -EINVAL);
	assert_int_equal(util_parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(util_parse_size("16777216T", &v), -ERANGE);
	assert_int_equal(v, 7); /* untouched on error */
}

static void test_format_size_rounds_to_units(void **state)
{
	char buf[16];

	assert_string_equal(util_format_size(512, buf, sizeof(buf)), "512B");
	assert_string_equal(util_format_size(1536, buf, sizeof(buf)), "1.5K");
	assert_string_equal(util_format_size(1ull << 30, buf, sizeof(buf)), "1.0G");
	assert_string_equal(util_format_size(300ull << 20, buf, sizeof(buf)), "300M");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size_accepts_binary_units),
		cmocka_unit_test(test_parse_size_refuses_garbage),
		cmocka_unit_test(test_format_size_rounds_to_units),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
