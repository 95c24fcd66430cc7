/* test_json.c - the JSON writer places commas and escapes strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"

static void test_json_writes_nested_documents(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct util_json j;

	assert_non_null(f);
	util_json_init(&j, f);
	util_json_object_begin(&j, NULL);
	util_json_string(&j, "name", "a\"b\\c\n");
	util_json_array_begin(&j, "list");
	util_json_int(&j, NULL, -3);
	util_json_uint(&j, NULL, 18446744073709551615ull);
	util_json_object_begin(&j, NULL);
	util_json_bool(&j, "ok", true);
	util_json_string(&j, "none", NULL);
	util_json_object_end(&j);
	util_json_array_end(&j);
	util_json_double(&j, "ratio", 1.5);
	util_json_object_end(&j);
	util_json_end(&j);
	fclose(f);
	assert_string_equal(text,
		"{\"name\":\"a\\\"b\\\\c\\n\",\"list\":[-3,18446744073709551615,"
		"{\"ok\":true,\"none\":null}],\"ratio\":1.5}\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_writes_nested_documents),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
