/*
 * forget.c - FORGETs in batches while FUSE-over-io_uring rings serve the
 * requests (uring.c). /dev/fuse then carries only FORGET, BATCH_FORGET and
 * INTERRUPT. The kernel queues a forget for every inode it drops (an
 * rm -rf: one per file) and wakes a reader sleeping in read(2) for each: a
 * cross-CPU wakeup apiece, ~4,000 reads for 5,000 unlinks, each forget
 * then taking the instance's lock against the ring thread serving the
 * next UNLINK.
 *
 * Here, with the rings up, one libfuse worker at a time reads /dev/fuse
 * (the others wait on a mutex, where a queued forget does not wake them),
 * and after a read that brought forgets it waits FORGET_PAUSE_NS before
 * reading again. Meanwhile queueing a forget wakes nobody, and the next
 * read gets all of them as one BATCH_FORGET (as many as the read buffer
 * holds, 65,536 in libfuse's 1 MiB).
 *
 * Bounds: a forget waits in the kernel at most one pause longer than it
 * would have (its memory: one small link per inode, a pause's worth). An
 * INTERRUPT arriving during a pause waits for its end, at most
 * FORGET_PAUSE_NS (the kernel hands interrupts out before forgets);
 * outside a stream of forgets the reader sleeps in read(2) and gets it at
 * once. Over /dev/fuse alone nothing changes: there the workers read every
 * request and none may wait.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

#define FORGET_PAUSE_NS (2000 * 1000)   /* 2 ms: 500 forget reads a second at most */

static bool is_forget(const void *buf, ssize_t n)
{
	const struct fuse_in_header *in = buf;

	return n >= (ssize_t)sizeof(*in) &&
	       (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET);
}

static void unlock_mutex(void *m)
{
	pthread_mutex_unlock(m);
}

void ponyfuse_forget_init(struct ponyfuse *pf)
{
	pthread_mutex_init(&pf->forget_lock, NULL);
}

void ponyfuse_forget_fini(struct ponyfuse *pf)
{
	pthread_mutex_destroy(&pf->forget_lock);
}

bool ponyfuse_forget_gated(struct ponyfuse *pf)
{
	return atomic_load_explicit(&pf->uring_on, memory_order_acquire) &&
	       !ponyfuse_uring_failed(pf->uring);
}

ssize_t ponyfuse_forget_read(struct ponyfuse *pf, int fd, void *buf, size_t len)
{
	ssize_t n;
	int err;

	pthread_mutex_lock(&pf->forget_lock);
	/* libfuse cancels its workers at exit, also in read(2) or the pause:
	 * the lock must not go with them. */
	pthread_cleanup_push(unlock_mutex, &pf->forget_lock);
	if (pf->forget_until.tv_sec || pf->forget_until.tv_nsec)
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &pf->forget_until,
				       NULL) == EINTR)
			;
	n = read(fd, buf, len);
	err = errno;
	pf->forget_until = (struct timespec){ 0 };
	if (is_forget(buf, n)) {
		clock_gettime(CLOCK_MONOTONIC, &pf->forget_until);
		pf->forget_until.tv_nsec += FORGET_PAUSE_NS;
		if (pf->forget_until.tv_nsec >= 1000000000L) {
			pf->forget_until.tv_sec++;
			pf->forget_until.tv_nsec -= 1000000000L;
		}
	}
	pthread_cleanup_pop(1);
	errno = err;
	return n;
}
