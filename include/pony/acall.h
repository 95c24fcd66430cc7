/*
 * include/pony/acall.h - asynchronous calls: every blocking file operation,
 * submitted now and completed later, through one io_uring and a pool of
 * pony's own worker threads (the acall() of the 2009 LSF workshop).
 *
 * The shape is liburing's: take an op record from the ring, prepare it with
 * one acall_prep_*() call, set its data/flags/callback/credentials, submit a
 * batch, then reap completions. Which path runs an op (io_uring or workers)
 * is decided per opcode by one routing table (src/acall/route.c), so callers
 * never care.
 *
 * Threads: a ring may be used from any number of threads at once. Ops are
 * owned by the thread that took them until submitted: acall_submit() submits
 * the ops the *calling thread* prepared on this ring, so two threads
 * preparing at the same time never submit each other's half-prepared ops.
 *
 * Ownership: an op record belongs to the ring's pool; acall_get_op() lends it
 * to the caller, acall_op_done() gives it back. Everything an op points at
 * (buffers, iovecs, paths, the statx buffer, the credentials) stays the
 * caller's and must stay valid until the op completes, and not a moment
 * longer: after completion the ring never touches it again.
 *
 * Results: acall_op_result() is the syscall's return value (a count, an fd,
 * 0) or -errno, exactly as the kernel gives it; CALL ops return what their
 * function returned.
 */
#ifndef PONY_ACALL_H
#define PONY_ACALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct statx;
struct acall_ring;                      /* opaque: fields live in src/acall/ */
struct acall_op;                        /* opaque: one record per operation */

/* Every operation acall runs. Values are stable (used in --json output). */
enum acall_opcode {
	ACALL_OP_NOP = 0,
	ACALL_OP_READ,
	ACALL_OP_WRITE,
	ACALL_OP_READV,
	ACALL_OP_WRITEV,
	ACALL_OP_FSYNC,
	ACALL_OP_FDATASYNC,
	ACALL_OP_SYNC_FILE_RANGE,
	ACALL_OP_OPENAT,
	ACALL_OP_CLOSE,
	ACALL_OP_STATX,
	ACALL_OP_RENAMEAT2,
	ACALL_OP_UNLINKAT,
	ACALL_OP_MKDIRAT,
	ACALL_OP_LINKAT,
	ACALL_OP_SYMLINKAT,
	ACALL_OP_FALLOCATE,
	ACALL_OP_FADVISE,
	ACALL_OP_FTRUNCATE,
	ACALL_OP_GETDENTS64,
	ACALL_OP_FCHMOD,
	ACALL_OP_FCHOWN,
	ACALL_OP_SETXATTR,
	ACALL_OP_GETXATTR,
	ACALL_OP_CALL,
	ACALL_OP__MAX,                  /* not an op; raw opcodes >= this fail -EINVAL */
};

/* Where ops run. */
enum acall_path {
	ACALL_PATH_AUTO = 0,    /* the routing table; env PONY_ACALL_PATH may override */
	ACALL_PATH_URING,       /* every op the kernel's io_uring has goes there */
	ACALL_PATH_WORKERS,     /* everything on pony's worker threads */
};

/* Op flags (acall_op_set_flags). */
enum {
	/* The next op this thread prepared starts only after this one
	 * succeeded (a full count for reads/writes); if this one fails, the
	 * rest of the chain completes with -ECANCELED. */
	ACALL_F_LINK = 1u << 0,
	/* Starts only after every op submitted before it on this ring has
	 * completed; ops submitted after it start after it completed. */
	ACALL_F_BARRIER = 1u << 1,
	/* Read/write without leaving the data in the page cache:
	 * RWF_DONTCACHE where the kernel has it, else POSIX_FADV_DONTNEED
	 * on the range after the I/O. */
	ACALL_F_NOCACHE = 1u << 2,
};

struct acall_ring_params {
	unsigned entries;       /* io_uring SQ size, ops per kernel batch; 0: 256 */
	unsigned workers;       /* worker threads; 0: one per online CPU (at least 2) */
	enum acall_path path;   /* ACALL_PATH_AUTO unless a test forces a path */
	unsigned flags;         /* none yet; must be 0 */
};

/*
 * The credentials an op runs with (filesystem ids and supplementary groups,
 * as a file server acting for a user needs). Needs CAP_SETUID/CAP_SETGID in
 * the process. Stays the caller's until the op completes.
 */
#define ACALL_CRED_MAX_GROUPS 32
struct acall_cred {
	uid_t fsuid;
	gid_t fsgid;
	unsigned ngroups;       /* <= ACALL_CRED_MAX_GROUPS */
	gid_t groups[ACALL_CRED_MAX_GROUPS];
};

