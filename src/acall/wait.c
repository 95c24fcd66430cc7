/*
 * wait.c - waiting for completions. Threads waiting on a ring take turns
 * reaping its io_uring: one "leader" holds cq_lock and reaps (blocking in
 * io_uring_enter when it must), completing ops for everyone; the others
 * sleep on their own futex word until their op completes or the leader
 * leaves. A single-threaded caller is always its own leader, so it never
 * pays a thread switch per completion.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* Followers re-check this often, in case a hand-over was missed. */
#define FOLLOWER_TIMEOUT_NS 20000000L

static void waiter_add_locked(struct acall_ring *ring, struct acall_waiter *w)
{
	w->prev = NULL;
	w->next = ring->waiters;
	if (ring->waiters)
		ring->waiters->prev = w;
	ring->waiters = w;
}

/* The CQ's holder leaves while io_uring ops are still out: wakes a waiter
 * that will take it over. */
static void handover_locked(struct acall_ring *ring)
{
	if (ring->has_uring && atomic_load(&ring->uring_inflight))
		for (struct acall_waiter *o = ring->waiters; o; o = o->next)
			if (!o->op || o->op->path == ACALL_PATH_URING) {
				acall_wake(o);
				break;
			}
}

static void waiter_del_locked(struct acall_ring *ring, struct acall_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		ring->waiters = w->next;
	if (w->next)
		w->next->prev = w->prev;
	handover_locked(ring);
}

static bool waiter_satisfied(struct acall_ring *ring, struct acall_waiter *w)
{
	if (w->op)
		return atomic_load(&w->op->state) == OP_DONE;
	/* Nothing left in flight: nothing more can come (callback ops and
	 * others' acall_op_wait() ops never reach the done list). */
	return atomic_load(&ring->ndone) > 0 || !atomic_load(&ring->ninflight);
}

/* Sleeps (or leads) until w is satisfied. w is registered. */
static void wait_for(struct acall_ring *ring, struct acall_waiter *w)
{
	for (;;) {
		bool lead;

		atomic_store(&w->word, 0);
		if (waiter_satisfied(ring, w))
			return;
		lead = ring->has_uring && atomic_load(&ring->uring_inflight) &&
		       (!w->op || w->op->path == ACALL_PATH_URING);
		if (lead && !pthread_mutex_trylock(&ring->cq_lock)) {
			acall_uring_reap(ring, false);
			if (!waiter_satisfied(ring, w)) {
				atomic_store(&ring->leader_ringwide, w->op == NULL);
				acall_uring_reap(ring, true);
			}
			acall_cq_unlock(ring);
			continue;
		}
		/* Rather than sleep while workers have quick ops queued, run
		 * some here: no wake-up, no thread switch. */
		if (acall_workers_help(ring))
			continue;
		uint32_t awake = 0;
		if (atomic_compare_exchange_strong(&w->word, &awake, 2))
			acall_futex_wait(&w->word, 2, lead || ring->has_uring ? FOLLOWER_TIMEOUT_NS : 0);
	}
}

int64_t acall_op_wait(struct acall_ring *ring, struct acall_op *op)
{
	struct acall_waiter w = { .op = op };

	pthread_mutex_lock(&ring->lock);
	switch (atomic_load(&op->state)) {
	case OP_DONE:
		if (op->on_done_list) {
			acall_list_remove(&ring->done, op);
			op->on_done_list = false;
			atomic_fetch_sub(&ring->ndone, 1);
		}
		pthread_mutex_unlock(&ring->lock);
		return op->result;
	case OP_INFLIGHT:
		if (!op->cb && !op->waiter)
			break;
		/* its callback or another thread has it */
		pthread_mutex_unlock(&ring->lock);
		return -EINVAL;
	default:
		pthread_mutex_unlock(&ring->lock);
		return -EINVAL;
	}
	op->waiter = &w;
	waiter_add_locked(ring, &w);
	pthread_mutex_unlock(&ring->lock);
	wait_for(ring, &w);
	pthread_mutex_lock(&ring->lock);
	op->waiter = NULL;
	waiter_del_locked(ring, &w);
	pthread_mutex_unlock(&ring->lock);
	return op->result;
}

