/*
 * worker.c - pony's worker threads: the path for ops io_uring lacks or
 * runs badly. Submitters hand over whole batches under one lock; a worker
 * takes a share of the queue at a time, runs each chain of linked ops in
 * order, and completes what it ran in one batch.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

/* How long an idle worker watches the queue before it sleeps. */
static const uint64_t spin_ns = 20000;

#define WORKER_TAKE_MAX 16      /* chains per queue visit */
#define HELP_TAKE_MAX 16        /* chains a waiting thread takes */

/* A thread that is not a worker running ops (acall_workers_help()). Its
 * ops are quick, so acall_cancel() does not signal it. */
static _Thread_local struct acall_exec helper_ex = { .lock = PTHREAD_MUTEX_INITIALIZER };
#define WORKER_DONE_MAX 32      /* ops per completion batch */

/* A leader blocked in io_uring_enter may be waiting for these: kick it. */
static void complete_batch(struct acall_ring *ring, struct acall_op **ops, unsigned n)
{
	acall_complete(ring, ops, n);
	if (ring->has_uring && atomic_load(&ring->leader_sleeping))
		acall_uring_kick(ring);
}

struct done_batch {
	struct acall_op *ops[WORKER_DONE_MAX];
	unsigned n;
};

static void done_add(struct acall_ring *ring, struct done_batch *d, struct acall_op *op)
{
	d->ops[d->n++] = op;
	if (d->n == WORKER_DONE_MAX) {
		complete_batch(ring, d->ops, d->n);
		d->n = 0;
	}
}

/* What a read or write must return for a linked successor to run. */
static uint64_t rw_expected(const struct acall_op *op)
{
	const struct iovec *iov = op->addr;
	uint64_t sum = 0;

	switch (op->opcode) {
	case ACALL_OP_READ: case ACALL_OP_WRITE:
		return op->len;
	case ACALL_OP_READV: case ACALL_OP_WRITEV:
		for (uint64_t i = 0; iov && i < op->len; i++)
			sum += iov[i].iov_len;
		return sum;
	}
	return 0;
}

static void run_one(struct acall_ring *ring, struct acall_exec *ex, struct acall_op *op)
{
	int64_t r;

	pthread_mutex_lock(&ex->lock);
	ex->cur = op;
	pthread_mutex_unlock(&ex->lock);
	/* After publishing cur: a cancel either sees cur and signals, or set
	 * the flag before and is seen here. */
	if (atomic_load(&op->cancel) || atomic_load(&ring->stopping))
		r = -ECANCELED;
	else
		r = acall_exec_op(ring, ex, op);
	/* After this, acall_cancel() can no longer signal this thread for op. */
	pthread_mutex_lock(&ex->lock);
	ex->cur = NULL;
	pthread_mutex_unlock(&ex->lock);
	op->result = r;
}

/* Runs a chain in order; after a failure the rest completes -ECANCELED, as
 * io_uring does for IOSQE_IO_LINK. */
static void run_chain(struct acall_ring *ring, struct acall_exec *ex, struct acall_op *op,
		      struct done_batch *d)
{
	bool failed = false;

	while (op) {
		struct acall_op *next = op->link;

		if (failed) {
			op->result = -ECANCELED;
		} else {
			run_one(ring, ex, op);
			failed = op->result < 0 ||
				 (uint64_t)op->result < rw_expected(op);
		}
		done_add(ring, d, op);
		op = next;
	}
}

static bool chain_quick(const struct acall_op *c)
{
	for (; c; c = c->link)
		if (!acall_route_quick(c->opcode))
			return false;
	return true;
}

/* Pops up to max chains off the queue (only quick ones if quick_only). */
static unsigned take_locked(struct acall_workers *wq, struct acall_op **take, unsigned max,
			    bool quick_only)
{
	unsigned k = 0;

	while (wq->head && k < max && (!quick_only || chain_quick(wq->head))) {
		take[k++] = wq->head;
		wq->head = wq->head->next;
		wq->queued--;
	}
	if (!wq->head)
		wq->tail = NULL;
	atomic_store(&wq->nqueued, wq->queued);
	return k;
}

