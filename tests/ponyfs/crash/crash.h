/*
 * crash.h - the crash-consistency harness: a workload runs on ponyfs over a
 * record bdev; the harness then rebuilds every crash state of the log
 * (each prefix ending at a flush, subsets of the writes in flight between
 * two flushes, torn writes) on an overlay of the starting image, and hands
 * each one to a checker that mounts it through the library.
 */
#ifndef PONYFS_CRASH_H
#define PONYFS_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pony/bdev.h"

struct crash_log_entry {
	uint64_t flags;                 /* 1 flush, 4 discard, 8 mark (dm-log-writes) */
	uint64_t off, len;
	uint8_t *data;
};

struct crash_log {
	struct crash_log_entry *e;
	size_t n;
};

int crash_log_read(struct bdev *log, struct crash_log *ret);
void crash_log_free(struct crash_log *l);

/* An image whose writes can be undone: the crash states share one base. */
struct crash_overlay;
int crash_overlay_new(const uint8_t *image, uint64_t size, struct crash_overlay **ret);
struct bdev *crash_overlay_bdev(struct crash_overlay *o);
void crash_overlay_reset(struct crash_overlay *o);      /* back to the base */
/* Writes into the base (and the current image, which must equal it). */
void crash_overlay_commit(struct crash_overlay *o, uint64_t off, const void *data, uint64_t len);
void crash_overlay_free(struct crash_overlay *o);

struct crash_limits {
	unsigned all_subsets_max;       /* in-flight writes up to this: every subset */
	unsigned random_subsets;        /* otherwise this many random ones */
	uint64_t seed;
};

/*
 * Calls check(state, durable, arg) for every crash state of log over image:
 * durable is how many log entries the state holds for sure (everything
 * before its last flush). check returns 0, or -1 to stop. Returns the
 * number of states checked, or -1 when a check failed.
 */
typedef int (*crash_check_t)(struct bdev *state, uint64_t durable, void *arg);
long crash_enumerate(const uint8_t *image, uint64_t size, const struct crash_log *log,
		     const struct crash_limits *lim, crash_check_t check, void *arg);

#endif