/* Completion callback: runs on the thread that completed the op (a worker or
 * a thread reaping the io_uring); keep it short and never block in it. The
 * op goes back to the pool when the callback returns: do not
 * acall_op_done() it. */
typedef void (*acall_callback_fn)(struct acall_ring *ring, struct acall_op *op, void *arg);

/* A CALL op's function: runs on a worker; its return value is the result. */
typedef int64_t (*acall_call_fn)(void *arg);

/*
 * Ring lifetime. params may be NULL (all defaults). On 0, *ret_ring is the
 * caller's: release it with acall_ring_free(). If io_uring is unavailable,
 * the ring runs everything on workers (ACALL_PATH_URING then fails -ENOSYS).
 * PONY_ACALL_PATH=uring|workers|auto in the environment overrides
 * ACALL_PATH_AUTO.
 */
int acall_ring_new(const struct acall_ring_params *params, struct acall_ring **ret_ring);
/* Cancels and waits for ops in flight (their callbacks still run), frees
 * every op record; pointers to them die with it. NULL: does nothing. */
void acall_ring_free(struct acall_ring *ring);
static inline void acall_ring_freep(struct acall_ring **ring)
{
	acall_ring_free(*ring);
}

/* Whether the ring has an io_uring at all. */
bool acall_ring_has_uring(const struct acall_ring *ring);
/* The path an opcode takes on this ring (ACALL_PATH_URING or _WORKERS). */
enum acall_path acall_ring_route(const struct acall_ring *ring, unsigned opcode);
/* An eventfd that is readable while ring-wide completions wait for
 * acall_peek(); created on first call, owned by the ring. -errno on error. */
int acall_ring_eventfd(struct acall_ring *ring);

/* "read", "statx", ...; "?" for an unknown opcode. */
const char *acall_opcode_name(unsigned opcode);
/* The opcode named name, or -EINVAL. */
int acall_opcode_from_name(const char *name);

/* Lends an op record from the ring's pool (grown as needed, never per op).
 * NULL only when memory ran out. */
struct acall_op *acall_get_op(struct acall_ring *ring);

/* Up to n records at once (one lock for all): returns how many. */
unsigned acall_get_ops(struct acall_ring *ring, struct acall_op **ops, unsigned n);

/* One prep per op: each sets the opcode and its arguments. */
void acall_prep_nop(struct acall_op *op);
void acall_prep_read(struct acall_op *op, int fd, void *buf, size_t len, uint64_t off);
void acall_prep_write(struct acall_op *op, int fd, const void *buf, size_t len, uint64_t off);
void acall_prep_readv(struct acall_op *op, int fd, const struct iovec *iov, int iovcnt,
		      uint64_t off);
void acall_prep_writev(struct acall_op *op, int fd, const struct iovec *iov, int iovcnt,
		       uint64_t off);
void acall_prep_fsync(struct acall_op *op, int fd);
void acall_prep_fdatasync(struct acall_op *op, int fd);
void acall_prep_sync_file_range(struct acall_op *op, int fd, uint64_t off, uint64_t len,
				unsigned flags);
void acall_prep_openat(struct acall_op *op, int dfd, const char *path, int flags, mode_t mode);
void acall_prep_close(struct acall_op *op, int fd);
void acall_prep_statx(struct acall_op *op, int dfd, const char *path, int flags,
		      unsigned mask, struct statx *buf);
void acall_prep_renameat2(struct acall_op *op, int olddfd, const char *oldpath, int newdfd,
			  const char *newpath, unsigned flags);
void acall_prep_unlinkat(struct acall_op *op, int dfd, const char *path, int flags);
void acall_prep_mkdirat(struct acall_op *op, int dfd, const char *path, mode_t mode);
void acall_prep_linkat(struct acall_op *op, int olddfd, const char *oldpath, int newdfd,
		       const char *newpath, int flags);
void acall_prep_symlinkat(struct acall_op *op, const char *target, int newdfd,
			  const char *linkpath);
void acall_prep_fallocate(struct acall_op *op, int fd, int mode, uint64_t off, uint64_t len);
void acall_prep_fadvise(struct acall_op *op, int fd, uint64_t off, uint64_t len, int advice);
void acall_prep_ftruncate(struct acall_op *op, int fd, uint64_t len);
void acall_prep_getdents64(struct acall_op *op, int fd, void *buf, size_t len);
void acall_prep_fchmod(struct acall_op *op, int fd, mode_t mode);
void acall_prep_fchown(struct acall_op *op, int fd, uid_t uid, gid_t gid);
void acall_prep_setxattr(struct acall_op *op, const char *path, const char *name,
			 const void *value, size_t size, int flags);