/* Runs what take_locked() popped and completes it in batches. */
static void run_taken(struct acall_ring *ring, struct acall_exec *ex, struct acall_op **take,
		      unsigned k)
{
	struct done_batch d = { .n = 0 };

	for (unsigned i = 0; i < k; i++)
		run_chain(ring, ex, take[i], &d);
	if (d.n)
		complete_batch(ring, d.ops, d.n);
}

/*
 * Before sleeping, watch the queue for a moment (with wq->lock dropped): a
 * submitter reaping a batch refills the queue within microseconds, and a
 * sleeping worker costs it a futex wake and a thread switch per batch.
 */
static void spin_for_work(struct acall_workers *wq)
{
	uint64_t end;

	if (!spin_ns)
		return;
	pthread_mutex_unlock(&wq->lock);
	end = util_now_ns() + spin_ns;
	while (!atomic_load_explicit(&wq->nqueued, memory_order_relaxed) && util_now_ns() < end)
		__builtin_ia32_pause();
	pthread_mutex_lock(&wq->lock);
}

static void *worker_main(void *arg)
{
	struct acall_worker *w = arg;
	struct acall_ring *ring = w->ring;
	struct acall_workers *wq = &ring->wq;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, acall_signal_number());
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	w->ex.tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&wq->lock);
	for (;;) {
		struct acall_op *take[WORKER_TAKE_MAX];
		unsigned k, share;

		if (!wq->head && !wq->stop)
			spin_for_work(wq);
		while (!wq->head && !wq->stop) {
			wq->idle++;
			pthread_cond_wait(&wq->cond, &wq->lock);
			wq->idle--;
		}
		if (!wq->head)
			break;
		/* A fair share, so one worker does not starve the others. */
		share = wq->queued / wq->n;
		share = share < 1 ? 1 : share > WORKER_TAKE_MAX ? WORKER_TAKE_MAX : share;
		k = take_locked(wq, take, share, false);
		pthread_mutex_unlock(&wq->lock);
		run_taken(ring, &w->ex, take, k);
		pthread_mutex_lock(&wq->lock);
	}
	pthread_mutex_unlock(&wq->lock);
	acall_exec_restore_cred(&w->ex);
	return NULL;
}

int acall_workers_start(struct acall_ring *ring, unsigned n)
{
	struct acall_workers *wq = &ring->wq;

	util_mutex_init_adaptive(&wq->lock);
	pthread_cond_init(&wq->cond, NULL);
	wq->w = calloc(n, sizeof(*wq->w));
	if (!wq->w)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct acall_worker *w = &wq->w[i];
		int r;

		w->ring = ring;
		pthread_mutex_init(&w->ex.lock, NULL);
		r = pthread_create(&w->thread, NULL, worker_main, w);
		if (r) {
			pthread_mutex_destroy(&w->ex.lock);
			return -r;
		}
		wq->n++;
	}
	return 0;
}

/* Workers finish the queue, then exit. Safe on a half-started pool. */
void acall_workers_stop(struct acall_ring *ring)
{
	struct acall_workers *wq = &ring->wq;

	if (!wq->w)
		return;
	pthread_mutex_lock(&wq->lock);
	wq->stop = true;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	for (unsigned i = 0; i < wq->n; i++) {
		pthread_join(wq->w[i].thread, NULL);
		pthread_mutex_destroy(&wq->w[i].ex.lock);
	}
	free(wq->w);
	wq->w = NULL;
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
}

