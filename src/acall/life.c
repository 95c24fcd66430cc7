/*
 * life.c - a ring's birth and death: io_uring (or its absence), the route
 * table, the workers and the reaper; and a shutdown that cancels what is in
 * flight, waits for it and frees every op record, whatever state the
 * caller left them in.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

#define DEFAULT_ENTRIES 256

bool acall_ring_has_uring(const struct acall_ring *ring)
{
	return ring->has_uring;
}

int acall_ring_new(const struct acall_ring_params *params, struct acall_ring **ret_ring)
{
	static const struct acall_ring_params defaults;
	const struct acall_ring_params *p = params ? params : &defaults;
	enum acall_path path = acall_route_resolve(p->path);
	unsigned entries = p->entries ? p->entries : DEFAULT_ENTRIES;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned workers = p->workers ? p->workers : cpus > 2 ? (unsigned)cpus : 2;
	struct acall_ring *ring;
	int r;

	if (p->flags || p->path > ACALL_PATH_WORKERS || entries > 32768 || workers > 1024)
		return -EINVAL;
	r = acall_signal_init();
	if (r < 0)
		return r;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	util_mutex_init_adaptive(&ring->lock);
	pthread_mutex_init(&ring->sq_lock, NULL);
	pthread_mutex_init(&ring->cq_lock, NULL);
	ring->eventfd = -1;
	/* No io_uring (old kernel, seccomp) is not an error: workers do it all. */
	if (path != ACALL_PATH_WORKERS)
		acall_uring_init(ring, entries);
	ring->has_dontcache = acall_probe_dontcache();
	r = acall_route_init(ring, path);
	if (r == 0)
		r = acall_workers_start(ring, workers);
	if (r == 0 && ring->has_uring)
		r = acall_reaper_start(ring);
	if (r < 0) {
		acall_ring_free(ring);
		return r;
	}
	*ret_ring = ring;
	return 0;
}

int acall_ring_eventfd(struct acall_ring *ring)
{
	int r;

	pthread_mutex_lock(&ring->lock);
	if (ring->eventfd < 0) {
		ring->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ring->eventfd >= 0 && ring->has_uring &&
		    io_uring_register_eventfd(&ring->uring, ring->eventfd) < 0) {
			close(ring->eventfd);
			ring->eventfd = -1;
		}
	}
	r = ring->eventfd >= 0 ? ring->eventfd : -errno;
	pthread_mutex_unlock(&ring->lock);
	return r;
}

static unsigned inflight(struct acall_ring *ring)
{
	unsigned n;

	pthread_mutex_lock(&ring->lock);
	n = ring->inflight;
	pthread_mutex_unlock(&ring->lock);
	return n;
}

/* Completes every deferred op with -ECANCELED. */
static void cancel_deferred(struct acall_ring *ring)
{
	for (;;) {
		struct acall_op *op;

		pthread_mutex_lock(&ring->lock);
		op = ring->deferred.head;
		pthread_mutex_unlock(&ring->lock);
		if (!op || acall_cancel(ring, op) < 0)
			break;
	}
}

/* Cancels, and keeps cancelling (a signal can miss a worker that was just
 * entering its call) until nothing is in flight. */
static void drain(struct acall_ring *ring)
{
	struct timespec ms = { .tv_nsec = 1000000 };

	for (unsigned i = 0; inflight(ring); i++) {
		if (i % 100 == 0) {
			cancel_deferred(ring);
			if (ring->has_uring)
				acall_uring_cancel_all(ring);
			acall_workers_cancel_all(ring);
		}
		if (ring->has_uring && !pthread_mutex_trylock(&ring->cq_lock)) {
			acall_uring_reap(ring, false);
			acall_cq_unlock(ring);
		}
		nanosleep(&ms, NULL);
	}
}

void acall_ring_free(struct acall_ring *ring)
{
	if (!ring)
		return;
	atomic_store(&ring->stopping, true);
	if (ring->wq.w)
		drain(ring);
	acall_reaper_stop(ring);
	acall_workers_stop(ring);
	acall_uring_exit(ring);
	if (ring->eventfd >= 0)
		close(ring->eventfd);
	for (unsigned i = 0; i < ring->nslabs; i++)
		free(ring->slabs[i]);
	free(ring->slabs);
	pthread_mutex_destroy(&ring->cq_lock);
	pthread_mutex_destroy(&ring->sq_lock);
	pthread_mutex_destroy(&ring->lock);
	free(ring);
}
