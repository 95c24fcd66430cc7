/*
 * ring.c - the ring: its op pool, submission (routing, links, barriers) and
 * completion (callbacks, per-op waiters, the ring-wide completion list).
 *
 * Invariants, under ring->lock: an op is in exactly one of the free list
 * (OP_FREE), the pending list (OP_PREP), flight (OP_INFLIGHT: the deferred
 * list, a worker queue or io_uring) or the caller's hands (OP_DONE, on the
 * done list if nobody took it yet). inflight counts OP_INFLIGHT ops and
 * running those of them that are not deferred.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define SLAB_OPS 128

/* Its address tells threads apart: acall_submit() takes the caller's ops. */
static _Thread_local char thread_token;

void acall_futex_wait(_Atomic uint32_t *word, uint32_t val, long timeout_ns)
{
	struct timespec ts = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout_ns ? &ts : NULL, NULL, 0);
}

void acall_futex_wake(_Atomic uint32_t *word, int n)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* The syscall only when the waiter really sleeps: a waiter that is busy
 * reaping or helping sees the 1 on its next check. */
void acall_wake(struct acall_waiter *w)
{
	if (atomic_exchange(&w->word, 1) == 2)
		acall_futex_wake(&w->word, 1);
}

void acall_list_append(struct acall_list *l, struct acall_op *op)
{
	op->next = NULL;
	op->prev = l->tail;
	if (l->tail)
		l->tail->next = op;
	else
		l->head = op;
	l->tail = op;
	l->n++;
}

void acall_list_remove(struct acall_list *l, struct acall_op *op)
{
	if (op->prev)
		op->prev->next = op->next;
	else
		l->head = op->next;
	if (op->next)
		op->next->prev = op->prev;
	else
		l->tail = op->prev;
	op->prev = op->next = NULL;
	l->n--;
}

