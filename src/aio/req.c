/*
 * req.c - the life of a POSIX AIO request on acall: validated and queued
 * on its fd, started as an acall op (at once, or when the ordering rules of
 * internal.h allow), completed by acall's callback (result published in the
 * aiocb, waiters woken, sigevents sent), or cancelled.
 *
 * The acall ring is created on first use, one per process; after fork the
 * child starts with none (see aio_fork_child() and docs/aio.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Linux moves at most this much in one read or write (MAX_RW_COUNT). */
#define AIO_RW_MAX 0x7ffff000UL
/* acall workers: big copies and stream writes (see req_copy_on_worker()). */
#define AIO_WORKERS 16
/* How long aio_cancel() waits to learn whether a request it asked to stop
 * was cancelled or completed; after that it says AIO_NOTCANCELED. */
#define AIO_CANCEL_WAIT_NS 200000000L

struct aio_state aio = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};
_Thread_local bool aio_lock_held;

/* Rings of parents, kept reachable after fork: the child must never touch
 * them (their threads are gone and their io_uring is shared with the
 * parent). */
static struct acall_ring *stale_rings[8];

static unsigned aio_max(void)
{
	const char *e = getenv("PONY_AIO_MAX");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < INT_MAX ? (unsigned)v : AIO_MAX_DEFAULT;
}

