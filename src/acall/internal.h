/*
 * internal.h - what the files of src/acall share: the op record, the ring,
 * the worker pool and the functions that pass ops between them.
 *
 * Locks, in the order they may nest: ring->lock (pool, pending, done list,
 * waiters, in-flight count, barrier queue) is never held while calling into
 * the kernel's io_uring; sq_lock guards SQ filling and io_uring_submit;
 * cq_lock is held by the one thread reaping the CQ (the "leader"), possibly
 * while it blocks in io_uring_enter; wq.lock guards the workers' queue.
 * cq_lock -> ring->lock and cq_lock -> sq_lock are allowed; nothing takes
 * cq_lock while holding another of these.
 */
#ifndef PONY_ACALL_INTERNAL_H
#define PONY_ACALL_INTERNAL_H

#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "pony/acall.h"

enum acall_op_state {
	OP_FREE = 0,            /* in the pool's free list */
	OP_PREP,                /* lent out, maybe prepared, not submitted */
	OP_INFLIGHT,            /* submitted, not completed */
	OP_DONE,                /* completed, result valid, not given back */
};

struct acall_waiter;
struct acall_exec;

struct acall_op {
	/* Set by the prep and per-op setters; read by the executing path. */
	uint8_t opcode;
	uint8_t path;                   /* ACALL_PATH_URING/_WORKERS, at submit */
	uint16_t flags;                 /* ACALL_F_* */
	int fd, fd2;
	void *addr;                     /* buf, iov, path, statx buf, fn */
	const void *addr2;              /* second path, xattr name, CALL arg */
	void *addr3;                    /* xattr value, symlink target */
	uint64_t len, off;
	uint32_t u1, u2;                /* flags, mode, mask, advice, uid/gid */
	void *data;
	acall_callback_fn cb;
	void *cb_arg;
	const struct acall_cred *cred;

	/* Completion. */
	int64_t result;
	_Atomic uint32_t state;         /* enum acall_op_state */
	bool on_done_list;              /* protected by ring->lock */
	bool deferred;                  /* held back by a barrier; ring->lock */
	_Atomic bool cancel;            /* acall_cancel() asked; the worker path
					 * checks it before it starts the op */
	uint16_t personality;           /* io_uring personality for cred, 0: none */
	struct acall_waiter *waiter;    /* acall_op_wait()er; protected by ring->lock */
	bool waited;                    /* acall_run(): never on the done list */
	struct acall_exec *_Atomic exec; /* the thread running it on the worker path */

	/* Lists: pending/done (prev/next), a chain of linked ops (link). */
	struct acall_op *prev, *next;
	struct acall_op *link;
	const void *owner;              /* the thread that took it (acall_get_op) */
	struct acall_ring *ring;
};

/* A doubly linked list of ops, through op->prev/next. */
struct acall_list {
	struct acall_op *head, *tail;
	unsigned n;
};

/* A thread sleeping in the ring: for one op (op != NULL) or for ring-wide
 * completions. Lives on the sleeper's stack; registered in ring->waiters. */
struct acall_waiter {
	_Atomic uint32_t word;          /* futex: 0 awake, 1 woken, 2 asleep */
	struct acall_op *op;
	struct acall_waiter *prev, *next;
};

/* A thread running ops on the worker path (a worker). exec_lock orders
 * acall_cancel()'s signal against the op leaving the thread. */
struct acall_exec {
	pthread_mutex_t lock;
	pid_t tid;
	struct acall_op *cur;           /* the op it runs; protected by lock */
	bool cred_active;               /* fsuid/fsgid/groups are switched */
	struct acall_cred cred;         /* the ones switched to, a copy */
};

struct acall_worker {
	struct acall_ring *ring;
	pthread_t thread;
	struct acall_exec ex;
};

struct acall_workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct acall_op *head, *tail;   /* chains of ops, through op->next */
	unsigned queued;
	_Atomic unsigned nqueued;       /* queued, readable without the lock */
	unsigned idle;
	bool stop;
	unsigned n;                     /* started */
	struct acall_worker *w;
};

#define ACALL_PERSONALITY_MAX 16

struct acall_ring {
	pthread_mutex_t lock;
	struct acall_list pending;      /* prepared, not submitted (all threads) */
	struct acall_list done;         /* ring-wide completions */
	struct acall_op *free_ops;      /* through op->next */
	void **slabs;                   /* op storage, freed with the ring */
	unsigned nslabs;
	unsigned inflight;              /* submitted, not completed */
	_Atomic unsigned ninflight;     /* inflight, readable without the lock */
	unsigned running;               /* of those, started (not deferred) */
	struct acall_list deferred;     /* held back by a barrier */
	bool barrier_running;
	_Atomic unsigned ndone;         /* done.n, readable without the lock */
	struct acall_waiter *waiters;   /* sleepers */
	int eventfd;                    /* -1 until acall_ring_eventfd() */
	_Atomic bool stopping;

