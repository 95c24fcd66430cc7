/* test_crc32c.c - util_crc32c() gives the standard CRC32C and chains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"

static void test_crc32c_matches_the_standard_check_value(void **state)
{
	/* The "check" value of CRC-32C (RFC 3720, B.4) for "123456789". */
	assert_int_equal(util_crc32c(0, "123456789", 9), 0xE3069283u);
	/* 32 bytes of zeros, also from RFC 3720 B.4. */
	uint8_t zeros[32] = { 0 };
	assert_int_equal(util_crc32c(0, zeros, sizeof(zeros)), 0x8A9136AAu);
}

static void test_crc32c_chains_across_buffers(void **state)
{
	const char *s = "the quick brown fox jumps over the lazy dog";
	size_t n = strlen(s);
	uint32_t whole = util_crc32c(0, s, n);

	for (size_t cut = 0; cut <= n; cut++)
		assert_int_equal(util_crc32c(util_crc32c(0, s, cut), s + cut, n - cut), whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_matches_the_standard_check_value),
		cmocka_unit_test(test_crc32c_chains_across_buffers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
