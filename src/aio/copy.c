/*
 * copy.c - small buffered copies of regular files, which io_uring serves
 * badly through the POSIX AIO API: the ways they run instead of as an
 * io_uring op.
 *
 * Writes: io_uring hands a buffered write on ext4 to its io-wq threads (one
 * at a time per file) and its completion comes back through acall's
 * reaper: two thread switches per request, which made pony's buffered
 * writes 0.25-0.74x glibc's. Here they wait in their fd's queue
 * (AIO_REQ_COPY) for a drainer that copies them in submission order with
 * plain pwrite() calls: an acall worker, scheduled once per fd while
 * copies wait (glibc's design, one thread per fd), or any thread about to
 * sleep in aio_suspend() or lio_listio(LIO_WAIT), which does the copies
 * itself instead of waiting for the worker to wake. aio_write() returns
 * before the copy, as POSIX and programs (LTP aio_error/2-1) expect.
 *
 * Reads: tried first in aio_read() itself with RWF_NOWAIT, and complete
 * there when every byte is in the page cache (what io_uring tries first
 * too, without the hop through the reaper); otherwise they go to io_uring,
 * which reads the disk without a thread.
 *
 * Locking as in internal.h; a drainer drops aio.lock around each copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Writes a drainer copies before it publishes their results. */
#define DRAIN_BATCH 16


enum aio_way aio_copy_way(const struct aio_req *req, bool can_inline)
{
	const struct aio_fdq *q = req->q;

	if (q->stream || q->direct || req->cb->aio_nbytes >= AIO_COPY_SMALL)
		return AIO_WAY_ACALL;
	if (req->kind == AIO_KIND_READ)
		return can_inline ? AIO_WAY_INLINE : AIO_WAY_ACALL;
	return req->kind == AIO_KIND_WRITE && !q->append ? AIO_WAY_DRAIN : AIO_WAY_ACALL;
}

void aio_run_inline(struct aio_req *req)
{
	const struct aiocb *cb = req->cb;
	const struct sigevent sev = req->sev;   /* req may be gone when it is sent */
	struct iovec iov = { .iov_base = (void *)cb->aio_buf, .iov_len = cb->aio_nbytes };
	struct aio_notes notes = { .n = 0 };
	ssize_t r = preadv2(cb->aio_fildes, &iov, 1, cb->aio_offset, RWF_NOWAIT);

	aio_lock();
	if (r == (ssize_t)cb->aio_nbytes)
		aio_req_finish_locked(req, r, &notes);
	/* Not all cached (or no RWF_NOWAIT here): io_uring reads it. */
	else if (aio_req_prep_locked(req) < 0)
		aio_req_finish_locked(req, -EAGAIN, &notes);
	else if (aio_req_submit_locked(req) < 0)
		aio_notes_add(&notes, &sev, aio_getpid());  /* accepted: say it failed */
	aio_unlock();
	aio_notes_send(&notes);
}

void aio_copy_unqueue_locked(struct aio_req *req)
{
	req->q->ncopy--;
	atomic_fetch_sub(&aio.ncopy, 1);
}

/* Copies q's waiting writes in order until none is left, up to
 * DRAIN_BATCH at a time: their results are published together, with one
 * wake-up of the threads waiting for them rather than one per write. The
 * caller holds aio.lock once (dropped around the copies) and keeps q. */
static bool drain_locked(struct aio_fdq *q)
{
	struct aio_req *batch[DRAIN_BATCH];
	int64_t res[DRAIN_BATCH];
	bool any = false;

	if (q->draining)
		return false;
	q->draining = true;
	for (;;) {
		struct aio_notes notes = { .n = 0 };
		unsigned n = 0;

		for (struct aio_req *req = q->head; req && n < DRAIN_BATCH; req = req->next) {
			if (req->state != AIO_REQ_COPY)
				continue;
			/* Running with no op: aio_cancel() cannot stop it. */
			req->state = AIO_REQ_RUNNING;
			aio_copy_unqueue_locked(req);
			batch[n++] = req;
		}
		if (!n)
			break;
		aio_unlock();
		for (unsigned i = 0; i < n; i++) {
			const struct aiocb *cb = batch[i]->cb;
			ssize_t r = pwrite(cb->aio_fildes, (const void *)cb->aio_buf,
					   cb->aio_nbytes, cb->aio_offset);

			res[i] = r < 0 ? -errno : r;
		}
		aio_lock();
		aio_wake_hold();
		for (unsigned i = 0; i < n; i++) {
			aio_req_finish_locked(batch[i], res[i], &notes);
			if (notes.n) {
				aio_unlock();
				aio_notes_send(&notes);
				aio_lock();
				notes.n = 0;
			}
		}
		aio_wake_release();
		any = true;
	}
	q->draining = false;
	return any;
}

/* The worker's drainer: an acall CALL op. */
static int64_t drain_call(void *arg)
{
	struct aio_fdq *q = arg;

	aio_lock();
	q->drain_op = NULL;
	drain_locked(q);
	q->hold--;
	aio_fdq_put_locked(q);
	aio_unlock();
	return 0;
}

static void drain_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	(void)ring;
	(void)op;
	(void)arg;      /* the record goes back to the pool by itself */
}

int aio_copy_schedule_locked(struct aio_fdq *q)
{
	struct acall_op *op;

	if (q->drain_op || q->draining)
		return 0;       /* a drainer will find the new copy */
	op = acall_get_op(aio.ring);
	if (!op)
		return -EAGAIN;
	acall_prep_call(op, drain_call, q);
	acall_op_set_callback(op, drain_done, NULL);
	q->drain_op = op;
	q->hold++;
	return 0;
}

void aio_copy_submit_locked(struct aio_fdq *q)
{
	struct acall_op *op = q->drain_op;

	if (!op || acall_submit(aio.ring) >= 0)
		return;
	/* No worker will come: copy here. */
	acall_op_done(aio.ring, op);
	q->drain_op = NULL;
	drain_locked(q);
	q->hold--;
	aio_fdq_put_locked(q);
}

bool aio_copy_help(void)
{
	bool any = false;

	/* aio_lock_held: a signal handler interrupted pony here; the lists
	 * may be half changed under it. */
	if (!atomic_load(&aio.ncopy) || aio_lock_held)
		return false;
	aio_lock();
	for (unsigned b = 0; b < AIO_FDQ_BUCKETS && atomic_load(&aio.ncopy); b++) {
		for (struct aio_fdq *q = aio.fdq[b]; q; q = q->hnext) {
			if (!q->ncopy || q->draining)
				continue;
			q->hold++;
			any |= drain_locked(q);
			q->hold--;
			aio_fdq_put_locked(q);
			b--;    /* the chain may have changed: this bucket again */
			break;
		}
	}
	aio_unlock();
	return any;
}
