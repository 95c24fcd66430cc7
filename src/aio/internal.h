/*
 * internal.h - what the files of src/aio share: the request record behind
 * every aiocb in flight, the per-fd queues that keep POSIX's ordering rules,
 * and the one process-wide state (lock, acall ring, counters).
 *
 * libpony-aio replaces glibc's POSIX AIO without a new header: it works on
 * glibc's own struct aiocb (168 bytes on x86-64) and keeps its state in the
 * fields glibc reserves for itself (__error_code, __return_value,
 * __next_prio), so unmodified programs run on it through LD_PRELOAD.
 *
 * Locking: one mutex (aio.lock) guards every request, fd queue and counter.
 * It is held across acall_submit() and acall_cancel(), so an op record a
 * request points at can never be recycled under a canceller (the
 * completion callback clears req->op under the same lock). It is a plain
 * mutex, taken once: a function that expects it held ends in _locked, and
 * the one re-entry is explicit. acall may run a completion callback on the
 * calling thread, inside those calls (acall_submit() reaping a full
 * completion queue, acall_cancel() of an op still queued): the callback
 * sees that its thread holds the lock (aio_lock_held) and calls
 * op_done_locked() directly, as any _locked caller would. Notifications
 * gathered under the lock are sent after it is released (aio_unlock()),
 * so no handler of pony's signals runs on a thread holding it. A request's
 * aiocb result is published with a release store of __error_code, so
 * aio_error() and aio_suspend() read it without the lock.
 */
#ifndef PONY_AIO_INTERNAL_H
#define PONY_AIO_INTERNAL_H

#include <aio.h>
#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pony/acall.h"

/* What a request does. */
enum aio_kind {
	AIO_KIND_READ,
	AIO_KIND_WRITE,
	AIO_KIND_FSYNC,
	AIO_KIND_FDATASYNC,
};

enum aio_req_state {
	AIO_REQ_QUEUED,         /* held back by an ordering rule, not in acall */
	AIO_REQ_COPY,           /* a buffered write waiting for a drainer (copy.c) */
	AIO_REQ_RUNNING,        /* submitted to acall, req->op is its record; or,
				 * with no op, copied by a pony thread now */
	AIO_REQ_DONE,           /* result published in the aiocb */
};

struct aio_fdq;
struct aio_lio;

/*
 * One submitted aiocb. Lives from submission until its result is published
 * and nobody holds a reference (refs: 1 for the flight, 1 per canceller
 * waiting for its outcome). Every field is protected by aio.lock.
 */
struct aio_req {
	struct aiocb *cb;
	struct acall_op *op;            /* RUNNING only; NULL once completed */
	struct aio_fdq *q;              /* NULL once completed */
	struct aio_req *prev, *next;    /* in q, in submission order */
	struct aio_lio *lio;            /* lio_listio group, or NULL */
	struct sigevent sev;            /* the notification, copied at submission */
	pid_t pid;                      /* the submitter, for SIGEV_SIGNAL */
	uint8_t kind;                   /* enum aio_kind */
	uint8_t state;                  /* enum aio_req_state */
	bool deferred;                  /* must wait for earlier requests (below) */
	bool cancel_asked;
	unsigned visit;                 /* the aio_cancel() call that saw it last */
	unsigned refs;
	int error;                      /* the published aio_error() value */
};

/*
 * Requests on one file descriptor, in submission order. POSIX lets requests
 * on one fd run concurrently, except: writes to an O_APPEND fd and every
 * request on a stream (pipe, socket, tty) run in submission order within
 * their direction, and an fsync waits for every write before it. A deferred
 * request starts when no earlier request it depends on is still pending.
 */
struct aio_fdq {
	int fd;
	bool stream;                    /* not seekable: pipe, socket, tty */
	bool append;                    /* O_APPEND */
	bool direct;                    /* O_DIRECT */
	int accmode;                    /* O_RDONLY/O_WRONLY/O_RDWR */
	unsigned n, ndeferred;
	unsigned ncopy;                 /* requests in AIO_REQ_COPY */
	bool draining;                  /* a thread copies them now */
	struct acall_op *drain_op;      /* a worker's drainer, submitted */
	unsigned hold;                  /* kept even when empty, while > 0 */
	struct aio_req *head, *tail;
	struct aio_fdq *hnext;          /* hash chain */
};

/* A lio_listio() call's group: notified (or its LIO_WAIT caller woken)
 * when the last of its requests completes. */
struct aio_lio {
	unsigned nreq;                  /* requests not completed yet */
	unsigned refs;                  /* nreq + 1 while lio_listio() runs */
	bool notify;                    /* LIO_NOWAIT with a sigevent */
	bool individual;                /* each aiocb's own sigevent too */
	struct sigevent sev;
	pid_t pid;
};

/* In __glibc_reserved from submission until aio_return(): tells an aiocb
 * pony knows from one it never saw or already gave back. */
#define AIO_CB_MAGIC "pony-aio"

/* Notifications gathered under the lock, sent after it is released. */
struct aio_notes {
	unsigned n;
	struct {
		struct sigevent sev;
		pid_t pid;
	} v[2];
};

/* How a request runs (copy.c). */
enum aio_way {
	AIO_WAY_ACALL,                  /* an acall op (io_uring or a worker) */
	AIO_WAY_INLINE,                 /* aio_run_inline() by the submitter */
	AIO_WAY_DRAIN,                  /* AIO_REQ_COPY until a drainer copies it */
};

/* Buffered copies from this size on run on acall's workers. */
#define AIO_COPY_SMALL 65536