	/* io_uring (has_uring false: none at all). */
	bool has_uring;
	struct io_uring uring;
	pthread_mutex_t sq_lock;
	pthread_mutex_t cq_lock;
	_Atomic unsigned uring_inflight;
	_Atomic unsigned uring_cb_inflight; /* with a callback: the reaper's job */
	_Atomic bool leader_sleeping;   /* a leader blocks in io_uring_enter */
	_Atomic bool leader_ringwide;   /* ... and it waits for ring-wide ones */
	/* acall_reap_wait(): its calls so far (the reaper stands aside while
	 * this moves) and the callers sleeping on their own word because
	 * another thread holds the CQ (the holder wakes them as it leaves). */
	_Atomic unsigned ext_gen;
	_Atomic unsigned ext_busy;
	_Atomic uint32_t *_Atomic ext_word; /* the word they sleep on */
	pthread_t reaper;
	bool reaper_started;
	_Atomic uint32_t reaper_word;
	_Atomic bool reaper_idle;       /* asleep until callback ops are out */
	bool has_dontcache;
	struct {
		struct acall_cred cred;
		int id;
	} personalities[ACALL_PERSONALITY_MAX];
	unsigned npersonalities;

	struct acall_workers wq;
	uint8_t route[ACALL_OP__MAX];   /* enum acall_path per opcode */
};

/* route.c */
enum acall_path acall_route_resolve(enum acall_path path);
int acall_route_init(struct acall_ring *ring, enum acall_path path);
int acall_route_uring_opcode(unsigned opcode);
bool acall_route_quick(unsigned opcode);

/* ring.c: completion. Ops with their result set; called by workers and by
 * whoever reaps the CQ, without locks held. */
void acall_complete(struct acall_ring *ring, struct acall_op **ops, unsigned n);
/* Submits one prepared op alone (acall_run()). */
void acall_submit_op(struct acall_ring *ring, struct acall_op *op);
void acall_list_remove(struct acall_list *l, struct acall_op *op);
void acall_list_append(struct acall_list *l, struct acall_op *op);
void acall_wake(struct acall_waiter *w);
void acall_futex_wait(_Atomic uint32_t *word, uint32_t val, long timeout_ns);
void acall_futex_wake(_Atomic uint32_t *word, int n);

/* uring.c */
int acall_uring_init(struct acall_ring *ring, unsigned entries);
void acall_uring_exit(struct acall_ring *ring);
/* Submits chains (through op->next, each linked through op->link). */
int acall_uring_submit(struct acall_ring *ring, struct acall_op *chains);
/* Reaps the CQ; the caller holds cq_lock. wait: block for one CQE first. */
unsigned acall_uring_reap(struct acall_ring *ring, bool wait);
/* Unless *word moved from val, blocks in io_uring_enter until a CQE is
 * there, timeout (relative; NULL: none) passes (-ETIMEDOUT) or a signal
 * handler runs (-EINTR); 0 otherwise. Reaps nothing; the caller holds
 * cq_lock. -EOPNOTSUPP without IORING_FEAT_EXT_ARG. */
int acall_uring_wait_timed(struct acall_ring *ring, _Atomic uint32_t *word, uint32_t val,
			   const struct timespec *timeout);
void acall_uring_kick(struct acall_ring *ring);
/* Every holder of cq_lock leaves through here: it wakes the
 * acall_reap_wait() callers that found the CQ busy, so one takes it. */
void acall_cq_unlock(struct acall_ring *ring);
void acall_uring_cancel(struct acall_ring *ring, struct acall_op *op);
/* The registered personality for cred (registered on first use), or -errno. */
int acall_uring_personality(struct acall_ring *ring, const struct acall_cred *cred);
void acall_uring_cancel_all(struct acall_ring *ring);
int acall_reaper_start(struct acall_ring *ring);
void acall_reaper_stop(struct acall_ring *ring);

/* worker.c */
int acall_workers_start(struct acall_ring *ring, unsigned n);
void acall_workers_stop(struct acall_ring *ring);
void acall_workers_queue(struct acall_ring *ring, struct acall_op *chains, unsigned n);
int acall_workers_cancel(struct acall_ring *ring, struct acall_op *op);
void acall_workers_cancel_all(struct acall_ring *ring);
/* Runs queued quick chains on the calling thread; whether it ran any. */
bool acall_workers_help(struct acall_ring *ring);
/* Runs op on the calling thread, credentials and all; sets its result. */
void acall_workers_run_here(struct acall_ring *ring, struct acall_op *op);

/* exec.c: runs one op synchronously on the calling thread. */
int64_t acall_exec_op(struct acall_ring *ring, struct acall_exec *ex, struct acall_op *op);
void acall_exec_restore_cred(struct acall_exec *ex);
int acall_cred_switch(const struct acall_cred *cred);
int acall_cred_restore(void);
int acall_signal_init(void);
int acall_signal_number(void);
bool acall_probe_dontcache(void);

#endif