static int pool_grow_locked(struct acall_ring *ring)
{
	void **slabs = realloc(ring->slabs, (ring->nslabs + 1) * sizeof(*slabs));
	struct acall_op *ops;

	if (!slabs)
		return -ENOMEM;
	ring->slabs = slabs;
	ops = calloc(SLAB_OPS, sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	slabs[ring->nslabs++] = ops;
	for (unsigned i = 0; i < SLAB_OPS; i++) {
		ops[i].ring = ring;
		ops[i].next = ring->free_ops;
		ring->free_ops = &ops[i];
	}
	return 0;
}

static struct acall_op *get_op_locked(struct acall_ring *ring)
{
	struct acall_op *op;

	if (!ring->free_ops && pool_grow_locked(ring) < 0)
		return NULL;
	op = ring->free_ops;
	ring->free_ops = op->next;
	atomic_store(&op->state, OP_PREP);
	op->owner = &thread_token;
	op->link = NULL;
	op->waiter = NULL;
	op->waited = false;
	op->on_done_list = op->deferred = false;
	atomic_store(&op->cancel, false);
	acall_list_append(&ring->pending, op);
	return op;
}

struct acall_op *acall_get_op(struct acall_ring *ring)
{
	struct acall_op *op;

	pthread_mutex_lock(&ring->lock);
	op = get_op_locked(ring);
	pthread_mutex_unlock(&ring->lock);
	if (op)
		acall_prep_nop(op);
	return op;
}

unsigned acall_get_ops(struct acall_ring *ring, struct acall_op **ops, unsigned n)
{
	unsigned got = 0;

	pthread_mutex_lock(&ring->lock);
	while (got < n && (ops[got] = get_op_locked(ring)))
		got++;
	pthread_mutex_unlock(&ring->lock);
	for (unsigned i = 0; i < got; i++)
		acall_prep_nop(ops[i]);
	return got;
}

static void pool_put_locked(struct acall_ring *ring, struct acall_op *op)
{
	atomic_store(&op->state, OP_FREE);
	op->next = ring->free_ops;
	ring->free_ops = op;
}

static void op_done_locked(struct acall_ring *ring, struct acall_op *op)
{
	switch (atomic_load(&op->state)) {
	case OP_PREP:
		acall_list_remove(&ring->pending, op);
		pool_put_locked(ring, op);
		break;
	case OP_DONE:
		if (op->on_done_list) {
			acall_list_remove(&ring->done, op);
			op->on_done_list = false;
			atomic_fetch_sub(&ring->ndone, 1);
		}
		pool_put_locked(ring, op);
		break;
	default:        /* in flight or already free: not the caller's to give */
		break;
	}
}

void acall_op_done(struct acall_ring *ring, struct acall_op *op)
{
	if (!op)
		return;
	pthread_mutex_lock(&ring->lock);
	op_done_locked(ring, op);
	pthread_mutex_unlock(&ring->lock);
}

void acall_op_done_batch(struct acall_ring *ring, struct acall_op **ops, unsigned n)
{
	pthread_mutex_lock(&ring->lock);
	for (unsigned i = 0; i < n; i++)
		if (ops[i])
			op_done_locked(ring, ops[i]);
	pthread_mutex_unlock(&ring->lock);
}

/*
 * Barriers. Pops from the deferred list, in order, what may start now: up
 * to a barrier; a barrier (with the ops linked to it) only once nothing
 * runs, and then alone. Returns the ops through op->next.
 */
static struct acall_op *take_ready_locked(struct acall_ring *ring)
{
	struct acall_op *head = NULL, *tail = NULL;

	while (ring->deferred.head && !ring->barrier_running) {
		struct acall_op *op = ring->deferred.head;
		bool barrier = false;

		for (struct acall_op *o = op; o; o = (o->flags & ACALL_F_LINK) ? o->next : NULL)
			barrier |= o->flags & ACALL_F_BARRIER;
		if (barrier && (ring->running || head))
			break;
		do {    /* the op and the ops linked after it */
			op = ring->deferred.head;
			acall_list_remove(&ring->deferred, op);
			op->deferred = false;
			ring->running++;
			if (tail)
				tail->next = op;
			else
				head = op;
			tail = op;
		} while ((op->flags & ACALL_F_LINK) && ring->deferred.head);
		ring->barrier_running = barrier;
	}
	return head;
}

static bool route_to_uring(struct acall_ring *ring, struct acall_op *op)
{
	int id;

	if (op->opcode >= ACALL_OP__MAX || ring->route[op->opcode] != ACALL_PATH_URING)
		return false;
	if ((op->flags & ACALL_F_NOCACHE) && !ring->has_dontcache)
		return false;   /* the fadvise fallback is the workers' */
	if (!op->cred)
		return true;
	id = acall_uring_personality(ring, op->cred);
	op->personality = id > 0 ? (uint16_t)id : 0;
	return id > 0;
}

/*
 * Starts ops (through op->next, in submission order): cut into chains at
 * ops without ACALL_F_LINK; a chain runs on io_uring if all its ops do,
 * else on one worker, so the link holds across paths.
 */
static void start_ops(struct acall_ring *ring, struct acall_op *ops)
{
	struct acall_op *uh = NULL, *ut = NULL, *wh = NULL, *wt = NULL;
	unsigned nw = 0;

	while (ops) {
		struct acall_op *c = ops, *o = ops;
		bool uring = ring->has_uring;

		for (;;) {
			uring = route_to_uring(ring, o) && uring;
			if (!(o->flags & ACALL_F_LINK) || !o->next)
				break;
			o->link = o->next;
			o = o->next;
		}
		ops = o->next;
		o->link = NULL;
		c->next = NULL;
		for (o = c; o; o = o->link)
			o->path = uring ? ACALL_PATH_URING : ACALL_PATH_WORKERS;
		if (uring) {
			if (ut)
				ut->next = c;
			else
				uh = c;
			ut = c;
		} else {
			if (wt)
				wt->next = c;
			else
				wh = c;
			wt = c;
			nw++;
		}
	}
	if (wh)
		acall_workers_queue(ring, wh, nw);
	/* If io_uring_enter() fails for another reason than a full CQ (which
	 * acall_uring_submit() waits out), the SQEs stay in the SQ and go with
	 * the next submission: running them elsewhere could run them twice. */
	if (uh)
		acall_uring_submit(ring, uh);
}

/* ops (through op->next, n of them) leave OP_PREP; the caller holds
 * ring->lock and has taken them off the pending list. Returns what to start. */
static struct acall_op *submit_locked(struct acall_ring *ring, struct acall_op *ops, unsigned n)
{
	bool barrier = false;
	struct acall_op *o;

	for (o = ops; o; o = o->next) {
		atomic_store(&o->state, OP_INFLIGHT);
		barrier |= o->flags & ACALL_F_BARRIER;
	}
	ring->inflight += n;
	atomic_store(&ring->ninflight, ring->inflight);
	if (!barrier && !ring->deferred.head && !ring->barrier_running) {
		ring->running += n;
		return ops;
	}
	for (o = ops; o;) {
		struct acall_op *next = o->next;

		acall_list_append(&ring->deferred, o);
		o->deferred = true;
		o = next;
	}
	return take_ready_locked(ring);
}

int acall_submit(struct acall_ring *ring)
{
	struct acall_op *head = NULL, *tail = NULL, *ready;
	unsigned n = 0;

	pthread_mutex_lock(&ring->lock);
	for (struct acall_op *op = ring->pending.head, *next; op; op = next) {
		next = op->next;
		if (op->owner != &thread_token)
			continue;
		acall_list_remove(&ring->pending, op);
		if (tail)
			tail->next = op;
		else
			head = op;
		tail = op;
		n++;
	}
	ready = n ? submit_locked(ring, head, n) : NULL;
	pthread_mutex_unlock(&ring->lock);
	if (ready)
		start_ops(ring, ready);
	return (int)n;
}

void acall_submit_op(struct acall_ring *ring, struct acall_op *op)
{
	struct acall_op *ready;

	pthread_mutex_lock(&ring->lock);
	acall_list_remove(&ring->pending, op);
	op->flags &= (uint16_t)~ACALL_F_LINK;   /* alone: nothing to link to */
	ready = submit_locked(ring, op, 1);
	pthread_mutex_unlock(&ring->lock);
	if (ready)
		start_ops(ring, ready);
}

static void wake_ringwide_locked(struct acall_ring *ring)
{
	for (struct acall_waiter *w = ring->waiters; w; w = w->next)
		if (!w->op)
			acall_wake(w);
}

/* n ops left flight (a callback op: once its callback returned). Returns
 * what a barrier held back and may start now. */
static struct acall_op *settle_locked(struct acall_ring *ring, unsigned n, unsigned nring)
{
	ring->inflight -= n;
	ring->running -= n;
	atomic_store(&ring->ninflight, ring->inflight);
	if (nring)
		atomic_fetch_add(&ring->ndone, nring);
	/* Ring-wide waiters also give up once nothing is in flight. */
	if (nring || !ring->inflight)
		wake_ringwide_locked(ring);
	return ring->deferred.head ? take_ready_locked(ring) : NULL;
}

void acall_complete(struct acall_ring *ring, struct acall_op **ops, unsigned n)
{
	struct acall_op *ready;
	unsigned ncb = 0, nring = 0;

	pthread_mutex_lock(&ring->lock);
	for (unsigned i = 0; i < n; i++) {
		struct acall_op *op = ops[i];

		if (op->flags & ACALL_F_BARRIER)
			ring->barrier_running = false;
		if (op->cb) {
			ops[ncb++] = op;        /* ops[] is ours: reuse it for callbacks */
		} else if (op->waiter || op->waited) {
			atomic_store(&op->state, OP_DONE);
			if (op->waiter)
				acall_wake(op->waiter);
		} else {
			atomic_store(&op->state, OP_DONE);
			acall_list_append(&ring->done, op);
			op->on_done_list = true;
			nring++;
		}
	}
	ready = settle_locked(ring, n - ncb, nring);
	pthread_mutex_unlock(&ring->lock);
	if (nring && ring->eventfd >= 0)
		eventfd_write(ring->eventfd, nring);
	if (ready)
		start_ops(ring, ready);
	if (!ncb)
		return;
	/* A callback op stays in flight until its callback returned: a
	 * barrier, acall_wait() and acall_ring_free() wait for the callback. */
	for (unsigned i = 0; i < ncb; i++) {
		atomic_store(&ops[i]->state, OP_DONE);
		ops[i]->cb(ring, ops[i], ops[i]->cb_arg);
	}
	pthread_mutex_lock(&ring->lock);
	for (unsigned i = 0; i < ncb; i++)
		pool_put_locked(ring, ops[i]);
	ready = settle_locked(ring, ncb, 0);
	pthread_mutex_unlock(&ring->lock);
	if (ready)
		start_ops(ring, ready);
}