#define AIO_FDQ_BUCKETS 256
#define AIO_MAX_DEFAULT 4096            /* requests in flight; PONY_AIO_MAX */

struct aio_state {
	pthread_mutex_t lock;           /* plain: see the top of the file */
	struct acall_ring *ring;        /* created on first use, per process */
	struct aio_fdq *fdq[AIO_FDQ_BUCKETS];
	unsigned inflight, max;
	_Atomic unsigned ncopy;         /* requests in AIO_REQ_COPY, all fds */
	_Atomic uint32_t seq;           /* futex word, bumped by every completion */
	_Atomic unsigned sleepers;      /* threads in a plain futex wait on seq */
	_Atomic pid_t pid;              /* getpid(), cached; 0: not yet (fork) */
};

extern struct aio_state aio;

/* Whether this thread holds aio.lock (set before taking it, cleared after
 * releasing it). Also true when a signal handler interrupted pony in this
 * thread: aio_suspend(), async-signal-safe, then only reads aiocbs (see
 * aio_copy_help() and aio_wait_seq()). */
extern _Thread_local bool aio_lock_held;

static inline void aio_lock(void)
{
	/* Taken twice by one thread is a deadlock: the caller wanted the
	 * _locked variant. */
	assert(!aio_lock_held);
	aio_lock_held = true;
	pthread_mutex_lock(&aio.lock);
}

/* Releases aio.lock, then sends the notifications deferred under it. */
void aio_unlock(void);

/* req.c: requests, fd queues, submission, completion, cancellation. */
int aio_ring_get_locked(struct acall_ring **ret_ring);
struct aio_fdq *aio_fdq_lookup_locked(int fd);
int aio_fdq_get_locked(int fd, struct aio_fdq **ret_q);
/* Submits cb as kind; lio may be NULL. 0, or -errno (nothing submitted,
 * the aiocb untouched). The caller holds aio.lock. batch: the op is only
 * prepared; the caller submits it with the thread's others (one
 * acall_submit() for a whole lio_listio() list). ret_inline: NULL, or
 * where to say that the caller must run the request with aio_run_inline()
 * (left untouched otherwise). */
int aio_submit_locked(struct aiocb *cb, enum aio_kind kind, struct aio_lio *lio, bool batch,
		      struct aio_req **ret_inline);
void aio_fdq_put_locked(struct aio_fdq *q);
/* Prepares req's acall op / submits it (on failure req completes with the
 * error, unnotified): 0 or -EAGAIN. */
int aio_req_prep_locked(struct aio_req *req);
int aio_req_submit_locked(struct aio_req *req);
/* Publishes req's result (a count or -errno), gathers its notifications,
 * starts what waited for it and lets it go. */
void aio_req_finish_locked(struct aio_req *req, int64_t res, struct aio_notes *notes);

/* Between the two, this thread's completions are published without waking
 * waiters; aio_wake_release() wakes them once for all. */
void aio_wake_hold(void);
void aio_wake_release(void);
/* Asks every request of fd (cb NULL) or cb alone to stop: AIO_CANCELED,
 * AIO_NOTCANCELED, AIO_ALLDONE, or -errno. */
int aio_cancel_fd(int fd, struct aiocb *cb);
/* Sleeps until aio.seq moves from seq or timeout (NULL: none, relative)
 * passes: 0, -ETIMEDOUT or -EINTR. The thread reaps the ring's io_uring
 * itself meanwhile (acall_reap_wait()) unless it holds aio.lock (a signal
 * handler interrupted pony). */
int aio_wait_seq(uint32_t seq, const struct timespec *timeout);
/* getpid(), without a system call each time. */
pid_t aio_getpid(void);

/* copy.c: small buffered copies. */
enum aio_way aio_copy_way(const struct aio_req *req, bool can_inline);
/* A read the submitter tries itself (ret_inline of aio_submit_locked()),
 * after dropping aio.lock. */
void aio_run_inline(struct aio_req *req);
/* Makes sure a worker will drain q (its op is prepared, not submitted:
 * aio_copy_submit_locked() or the caller's batch submits it). */
int aio_copy_schedule_locked(struct aio_fdq *q);
void aio_copy_submit_locked(struct aio_fdq *q);
/* req leaves AIO_REQ_COPY without being copied (cancelled). */
void aio_copy_unqueue_locked(struct aio_req *req);
/* A thread about to sleep copies waiting writes itself; whether it did. */
bool aio_copy_help(void);

/* notify.c: sigevents. */
int aio_sigevent_check(const struct sigevent *sev);
/* Delivers sev (SIGEV_NONE: nothing); for a request, si_value is the
 * application's and si_code SI_ASYNCIO. Never blocks. */
void aio_notify(const struct sigevent *sev, pid_t pid);
void aio_notes_add(struct aio_notes *n, const struct sigevent *sev, pid_t pid);
/* Sends n's notifications: at once, or, under aio.lock or while this
 * thread reaps in aio_wait_seq(), once it left those. */
void aio_notes_send(const struct aio_notes *n);
/* Sends what waited, unless this thread still reaps (aio_unlock()). */
void aio_notes_flush(void);
/* Around acall_reap_wait(): notifications wait till the outermost end. */
bool aio_notes_reap_begin(void);
void aio_notes_reap_end(bool outer);

/* The aiocb fields pony uses, with the right atomicity. */
static inline int aio_cb_error(const struct aiocb *cb)
{
	return __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE);
}

static inline void aio_cb_publish(struct aiocb *cb, int error, ssize_t ret)
{
	cb->__return_value = ret;
	__atomic_store_n(&cb->__error_code, error, __ATOMIC_RELEASE);
}

#endif