static bool run_here_ok(struct acall_ring *ring, const struct acall_op *op)
{
	bool ok;

	if (!acall_route_quick(op->opcode) || ring->route[op->opcode] != ACALL_PATH_WORKERS ||
	    (op->flags & (ACALL_F_BARRIER | ACALL_F_LINK)))
		return false;
	pthread_mutex_lock(&ring->lock);
	ok = !ring->deferred.head && !ring->barrier_running && !atomic_load(&ring->stopping);
	pthread_mutex_unlock(&ring->lock);
	return ok;
}

int64_t acall_run(struct acall_ring *ring, struct acall_op *op)
{
	int64_t r;

	if (atomic_load(&op->state) != OP_PREP)
		return -EINVAL;
	op->cb = NULL;  /* the caller waits: a callback would take the op away */
	/* A quick op bound for a worker: the caller would only wait, so it
	 * runs it itself (unless a barrier orders it after others). */
	if (run_here_ok(ring, op)) {
		acall_workers_run_here(ring, op);
		r = op->result;
		acall_op_done(ring, op);
		return r;
	}
	/* Its completion must not reach the done list, where another thread's
	 * acall_wait() could take it first. */
	op->waited = true;
	acall_submit_op(ring, op);
	r = acall_op_wait(ring, op);
	acall_op_done(ring, op);
	return r;
}

static unsigned pop_done(struct acall_ring *ring, struct acall_op **ops, unsigned max)
{
	unsigned n = 0;

	if (!atomic_load(&ring->ndone))
		return 0;
	pthread_mutex_lock(&ring->lock);
	while (n < max && ring->done.head) {
		struct acall_op *op = ring->done.head;

		acall_list_remove(&ring->done, op);
		op->on_done_list = false;
		ops[n++] = op;
	}
	atomic_fetch_sub(&ring->ndone, n);
	pthread_mutex_unlock(&ring->lock);
	return n;
}

/* Reaps the CQ if no one else is; never blocks. */
static void reap_nowait(struct acall_ring *ring)
{
	if (!ring->has_uring || !atomic_load(&ring->uring_inflight))
		return;
	if (!pthread_mutex_trylock(&ring->cq_lock)) {
		acall_uring_reap(ring, false);
		acall_cq_unlock(ring);
	}
}

int acall_wait_batch(struct acall_ring *ring, struct acall_op **ops, unsigned max,
		     unsigned min)
{
	unsigned n;

	if (min > max)
		return -EINVAL;
	n = pop_done(ring, ops, max);
	if (n < max) {
		reap_nowait(ring);
		n += pop_done(ring, ops + n, max - n);
	}
	while (n < min) {
		struct acall_waiter w = { .op = NULL };
		bool idle;

		pthread_mutex_lock(&ring->lock);
		idle = !ring->inflight && !ring->done.head;
		if (!idle)
			waiter_add_locked(ring, &w);
		pthread_mutex_unlock(&ring->lock);
		if (idle)
			return n ? (int)n : -EAGAIN;    /* nothing could ever come */
		wait_for(ring, &w);
		pthread_mutex_lock(&ring->lock);
		waiter_del_locked(ring, &w);
		pthread_mutex_unlock(&ring->lock);
		n += pop_done(ring, ops + n, max - n);
	}
	return (int)n;
}

int acall_wait(struct acall_ring *ring, struct acall_op **ret_op)
{
	int r = acall_wait_batch(ring, ret_op, 1, 1);

	return r < 0 ? r : 0;
}

int acall_peek(struct acall_ring *ring, struct acall_op **ret_op)
{
	int r = acall_wait_batch(ring, ret_op, 1, 0);

	return r < 0 ? r : r ? 0 : -EAGAIN;
}