void acall_prep_getxattr(struct acall_op *op, const char *path, const char *name,
			 void *value, size_t size);
void acall_prep_call(struct acall_op *op, acall_call_fn fn, void *arg);
/* Any opcode with the common fd/addr/len/off arguments (as read); mostly
 * for tests and tools. An opcode acall does not know completes -EINVAL. */
void acall_prep_raw(struct acall_op *op, unsigned opcode, int fd, void *addr, uint64_t len,
		    uint64_t off);

/* Per-op settings; call after the prep (a prep resets them). */
void acall_op_set_data(struct acall_op *op, void *data);
void acall_op_set_flags(struct acall_op *op, unsigned flags);     /* ACALL_F_* */
void acall_op_set_callback(struct acall_op *op, acall_callback_fn fn, void *arg);
void acall_op_set_cred(struct acall_op *op, const struct acall_cred *cred);

void *acall_op_data(const struct acall_op *op);
unsigned acall_op_opcode(const struct acall_op *op);
/* Valid once the op completed: a count/fd/0, or -errno. */
int64_t acall_op_result(const struct acall_op *op);

/* Submits every op the calling thread prepared on this ring, in one batch.
 * Returns how many, or -errno (then none was submitted). */
int acall_submit(struct acall_ring *ring);

/*
 * Ring-wide completions: ops without a callback that nobody waits for with
 * acall_op_wait(). acall_wait() blocks until one is there; acall_peek()
 * returns -EAGAIN instead of blocking. On 0, *ret_op is completed and the
 * caller's: read its result, then acall_op_done() it.
 */
int acall_wait(struct acall_ring *ring, struct acall_op **ret_op);
int acall_peek(struct acall_ring *ring, struct acall_op **ret_op);
/* Up to max completed ops into ops[]; waits for at least min (0: none).
 * Returns how many, or -errno. */
int acall_wait_batch(struct acall_ring *ring, struct acall_op **ops, unsigned max,
		     unsigned min);

/* Waits for this submitted op only (many threads may each wait for their
 * own ops at once). Returns its result; the op stays the caller's until
 * acall_op_done(). */
int64_t acall_op_wait(struct acall_ring *ring, struct acall_op *op);

/* Gives the record back to the pool: a completed op, or a prepared op that
 * was never submitted. NULL: does nothing. */
void acall_op_done(struct acall_ring *ring, struct acall_op *op);

/* acall_op_done() for n records at once (one lock for all); NULLs skipped. */
void acall_op_done_batch(struct acall_ring *ring, struct acall_op **ops, unsigned n);

/* Submits op alone (not the thread's other prepared ops), waits for it,
 * gives the record back and returns its result. */
int64_t acall_run(struct acall_ring *ring, struct acall_op *op);

/*
 * Completion on the caller's thread, for a layer that keeps its own
 * completion word (libpony-aio's aio_suspend()): a futex word that the
 * layer's callbacks move (then call acall_reap_wake()) whenever something
 * a waiter may wait for completes. One word per ring.
 *
 * acall_reap_wait() completes what io_uring holds on this thread
 * (callbacks run here) and, unless *word moved from val, sleeps in
 * io_uring_enter until a completion, a kick from acall_reap_wake(), the
 * relative timeout (NULL: none; -ETIMEDOUT) or a signal handler (-EINTR).
 * While another thread holds the ring's completion queue, it sleeps on
 * word instead; that thread moves word and wakes it as it leaves. So
 * nothing is lost and, while callers keep coming, the ring's reaper thread
 * stands aside: no thread switch per completion. Returns 0: look again at
 * what you wait for. The caller holds no lock its callbacks take.
 * A signal handler may call it while its thread sleeps in it.
 */
int acall_reap_wait(struct acall_ring *ring, _Atomic uint32_t *word, uint32_t val,
		    const struct timespec *timeout);
/* After moving the word: wakes the threads sleeping in acall_reap_wait()
 * (on the word or in the CQ); the caller need not wake the word itself. */
void acall_reap_wake(struct acall_ring *ring);

/*
 * Asks a submitted op to stop. An op blocked in the kernel (a read from an
 * empty pipe) completes with -ECANCELED or -EINTR; an op that already
 * completed, or that cannot be stopped (a regular file read in progress),
 * completes normally. Returns 0 when the request was delivered, -ENOENT if
 * the op was not in flight, -EALREADY if it kept running. The op must still
 * be waited for and given back as usual.
 */
int acall_cancel(struct acall_ring *ring, struct acall_op *op);

#endif