void acall_workers_queue(struct acall_ring *ring, struct acall_op *chains, unsigned n)
{
	struct acall_workers *wq = &ring->wq;
	struct acall_op *last = chains;
	unsigned wake;

	while (last->next)
		last = last->next;
	pthread_mutex_lock(&wq->lock);
	if (wq->tail)
		wq->tail->next = chains;
	else
		wq->head = chains;
	wq->tail = last;
	wq->queued += n;
	atomic_store(&wq->nqueued, wq->queued);
	wake = n < wq->idle ? n : wq->idle;
	if (wake >= wq->idle)
		pthread_cond_broadcast(&wq->cond);
	else
		while (wake--)
			pthread_cond_signal(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
}

/* Takes the queued chain holding op out of the queue; NULL if none does. */
static struct acall_op *unqueue_locked(struct acall_workers *wq, struct acall_op *op)
{
	struct acall_op *prev = NULL;

	for (struct acall_op *c = wq->head; c; prev = c, c = c->next) {
		for (struct acall_op *o = c; o; o = o->link) {
			if (o != op)
				continue;
			if (prev)
				prev->next = c->next;
			else
				wq->head = c->next;
			if (wq->tail == c)
				wq->tail = prev;
			wq->queued--;
			atomic_store(&wq->nqueued, wq->queued);
			return c;
		}
	}
	return NULL;
}

static void complete_canceled(struct acall_ring *ring, struct acall_op *chain)
{
	struct done_batch d = { .n = 0 };

	for (struct acall_op *o = chain, *next; o; o = next) {
		next = o->link;
		o->result = -ECANCELED;
		done_add(ring, &d, o);
	}
	if (d.n)
		complete_batch(ring, d.ops, d.n);
}

/* Signals the worker running op, if one is. Returns whether one was. */
static bool signal_runner(struct acall_ring *ring, struct acall_op *op)
{
	bool found = false;

	for (unsigned i = 0; i < ring->wq.n; i++) {
		struct acall_exec *ex = &ring->wq.w[i].ex;

		pthread_mutex_lock(&ex->lock);
		if (ex->cur && (ex->cur == op || !op)) {
			syscall(SYS_tgkill, getpid(), ex->tid, acall_signal_number());
			found = true;
		}
		pthread_mutex_unlock(&ex->lock);
	}
	return found;
}

/*
 * A queued op is taken out and completes -ECANCELED at once. A running one
 * is interrupted: the signal can land just before the worker enters the
 * blocking call, so it is repeated until the op has left the worker.
 */
int acall_workers_cancel(struct acall_ring *ring, struct acall_op *op)
{
	struct timespec ms = { .tv_nsec = 1000000 };
	struct acall_op *chain;

	atomic_store(&op->cancel, true);
	pthread_mutex_lock(&ring->wq.lock);
	chain = unqueue_locked(&ring->wq, op);
	pthread_mutex_unlock(&ring->wq.lock);
	if (chain) {
		complete_canceled(ring, chain);
		return 0;
	}
	if (!signal_runner(ring, op))
		return atomic_load(&op->state) == OP_INFLIGHT ? 0 : -ENOENT;
	for (int i = 0; i < 1000; i++) {
		nanosleep(&ms, NULL);
		if (!signal_runner(ring, op))
			return 0;
	}
	return -EALREADY;
}

/* Ring shutdown: the queue completes -ECANCELED, running ops are
 * interrupted (again until they are gone: see acall_workers_cancel). */
void acall_workers_cancel_all(struct acall_ring *ring)
{
	struct acall_workers *wq = &ring->wq;
	struct acall_op *chains;

	if (!wq->w)
		return;
	pthread_mutex_lock(&wq->lock);
	chains = wq->head;
	wq->head = wq->tail = NULL;
	wq->queued = 0;
	atomic_store(&wq->nqueued, 0);
	pthread_mutex_unlock(&wq->lock);
	for (struct acall_op *c = chains, *next; c; c = next) {
		next = c->next;
		complete_canceled(ring, c);
	}
	signal_runner(ring, NULL);
}


bool acall_workers_help(struct acall_ring *ring)
{
	struct acall_workers *wq = &ring->wq;
	struct acall_op *take[HELP_TAKE_MAX];
	unsigned k;

	if (!wq->w || !atomic_load(&wq->nqueued))
		return false;
	pthread_mutex_lock(&wq->lock);
	/* Half the queue at most: the workers, already awake, get the rest. */
	k = take_locked(wq, take, MIN(HELP_TAKE_MAX, (wq->queued + 1) / 2), true);
	pthread_mutex_unlock(&wq->lock);
	run_taken(ring, &helper_ex, take, k);
	acall_exec_restore_cred(&helper_ex);
	return k > 0;
}

void acall_workers_run_here(struct acall_ring *ring, struct acall_op *op)
{
	run_one(ring, &helper_ex, op);
	acall_exec_restore_cred(&helper_ex);
}
