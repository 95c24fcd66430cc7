/*
 * fault.c - a bdev that fails on purpose: bad ranges, failure after N I/Os,
 * latency, a vanished device, a torn write at power loss. Every volume
 * failure path (degraded reads, bad-block logs, rebuild) is tested through
 * it on real data, not by mocking the member.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/bdev.h"

#define FAULT_MAX_BAD 64

struct fault_range {
	uint64_t off, len;
	unsigned which;
};

/* Everything below lock is protected by it. */
struct bdev_fault {
	struct bdev b;
	struct bdev *lower;
	pthread_mutex_t lock;
	struct fault_range bad[FAULT_MAX_BAD];
	unsigned nbad;
	uint64_t ios;                   /* I/Os seen */
	uint64_t fail_at;               /* ios value from which all fail; 0: never */
	unsigned latency_us;
	bool vanished;
	bool tear;
	size_t tear_keep;
};

/* Decides the fate of one I/O: 0 go on, 1 torn write, -errno fail. */
static int fault_admit(struct bdev_fault *f, unsigned which, uint64_t off, uint64_t len,
		       size_t *keep)
{
	int r = 0;

	pthread_mutex_lock(&f->lock);
	f->ios++;
	if (f->vanished) {
		r = -ENODEV;
	} else if (f->fail_at && f->ios > f->fail_at) {
		r = -EIO;
	} else {
		for (unsigned i = 0; i < f->nbad && !r; i++)
			if ((f->bad[i].which & which) && off < f->bad[i].off + f->bad[i].len &&
			    f->bad[i].off < off + len)
				r = -EIO;
	}
	if (!r && which == BDEV_FAULT_WRITE && f->tear) {
		*keep = f->tear_keep / 512 * 512;
		f->tear = false;
		f->vanished = true;
		r = 1;
	}
	pthread_mutex_unlock(&f->lock);
	if (f->latency_us)
		usleep(f->latency_us);
	return r;
}

static int fault_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct bdev_fault *f = (struct bdev_fault *)b;
	size_t keep;
	int r = fault_admit(f, BDEV_FAULT_READ, off, len, &keep);

	return r < 0 ? r : bdev_pread(f->lower, buf, len, off);
}

static int fault_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct bdev_fault *f = (struct bdev_fault *)b;
	size_t keep = 0;
	int r = fault_admit(f, BDEV_FAULT_WRITE, off, len, &keep);

	if (r < 0)
		return r;
	if (r == 1) {
		r = bdev_pwrite(f->lower, buf, keep < len ? keep : len, off);
		return r < 0 ? r : -EIO;
	}
	return bdev_pwrite(f->lower, buf, len, off);
}

static int fault_flush(struct bdev *b)
{
	struct bdev_fault *f = (struct bdev_fault *)b;
	size_t keep;
	int r = fault_admit(f, 0, 0, 0, &keep);

	return r < 0 ? r : bdev_flush(f->lower);
}

static int fault_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	struct bdev_fault *f = (struct bdev_fault *)b;
	size_t keep;
	int r = fault_admit(f, BDEV_FAULT_WRITE, off, len, &keep);

	return r < 0 ? r : bdev_discard(f->lower, off, len);
}

static void fault_free(struct bdev *b)
{
	struct bdev_fault *f = (struct bdev_fault *)b;

	bdev_free(f->lower);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static const struct bdev_ops fault_ops = {
	.name = "fault",
	.pread = fault_pread,
	.pwrite = fault_pwrite,
	.flush = fault_flush,
	.discard = fault_discard,
	.free = fault_free,
};

int bdev_fault_new(struct bdev *lower, struct bdev **ret)
{
	struct bdev_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->b.ops = &fault_ops;
	f->b.size = lower->size;
	f->b.block_size = lower->block_size;
	snprintf(f->b.name, sizeof(f->b.name), "fault:%.50s", lower->name);
	f->lower = lower;
	pthread_mutex_init(&f->lock, NULL);
	*ret = &f->b;
	return 0;
}

static struct bdev_fault *to_fault(struct bdev *b)
{
	return b->ops == &fault_ops ? (struct bdev_fault *)b : NULL;
}

int bdev_fault_add_bad(struct bdev *b, uint64_t off, uint64_t len, unsigned which)
{
	struct bdev_fault *f = to_fault(b);
	int r = 0;

	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	if (f->nbad == FAULT_MAX_BAD)
		r = -ENOSPC;
	else
		f->bad[f->nbad++] = (struct fault_range){ off, len, which };
	pthread_mutex_unlock(&f->lock);
	return r;
}

void bdev_fault_clear(struct bdev *b)
{
	struct bdev_fault *f = to_fault(b);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->nbad = 0;
	f->fail_at = 0;
	f->latency_us = 0;
	f->vanished = false;
	f->tear = false;
	pthread_mutex_unlock(&f->lock);
}

void bdev_fault_fail_after(struct bdev *b, uint64_t n)
{
	struct bdev_fault *f = to_fault(b);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->fail_at = n ? f->ios + n : 0;
	pthread_mutex_unlock(&f->lock);
}

void bdev_fault_set_latency(struct bdev *b, unsigned usec)
{
	struct bdev_fault *f = to_fault(b);

	if (f)
		__atomic_store_n(&f->latency_us, usec, __ATOMIC_RELAXED);
}

void bdev_fault_vanish(struct bdev *b)
{
	struct bdev_fault *f = to_fault(b);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->vanished = true;
	pthread_mutex_unlock(&f->lock);
}

void bdev_fault_tear_next_write(struct bdev *b, size_t keep)
{
	struct bdev_fault *f = to_fault(b);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->tear = true;
	f->tear_keep = keep;
	pthread_mutex_unlock(&f->lock);
}

uint64_t bdev_fault_io_count(struct bdev *b)
{
	struct bdev_fault *f = to_fault(b);
	uint64_t n = 0;

	if (f) {
		pthread_mutex_lock(&f->lock);
		n = f->ios;
		pthread_mutex_unlock(&f->lock);
	}
	return n;
}
