/*
 * helpers.h - what the acall tests share: a ring per path (the same test
 * body runs on io_uring and on workers), a scratch directory, and cmocka's
 * includes.
 */
#ifndef PONY_TEST_ACALL_HELPERS_H
#define PONY_TEST_ACALL_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pony/acall.h"

/* cmocka state: the ring under test and a scratch directory (fd and path). */
struct fixture {
	struct acall_ring *ring;
	enum acall_path path;
	int dfd;
	char dir[64];
};

static inline int fixture_setup(void **state, enum acall_path path)
{
	struct acall_ring_params p = { .path = path, .workers = 2 };
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->path = path;
	strcpy(f->dir, "/tmp/pony-acall-test.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->dfd = open(f->dir, O_DIRECTORY | O_RDONLY);
	if (f->dfd < 0 || acall_ring_new(&p, &f->ring) < 0)
		return -1;
	*state = f;
	return 0;
}

static inline int setup_uring(void **state) { return fixture_setup(state, ACALL_PATH_URING); }
static inline int setup_workers(void **state) { return fixture_setup(state, ACALL_PATH_WORKERS); }

static inline int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[96];

	acall_ring_free(f->ring);
	close(f->dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* Exits 77 (meson: skipped) if this kernel has no io_uring. */
static inline void require_uring_or_skip(void)
{
	struct acall_ring_params p = { .path = ACALL_PATH_URING };
	struct acall_ring *r;

	if (acall_ring_new(&p, &r) < 0) {
		printf("SKIP: io_uring is unavailable\n");
		exit(77);
	}
	acall_ring_free(r);
}

/* Runs one op on f's ring and returns its result. */
static inline int64_t run(struct fixture *f, struct acall_op *op)
{
	return acall_run(f->ring, op);
}

/* Both paths of one test body, as cmocka test entries. */
#define BOTH_PATHS(fn) \
	cmocka_unit_test_setup_teardown(fn, setup_uring, fixture_teardown), \
	cmocka_unit_test_setup_teardown(fn, setup_workers, fixture_teardown)

#endif
