/*
 * union_fixture.h - the fixture test_union and test_union_names share: a
 * union over hostfs instances on a lower made fresh for each test, whose
 * checksum teardown compares (the lower never changes), plus the helpers
 * both use.
 */
#ifndef PONY_TESTS_UNION_FIXTURE_H
#define PONY_TESTS_UNION_FIXTURE_H

#include "pony/union.h"


struct fixture {
	char top[64], lower[96], upper[96], work[96];
	struct vfs *fs;
	struct vfs_ctx ctx;
	char lower_sum[64];
};

/* Runs a shell command built like printf; the test fails if it does. */
void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The first line a shell command built like printf prints, into out. */
void sh_output(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A checksum of every name, mode, size, time and byte of the lower. */
void lower_sum(struct fixture *f, char *out);
/* Builds f->fs over f's layers. */
int build(struct fixture *f);
/* cmocka's setup and teardown: a fresh tree, and the lower's check. */
int setup(void **state);
int teardown(void **state);
/* Frees the union and builds it again over the same layers. */
void remount(struct fixture *f);
/* Looks path up from the root (the test fails if it cannot). */
void walk(struct fixture *f, const char *path, struct vfs_entry *e);

#endif
