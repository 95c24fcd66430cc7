/* test_log.c - daemon events reach the log file whole, one line each, and the sink. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <cmocka.h>

#include "pony/util.h"

#define THREADS 4
#define LINES 500

static void *log_many(void *arg)
{
	for (int i = 0; i < LINES; i++)
		util_log(LOG_WARNING, "thread %d line %d: %s", (int)(intptr_t)arg, i,
			 "member 3 (d3.img) failed: Input/output error");
	return NULL;
}

static void test_lines_of_threads_never_interleave(void **state)
{
	char path[] = "/tmp/pony-test-log-XXXXXX", line[512];
	int fd = mkstemp(path), n = 0;
	pthread_t t[THREADS];
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(util_log_open("ponytest", path, 0), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, log_many, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	util_log_close();
	util_log(LOG_ERR, "after close: not in the file");

	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		int th, ln;

		/* 2026-12-04T22:50:01.123Z ponytest[PID]: warning: thread T line L: ... */
		assert_int_equal(line[4], '-');
		assert_int_equal(line[10], 'T');
		assert_non_null(strstr(line, "Z ponytest["));
		assert_non_null(strstr(line, "]: warning: thread "));
		assert_int_equal(sscanf(strstr(line, "thread "), "thread %d line %d", &th, &ln), 2);
		assert_string_equal(strchr(line, '\n'), "\n");
		assert_non_null(strstr(line, "failed: Input/output error\n"));
		n++;
	}
	fclose(f);
	unlink(path);
	assert_int_equal(n, THREADS * LINES);
}

struct seen { int prio; char text[128]; int n; };

static void sink(void *arg, int prio, const char *text)
{
	struct seen *s = arg;

	s->prio = prio;
	snprintf(s->text, sizeof(s->text), "%s", text);
	s->n++;
}

static void test_sink_sees_each_line_and_lines_are_counted(void **state)
{
	struct seen s = { 0 };
	uint64_t before = util_log_lines();

	util_log_set_sink(sink, &s);
	util_log(LOG_ERR, "commit failed: %s", strerror(ENOSPC));
	util_log_set_sink(NULL, NULL);
	util_log(LOG_ERR, "not seen by the sink");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.prio, LOG_ERR);
	assert_string_equal(s.text, "commit failed: No space left on device");
	assert_int_equal(util_log_lines() - before, 2);
}

static void test_unwritable_file_is_refused(void **state)
{
	assert_int_equal(util_log_open("ponytest", "/nonexistent-dir/x.log", 0), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_of_threads_never_interleave),
		cmocka_unit_test(test_sink_sees_each_line_and_lines_are_counted),
		cmocka_unit_test(test_unwritable_file_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