int aio_ring_get_locked(struct acall_ring **ret_ring)
{
	if (!aio.ring) {
		/* The CQ (4 x entries) holds every request in flight twice
		 * over (cancels and acall's wake-ups add entries of their
		 * own), so a submission never meets a full CQ (-EBUSY): the
		 * submitter holds aio.lock, which the reaper's callbacks
		 * need before they can empty the CQ. */
		struct acall_ring_params p = {
			.entries = 2048,
			/* Stream writes block a worker until sent, as under
			 * glibc (up to 20 threads): room for many at once. */
			.workers = AIO_WORKERS,
		};
		sigset_t all, old;
		int r;

		aio.max = aio_max();
		if (aio.max > 2 * p.entries)
			aio.max = 2 * p.entries;
		/* acall's threads inherit this mask: the application's
		 * signals must reach its own threads, never pony's. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = acall_ring_new(&p, &aio.ring);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r < 0)
			return r;
	}
	*ret_ring = aio.ring;
	return 0;
}

static struct aio_fdq **fdq_bucket(int fd)
{
	return &aio.fdq[(unsigned)fd % AIO_FDQ_BUCKETS];
}

struct aio_fdq *aio_fdq_lookup_locked(int fd)
{
	for (struct aio_fdq *q = *fdq_bucket(fd); q; q = q->hnext)
		if (q->fd == fd)
			return q;
	return NULL;
}

/* The queue of fd, made (with what the fd is) if none is in use. */
int aio_fdq_get_locked(int fd, struct aio_fdq **ret_q)
{
	struct aio_fdq *q = aio_fdq_lookup_locked(fd);
	int fl;

	/* A queue with no request is only kept for a drainer still to come:
	 * the fd may have been closed and reused for another file since, so
	 * what it is gets looked at again. */
	if (q && q->n) {
		*ret_q = q;
		return 0;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return -EAGAIN;
		q->fd = fd;
		q->hnext = *fdq_bucket(fd);
		*fdq_bucket(fd) = q;
	}
	q->accmode = fl & O_ACCMODE;
	q->append = fl & O_APPEND;
	q->stream = lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE;
	q->direct = fl & O_DIRECT;
	*ret_q = q;
	return 0;
}

void aio_fdq_put_locked(struct aio_fdq *q)
{
	struct aio_fdq **p;

	if (q->n || q->hold)
		return;
	for (p = fdq_bucket(q->fd); *p != q; p = &(*p)->hnext)
		;
	*p = q->hnext;
	free(q);
}

/* Whether req must wait while an earlier request of the given kinds is
 * pending on its fd (the rules of struct aio_fdq). */
static bool req_blocked(const struct aio_req *req, bool read_before, bool write_before)
{
	switch (req->kind) {
	case AIO_KIND_READ:
		return read_before;
	default:
		return write_before;
	}
}

static bool req_needs_order(const struct aio_req *req, const struct aio_fdq *q)
{
	switch (req->kind) {
	case AIO_KIND_READ:
		return q->stream;
	case AIO_KIND_WRITE:
		return q->stream || q->append;
	default:
		return true;
	}
}

static void op_done(struct acall_ring *ring, struct acall_op *op, void *arg);

/* A copy run by a worker (see req_copy_on_worker()). */
static int64_t req_copy(void *arg)
{
	const struct aio_req *req = arg;
	const struct aiocb *cb = req->cb;
	int fd = cb->aio_fildes;
	void *buf = (void *)cb->aio_buf;
	ssize_t r;

	if (req->q->stream)
		r = write(fd, buf, cb->aio_nbytes);
	else if (req->kind == AIO_KIND_READ)
		r = pread(fd, buf, cb->aio_nbytes, cb->aio_offset);
	else
		r = pwrite(fd, buf, cb->aio_nbytes, cb->aio_offset);
	return r < 0 ? -errno : r;
}

/*
 * Which requests a worker runs as a plain call rather than io_uring:
 * big buffered copies of regular files (AIO_COPY_SMALL and more: io_uring
 * copies cached data inline, in the submitting thread, and aio_read() and
 * lio_listio() must return before a big copy is done, as they do under
 * glibc; LTP aio_suspend/9-1 measures it), and writes to
 * streams, since io_uring ends a socket or pipe write at the first short
 * write while write(2) on a blocking fd sends it all, as glibc's does.
 */
static bool req_copy_on_worker(const struct aio_req *req)
{
	const struct aio_fdq *q = req->q;

	if (q->stream)
		return req->kind == AIO_KIND_WRITE;
	return (req->kind == AIO_KIND_READ || (req->kind == AIO_KIND_WRITE && !q->append)) &&
	       !q->direct && req->cb->aio_nbytes >= AIO_COPY_SMALL;
}

/* Prepares req's acall op; the caller submits. */
int aio_req_prep_locked(struct aio_req *req)
{
	struct acall_op *op = acall_get_op(aio.ring);
	struct aiocb *cb = req->cb;
	void *buf = (void *)cb->aio_buf;
	size_t len = cb->aio_nbytes < AIO_RW_MAX ? cb->aio_nbytes : AIO_RW_MAX;
	/* -1: the file position, which is all a stream has, and where an
	 * O_APPEND write goes anyway. */
	uint64_t off = req->q->stream || (req->kind == AIO_KIND_WRITE && req->q->append) ?
		       (uint64_t)-1 : (uint64_t)cb->aio_offset;

	if (!op)
		return -EAGAIN;
	switch (req_copy_on_worker(req) ? -1 : req->kind) {
	case -1:
		acall_prep_call(op, req_copy, req);
		break;
	case AIO_KIND_READ:
		acall_prep_read(op, cb->aio_fildes, buf, len, off);
		break;
	case AIO_KIND_WRITE:
		acall_prep_write(op, cb->aio_fildes, buf, len, off);
		break;
	case AIO_KIND_FSYNC:
		acall_prep_fsync(op, cb->aio_fildes);
		break;
	case AIO_KIND_FDATASYNC:
		acall_prep_fdatasync(op, cb->aio_fildes);
		break;
	}
	acall_op_set_callback(op, op_done, req);
	req->op = op;
	req->state = AIO_REQ_RUNNING;
	return 0;
}

static void req_unref_locked(struct aio_req *req)
{
	if (--req->refs == 0)
		free(req);
}

void aio_unlock(void)
{
	pthread_mutex_unlock(&aio.lock);
	aio_lock_held = false;
	aio_notes_flush();
}

/* Set by aio_wake_hold(): this thread's completions wake nobody until
 * aio_wake_release(). */
static _Thread_local bool wake_held, wake_due;

static void wake_all(void)
{
	atomic_fetch_add(&aio.seq, 1);
	if (wake_held) {
		wake_due = true;
	} else {
		/* Threads on the plain futex (aio_wait_seq() in a signal
		 * handler), then those in acall_reap_wait(). */
		if (atomic_load(&aio.sleepers))
			syscall(SYS_futex, &aio.seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		if (aio.ring)
			acall_reap_wake(aio.ring);
	}
}

void aio_wake_hold(void)
{
	wake_held = true;
}

void aio_wake_release(void)
{
	wake_held = false;
	if (wake_due) {
		wake_due = false;
		wake_all();
	}
}

static void start_ready_locked(struct aio_fdq *q, struct aio_notes *notes);

/* Publishes req's result (res: a count or -errno) and lets it go. */
void aio_req_finish_locked(struct aio_req *req, int64_t res, struct aio_notes *notes)
{
	struct aio_fdq *q = req->q;
	struct aio_lio *lio = req->lio;

	req->error = res < 0 ? (int)-res : 0;
	req->state = AIO_REQ_DONE;
	aio_cb_publish(req->cb, req->error, res < 0 ? -1 : (ssize_t)res);
	aio_notes_add(notes, &req->sev, req->pid);
	if (lio && --lio->nreq == 0 && lio->notify)
		aio_notes_add(notes, &lio->sev, lio->pid);
	if (lio && --lio->refs == 0)
		free(lio);
	req->lio = NULL;
	if (req->prev)
		req->prev->next = req->next;
	else
		q->head = req->next;
	if (req->next)
		req->next->prev = req->prev;
	else
		q->tail = req->prev;
	q->n--;
	req->q = NULL;
	aio.inflight--;
	if (q->ndeferred) {
		/* Starting may complete requests of q right here: keep q. */
		q->hold++;
		start_ready_locked(q, notes);
		q->hold--;
	}
	aio_fdq_put_locked(q);
	wake_all();
	req_unref_locked(req);
}

/* Starts every queued request of q that nothing earlier holds back. */
static void start_ready_locked(struct aio_fdq *q, struct aio_notes *notes)
{
	bool read_before = false, write_before = false, any = false;

	for (struct aio_req *req = q->head, *next; req; req = next) {
		next = req->next;
		if (req->state == AIO_REQ_QUEUED && !req_blocked(req, read_before, write_before)) {
			q->ndeferred--;
			if (aio_req_prep_locked(req) < 0) {
				aio_req_finish_locked(req, -EAGAIN, notes);
				continue;
			}
			any = true;
		}
		read_before |= req->kind == AIO_KIND_READ;
		write_before |= req->kind == AIO_KIND_WRITE;
	}
	if (any)
		acall_submit(aio.ring);
}

static void op_done_locked(struct aio_req *req, int64_t res, struct aio_notes *notes)
{
	req->op = NULL;
	if (res == -EINTR && req->cancel_asked)
		res = -ECANCELED;       /* a worker interrupted by the cancel */
	aio_req_finish_locked(req, res, notes);
}

/*
 * acall's completion callback: on a worker, the reaper, or a thread in
 * aio_wait_seq(), which take aio.lock; or on a thread that holds it
 * already, inside the acall_submit() or acall_cancel() it called (the
 * re-entry internal.h describes): then straight to the _locked variant,
 * and its notifications wait for that thread's aio_unlock().
 */
static void op_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct aio_notes notes = { .n = 0 };
	bool held = aio_lock_held;

	if (!held)
		aio_lock();
	op_done_locked(arg, acall_op_result(op), &notes);
	if (!held)
		aio_unlock();
	aio_notes_send(&notes);
}

/* Errors POSIX lets a submission report at once. A bad or wrongly opened
 * fd is not one of them for reads and writes: glibc reports their EBADF
 * through aio_error() (and aio_fsync's at once), and programs and LTP
 * count on that. */
static int check_args(const struct aiocb *cb, enum aio_kind kind)
{
	if (kind != AIO_KIND_READ && kind != AIO_KIND_WRITE)
		return 0;       /* aio_fsync reads aio_fildes and the sigevent only */
	if (cb->aio_reqprio < 0 || cb->aio_reqprio > AIO_PRIO_DELTA_MAX)
		return -EINVAL;
	if (cb->aio_nbytes > SSIZE_MAX)
		return -EINVAL;
	return 0;
}

static int check_fd(const struct aiocb *cb, enum aio_kind kind, const struct aio_fdq *q)
{
	if (kind == AIO_KIND_READ ? q->accmode == O_WRONLY : q->accmode == O_RDONLY)
		return -EBADF;
	if ((kind == AIO_KIND_READ || kind == AIO_KIND_WRITE) && !q->stream && cb->aio_offset < 0)
		return -EINVAL;
	return 0;
}

/* A request that failed before it could start: accepted, and completed
 * with err at once (result, notification once the lock is released,
 * nothing in flight). */
static void submit_failed_late_locked(struct aiocb *cb, int err, const struct sigevent *sev)
{
	struct aio_notes notes = { .n = 0 };

	memcpy(cb->__glibc_reserved, AIO_CB_MAGIC, sizeof(AIO_CB_MAGIC));
	aio_cb_publish(cb, -err, -1);
	wake_all();
	aio_notes_add(&notes, sev, aio_getpid());
	aio_notes_send(&notes);
}

static struct aio_req *req_new(struct aiocb *cb, enum aio_kind kind, struct aio_fdq *q,
			       const struct sigevent *sev)
{
	struct aio_req *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->cb = cb;
	req->kind = (uint8_t)kind;
	req->refs = 1;
	req->pid = aio_getpid();
	req->sev = *sev;
	req->q = q;
	if (req_needs_order(req, q)) {
		bool rb = false, wb = false;

		for (struct aio_req *o = q->head; o; o = o->next) {
			rb |= o->kind == AIO_KIND_READ;
			wb |= o->kind == AIO_KIND_WRITE;
		}
		req->deferred = req_blocked(req, rb, wb);
	}
	return req;
}

static void req_enqueue_locked(struct aio_req *req, struct aio_lio *lio)
{
	struct aio_fdq *q = req->q;

	req->prev = q->tail;
	if (q->tail)
		q->tail->next = req;
	else
		q->head = req;
	q->tail = req;
	q->n++;
	q->ndeferred += req->deferred;
	aio.inflight++;
	if (lio) {
		req->lio = lio;
		lio->nreq++;
		lio->refs++;
	}
	memcpy(req->cb->__glibc_reserved, AIO_CB_MAGIC, sizeof(AIO_CB_MAGIC));
	aio_cb_publish(req->cb, EINPROGRESS, 0);
}

/* Submits req's prepared op; on failure req completes with the error
 * (no notification: the caller reports it). 0 or -EAGAIN. */
int aio_req_submit_locked(struct aio_req *req)
{
	struct aio_notes notes = { .n = 0 };
	int r;

	/* The op may complete (and req be freed) before this returns. */
	r = acall_submit(aio.ring);
	if (r >= 0)
		return 0;
	acall_op_done(aio.ring, req->op);
	req->op = NULL;
	req->sev.sigev_notify = SIGEV_NONE;
	aio_req_finish_locked(req, r, &notes);
	return -EAGAIN;
}

int aio_submit_locked(struct aiocb *cb, enum aio_kind kind, struct aio_lio *lio, bool batch,
		      struct aio_req **ret_inline)
{
	static const struct sigevent none = { .sigev_notify = SIGEV_NONE };
	const struct sigevent *sev = lio && !lio->individual ? &none : &cb->aio_sigevent;
	struct acall_ring *ring;
	struct aio_fdq *q;
	struct aio_req *req;
	enum aio_way way;
	int r;

	r = check_args(cb, kind);
	if (r == 0)
		r = aio_sigevent_check(sev);
	if (r == 0 && aio_ring_get_locked(&ring) < 0)
		r = -EAGAIN;
	if (r == 0 && aio.inflight >= aio.max)
		r = -EAGAIN;
	if (r < 0)
		return r;
	r = aio_fdq_get_locked(cb->aio_fildes, &q);
	if (r == 0) {
		r = check_fd(cb, kind, q);
		if (r < 0)
			aio_fdq_put_locked(q);
	}
	if (r == -EBADF && (kind == AIO_KIND_READ || kind == AIO_KIND_WRITE)) {
		submit_failed_late_locked(cb, r, sev);
		return 0;
	}
	if (r < 0)
		return r;
	req = req_new(cb, kind, q, sev);
	way = req && !req->deferred ? aio_copy_way(req, ret_inline != NULL) : AIO_WAY_ACALL;
	if (!req || (way == AIO_WAY_ACALL && !req->deferred && aio_req_prep_locked(req) < 0) ||
	    (way == AIO_WAY_DRAIN && aio_copy_schedule_locked(q) < 0)) {
		free(req);
		aio_fdq_put_locked(q);
		return -EAGAIN;
	}
	if (way == AIO_WAY_INLINE)
		req->state = AIO_REQ_RUNNING;   /* with no op: see aio_run_inline() */
	if (way == AIO_WAY_DRAIN) {
		req->state = AIO_REQ_COPY;
		q->ncopy++;
		atomic_fetch_add(&aio.ncopy, 1);
	}
	req_enqueue_locked(req, lio);
	switch (way) {
	case AIO_WAY_INLINE:
		*ret_inline = req;
		return 0;
	case AIO_WAY_DRAIN:
		if (!batch)
			aio_copy_submit_locked(q);
		return 0;
	default:
		return req->deferred || batch ? 0 : aio_req_submit_locked(req);
	}
}

pid_t aio_getpid(void)
{
	pid_t pid = atomic_load(&aio.pid);

	if (!pid) {
		pid = getpid();
		atomic_store(&aio.pid, pid);
	}
	return pid;
}

int aio_wait_seq(uint32_t seq, const struct timespec *timeout)
{
	struct acall_ring *ring = __atomic_load_n(&aio.ring, __ATOMIC_ACQUIRE);
	long r;

	/* Reaping here saves the hop through acall's reaper thread (the
	 * reaper wakes, then wakes this thread) on every completion. Not
	 * from a signal handler that interrupted pony in this thread: the
	 * callbacks would take aio.lock inside its own critical section. */
	if (ring && !aio_lock_held) {
		bool outer = aio_notes_reap_begin();

		r = acall_reap_wait(ring, &aio.seq, seq, timeout);
		aio_notes_reap_end(outer);
		return (int)r;
	}
	atomic_fetch_add(&aio.sleepers, 1);
	r = syscall(SYS_futex, &aio.seq, FUTEX_WAIT_PRIVATE, seq, timeout, NULL, 0);
	atomic_fetch_sub(&aio.sleepers, 1);
	if (r < 0 && (errno == EINTR || errno == ETIMEDOUT))
		return -errno;
	return 0;
}

/*
 * Asks one request to stop. Queued: it completes ECANCELED now. Running:
 * acall is asked to stop it, and the caller learns later whether it did;
 * a write to a stream is never interrupted (part of it may have gone out).
 * Returns 1 if req was added to wait[], 0 if its outcome is known.
 */
static int cancel_one_locked(struct aio_req *req, struct aio_notes *notes, bool *notcanceled,
			     bool *canceled)
{
	if (req->state == AIO_REQ_QUEUED || req->state == AIO_REQ_COPY) {
		if (req->state == AIO_REQ_QUEUED)
			req->q->ndeferred--;
		else
			aio_copy_unqueue_locked(req);
		*canceled = true;
		aio_req_finish_locked(req, -ECANCELED, notes);
		return 0;
	}
	/* A write to a stream that started, or a copy the submitting thread
	 * runs itself (no op), cannot be stopped. */
	if ((req->kind == AIO_KIND_WRITE && req->q->stream) || !req->op) {
		*notcanceled = true;
		return 0;
	}
	if (req->cancel_asked) {        /* another aio_cancel() waits for it */
		*notcanceled = true;
		return 0;
	}
	req->cancel_asked = true;
	req->refs++;
	acall_cancel(aio.ring, req->op);
	return 1;
}

/* Waits (bounded) for the requests asked to stop; drops their refs. */
static void cancel_wait(struct aio_req **wait, unsigned n, bool *notcanceled, bool *canceled)
{
	struct timespec now, end;
	unsigned left = n;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += AIO_CANCEL_WAIT_NS;
	end.tv_sec += end.tv_nsec / 1000000000;
	end.tv_nsec %= 1000000000;
	while (left) {
		uint32_t seq = atomic_load(&aio.seq);
		struct timespec rel;
		long ns;

		aio_lock();
		left = 0;
		for (unsigned i = 0; i < n; i++)
			left += wait[i]->state != AIO_REQ_DONE;
		aio_unlock();
		clock_gettime(CLOCK_MONOTONIC, &now);
		ns = (end.tv_sec - now.tv_sec) * 1000000000L + end.tv_nsec - now.tv_nsec;
		if (!left || ns <= 0)
			break;
		rel.tv_sec = ns / 1000000000;
		rel.tv_nsec = ns % 1000000000;
		aio_wait_seq(seq, &rel);
	}
	aio_lock();
	for (unsigned i = 0; i < n; i++) {
		if (wait[i]->state != AIO_REQ_DONE)
			*notcanceled = true;
		else if (wait[i]->error == ECANCELED)
			*canceled = true;
		req_unref_locked(wait[i]);
	}
	aio_unlock();
}

int aio_cancel_fd(int fd, struct aiocb *cb)
{
	struct aio_notes notes = { .n = 0 };
	bool notcanceled = false, canceled = false;
	struct aio_req **wait = NULL;
	unsigned nwait = 0;
	static unsigned visit;  /* protected by aio.lock */
	struct aio_fdq *q;

	aio_lock();
	q = aio_fdq_lookup_locked(fd);
	if (q)
		wait = calloc(q->n, sizeof(*wait));
	if (q && !wait) {
		aio_unlock();
		return -EAGAIN;
	}
	visit++;
	while (q) {
		struct aio_req *req = q->head;

		/* The first request not dealt with yet: the list changes
		 * under each step (completions may even run right here). */
		while (req && (req->visit == visit || (cb && req->cb != cb)))
			req = req->next;
		if (!req)
			break;
		req->visit = visit;
		/* A notification may be due per request: send as we go. */
		if (cancel_one_locked(req, &notes, &notcanceled, &canceled))
			wait[nwait++] = req;
		aio_notes_send(&notes);
		notes.n = 0;
		q = aio_fdq_lookup_locked(fd);
	}
	aio_unlock();
	if (nwait)
		cancel_wait(wait, nwait, &notcanceled, &canceled);
	free(wait);
	return notcanceled ? AIO_NOTCANCELED : canceled ? AIO_CANCELED : AIO_ALLDONE;
}

/*
 * fork: requests are not inherited (POSIX). The child has only the thread
 * that forked, so the ring is left alone (its threads are gone, its
 * io_uring mapping is shared with the parent, which still completes those
 * requests); the child's copies of their aiocbs read ECANCELED, so nobody
 * waits forever for them, and the child's first request makes a new ring.
 */
static void aio_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	aio.lock = fresh;
	for (unsigned b = 0; b < AIO_FDQ_BUCKETS; b++) {
		for (struct aio_fdq *q = aio.fdq[b], *qn; q; q = qn) {
			qn = q->hnext;
			for (struct aio_req *req = q->head, *next; req; req = next) {
				next = req->next;
				aio_cb_publish(req->cb, ECANCELED, -1);
				if (req->lio && --req->lio->refs == 0)
					free(req->lio);
				free(req);
			}
			free(q);
		}
		aio.fdq[b] = NULL;
	}
	for (unsigned i = 0; aio.ring && i < sizeof(stale_rings) / sizeof(*stale_rings); i++)
		if (!stale_rings[i]) {
			stale_rings[i] = aio.ring;
			break;
		}
	aio.ring = NULL;
	aio.inflight = 0;
	atomic_store(&aio.pid, 0);
	atomic_store(&aio.ncopy, 0);
	atomic_store(&aio.sleepers, 0);
}

/* Held across fork, so the child copies consistent lists (and then
 * starts with a fresh lock: the child has only the forking thread). */
static void aio_fork_prepare(void)
{
	pthread_mutex_lock(&aio.lock); /* raw: aio_lock_held stays as it is */
}

static void aio_fork_parent(void)
{
	pthread_mutex_unlock(&aio.lock); /* raw */
}

__attribute__((constructor)) static void aio_fork_register(void)
{
	pthread_atfork(aio_fork_prepare, aio_fork_parent, aio_fork_child);
}