int acall_cancel(struct acall_ring *ring, struct acall_op *op)
{
	struct acall_op *one[1] = { op };

	pthread_mutex_lock(&ring->lock);
	if (atomic_load(&op->state) != OP_INFLIGHT) {
		pthread_mutex_unlock(&ring->lock);
		return -ENOENT;
	}
	if (op->deferred) {
		acall_list_remove(&ring->deferred, op);
		op->deferred = false;
		ring->running++;        /* acall_complete() counts it down */
		pthread_mutex_unlock(&ring->lock);
		op->result = -ECANCELED;
		acall_complete(ring, one, 1);
		return 0;
	}
	pthread_mutex_unlock(&ring->lock);
	if (op->path == ACALL_PATH_URING) {
		acall_uring_cancel(ring, op);
		return 0;
	}
	return acall_workers_cancel(ring, op);
}

/* The thread holds cq_lock in acall_reap_wait(); and sleeps in the kernel
 * there, holding nothing else (a signal handler may then reap for it). */
static _Thread_local bool reap_holding, reap_sleeping;

/* Sleeps on word while it is val: 0, -ETIMEDOUT or -EINTR. */
static int word_wait(_Atomic uint32_t *word, uint32_t val, const struct timespec *timeout)
{
	if (syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout, NULL, 0) < 0 &&
	    (errno == EINTR || errno == ETIMEDOUT))
		return -errno;
	return 0;
}

/* Reaps, then sleeps in the CQ unless word moved; the caller holds it. */
static int reap_and_sleep(struct acall_ring *ring, _Atomic uint32_t *word, uint32_t val,
			  const struct timespec *timeout)
{
	int r;

	acall_uring_reap(ring, false);
	reap_sleeping = true;
	r = acall_uring_wait_timed(ring, word, val, timeout);
	reap_sleeping = false;
	acall_uring_reap(ring, false);
	return r;
}

int acall_reap_wait(struct acall_ring *ring, _Atomic uint32_t *word, uint32_t val,
		    const struct timespec *timeout)
{
	int r;

	/* Without io_uring (or a timed io_uring wait), the ring's own
	 * threads complete everything and move word. */
	if (!ring->has_uring || !(ring->uring.features & IORING_FEAT_EXT_ARG))
		return word_wait(word, val, timeout);
	atomic_fetch_add(&ring->ext_gen, 1);
	if (reap_holding) {
		/* A signal handler interrupted this thread's own wait: the CQ
		 * is this thread's, and in the kernel it held nothing else. */
		if (reap_sleeping)
			return reap_and_sleep(ring, word, val, timeout);
		return word_wait(word, val, timeout);   /* docs/acall.md */
	}
	/* Counted before the try: a holder that leaves after it failed sees
	 * the count (it reads it after unlocking) and wakes it. */
	atomic_store(&ring->ext_word, word);
	atomic_fetch_add(&ring->ext_busy, 1);
	if (pthread_mutex_trylock(&ring->cq_lock)) {
		r = word_wait(word, val, timeout);
		atomic_fetch_sub(&ring->ext_busy, 1);
		return r;
	}
	atomic_fetch_sub(&ring->ext_busy, 1);
	reap_holding = true;
	r = reap_and_sleep(ring, word, val, timeout);
	reap_holding = false;
	acall_cq_unlock(ring);
	/* And acall_wait()ers of the ring, as a leaving leader does. */
	pthread_mutex_lock(&ring->lock);
	handover_locked(ring);
	pthread_mutex_unlock(&ring->lock);
	return r;
}

void acall_cq_unlock(struct acall_ring *ring)
{
	_Atomic uint32_t *word;

	pthread_mutex_unlock(&ring->cq_lock);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load(&ring->ext_busy))
		return;
	/* Callers that slept on their word because the CQ was held: one of
	 * them takes it now. */
	word = atomic_load(&ring->ext_word);
	atomic_fetch_add(word, 1);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void acall_reap_wake(struct acall_ring *ring)
{
	/* The caller moved the word first; a caller that counts itself in
	 * ext_busy later finds it moved (it read val before). */
	if (atomic_load(&ring->ext_busy))
		syscall(SYS_futex, atomic_load(&ring->ext_word), FUTEX_WAKE_PRIVATE, INT_MAX,
			NULL, NULL, 0);
	if (ring->has_uring && atomic_load(&ring->leader_sleeping))
		acall_uring_kick(ring);
}
