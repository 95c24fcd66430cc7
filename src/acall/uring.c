/*
 * uring.c - the io_uring path: filling SQEs (by hand where liburing 2.3 has
 * no helper), reaping CQEs in batches, cancelling, registered personalities
 * for credentials, and the reaper thread that completes callback ops when
 * no caller is waiting on the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif
#define REAP_BATCH 64
/* The reaper stands aside while acall_reap_wait() callers came by within
 * this long: they reap the CQ themselves (see reaper_main()).
 * PONY_ACALL_REAPER_STANDBY_US changes it (tests make it long, so that a
 * lost wake-up shows as a hang rather than a delay). */
#define REAPER_STANDBY_NS 2000000L

int acall_uring_init(struct acall_ring *ring, unsigned entries)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = entries * 4 };
	int r = io_uring_queue_init_params(entries, &ring->uring, &p);

	if (r < 0)
		return r;
	ring->has_uring = true;
	return 0;
}

void acall_uring_exit(struct acall_ring *ring)
{
	if (ring->has_uring)
		io_uring_queue_exit(&ring->uring);
}

static void fill_ftruncate(struct io_uring_sqe *sqe, int fd, uint64_t len)
{
	/* liburing 2.3 has no io_uring_prep_ftruncate(): the kernel reads the
	 * fd and the new length (in off) and wants everything else zero. */
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (uint8_t)acall_route_uring_opcode(ACALL_OP_FTRUNCATE);
	sqe->fd = fd;
	sqe->off = len;
}

static void fill_sqe(struct acall_ring *ring, struct io_uring_sqe *sqe, struct acall_op *op)
{
	switch (op->opcode) {
	case ACALL_OP_NOP:
		io_uring_prep_nop(sqe);
		break;
	case ACALL_OP_READ:
		io_uring_prep_read(sqe, op->fd, op->addr, (unsigned)op->len, op->off);
		break;
	case ACALL_OP_WRITE:
		io_uring_prep_write(sqe, op->fd, op->addr, (unsigned)op->len, op->off);
		break;
	case ACALL_OP_READV:
		io_uring_prep_readv(sqe, op->fd, op->addr, (unsigned)op->len, op->off);
		break;
	case ACALL_OP_WRITEV:
		io_uring_prep_writev(sqe, op->fd, op->addr, (unsigned)op->len, op->off);
		break;
	case ACALL_OP_FSYNC:
		io_uring_prep_fsync(sqe, op->fd, 0);
		break;
	case ACALL_OP_FDATASYNC:
		io_uring_prep_fsync(sqe, op->fd, IORING_FSYNC_DATASYNC);
		break;
	case ACALL_OP_SYNC_FILE_RANGE:
		io_uring_prep_sync_file_range(sqe, op->fd, (unsigned)op->len, op->off, (int)op->u1);
		break;
	case ACALL_OP_OPENAT:
		io_uring_prep_openat(sqe, op->fd, op->addr, (int)op->u1, op->u2);
		break;
	case ACALL_OP_CLOSE:
		io_uring_prep_close(sqe, op->fd);
		break;
	case ACALL_OP_STATX:
		io_uring_prep_statx(sqe, op->fd, op->addr, (int)op->u1, op->u2, op->addr3);
		break;
	case ACALL_OP_RENAMEAT2:
		io_uring_prep_renameat(sqe, op->fd, op->addr, op->fd2, (char *)op->addr2, op->u1);
		break;
	case ACALL_OP_UNLINKAT:
		io_uring_prep_unlinkat(sqe, op->fd, op->addr, (int)op->u1);
		break;
	case ACALL_OP_MKDIRAT:
		io_uring_prep_mkdirat(sqe, op->fd, op->addr, op->u2);
		break;
	case ACALL_OP_LINKAT:
		io_uring_prep_linkat(sqe, op->fd, op->addr, op->fd2, (char *)op->addr2, (int)op->u1);
		break;
	case ACALL_OP_SYMLINKAT:
		io_uring_prep_symlinkat(sqe, op->addr3, op->fd, op->addr);
		break;
	case ACALL_OP_FALLOCATE:
		io_uring_prep_fallocate(sqe, op->fd, (int)op->u1, (off_t)op->off, (off_t)op->len);
		break;
	case ACALL_OP_FADVISE:
		io_uring_prep_fadvise(sqe, op->fd, op->off, (off_t)op->len, (int)op->u1);
		break;
	case ACALL_OP_FTRUNCATE:
		fill_ftruncate(sqe, op->fd, op->off);
		break;
	case ACALL_OP_SETXATTR:
		io_uring_prep_setxattr(sqe, (char *)op->addr2, op->addr3, op->addr, (int)op->u1,
				       (unsigned)op->len);
		break;
	case ACALL_OP_GETXATTR:
		io_uring_prep_getxattr(sqe, (char *)op->addr2, op->addr3, op->addr,
				       (unsigned)op->len);
		break;
	}
	if ((op->flags & ACALL_F_NOCACHE) && ring->has_dontcache &&
	    (op->opcode == ACALL_OP_READ || op->opcode == ACALL_OP_WRITE ||
	     op->opcode == ACALL_OP_READV || op->opcode == ACALL_OP_WRITEV))
		sqe->rw_flags = RWF_DONTCACHE;
	sqe->personality = op->personality;
	if (op->link)
		sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data(sqe, op);
}

static unsigned chain_len(const struct acall_op *op)
{
	unsigned n = 0;

	for (; op; op = op->link)
		n++;
	return n;
}

/* Submits what is in the SQ. -EBUSY (the CQ is full): reap and retry, with
 * sq_lock dropped, since the lock order is cq_lock -> sq_lock. */
static int submit_sq_locked(struct acall_ring *ring)
{
	for (;;) {
		int r = io_uring_submit(&ring->uring);

		if (r != -EBUSY && r != -EAGAIN && r != -EINTR)
			return r;
		pthread_mutex_unlock(&ring->sq_lock);
		if (!pthread_mutex_trylock(&ring->cq_lock)) {
			acall_uring_reap(ring, false);
			acall_cq_unlock(ring);
		} else {
			sched_yield();
		}
		pthread_mutex_lock(&ring->sq_lock);
	}
}

int acall_uring_submit(struct acall_ring *ring, struct acall_op *chains)
{
	unsigned n = 0, ncb = 0;
	int r = 0;

	pthread_mutex_lock(&ring->sq_lock);
	for (struct acall_op *c = chains; c; c = c->next) {
		/* A chain must not be split between two submissions: that
		 * would cut the link. */
		if (io_uring_sq_space_left(&ring->uring) < chain_len(c))
			r = submit_sq_locked(ring);
		for (struct acall_op *op = c; op; op = op->link) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring->uring);

			fill_sqe(ring, sqe, op);
			n++;
			ncb += op->cb != NULL;
		}
	}
	atomic_fetch_add(&ring->uring_inflight, n);
	/* The reaper sleeps for good only when it found none out; standing
	 * aside, it needs no wake-up. */
	if (ncb && atomic_fetch_add(&ring->uring_cb_inflight, ncb) == 0 &&
	    atomic_load(&ring->reaper_idle)) {
		atomic_fetch_add(&ring->reaper_word, 1);
		acall_futex_wake(&ring->reaper_word, 1);
	}
	r = submit_sq_locked(ring);
	pthread_mutex_unlock(&ring->sq_lock);
	return r < 0 ? r : 0;
}

/* Sends an SQE with no op behind it (user_data 0), which the reapers skip. */
static void submit_control(struct acall_ring *ring, uint64_t cancel_key, unsigned cancel_flags,
			   bool cancel)
{
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&ring->sq_lock);
	sqe = io_uring_get_sqe(&ring->uring);
	if (!sqe) {
		submit_sq_locked(ring);
		sqe = io_uring_get_sqe(&ring->uring);
	}
	if (sqe) {
		if (cancel)
			io_uring_prep_cancel64(sqe, cancel_key, (int)cancel_flags);
		else
			io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 0);
		submit_sq_locked(ring);
	}
	pthread_mutex_unlock(&ring->sq_lock);
}

/* Wakes a leader blocked in io_uring_enter: a worker completed something it
 * may be waiting for. */
void acall_uring_kick(struct acall_ring *ring)
{
	submit_control(ring, 0, 0, false);
}

void acall_uring_cancel(struct acall_ring *ring, struct acall_op *op)
{
	submit_control(ring, (uint64_t)(uintptr_t)op, 0, true);
}

void acall_uring_cancel_all(struct acall_ring *ring)
{
	submit_control(ring, 0, IORING_ASYNC_CANCEL_ANY, true);
}

/* A read or write io_uring refused but a worker can do: O_DIRECT from an
 * unaligned buffer (bounced), RWF_DONTCACHE where the file system lacks it
 * (fadvise instead). */
static bool needs_worker(const struct acall_op *op, int res)
{
	bool rw = op->opcode == ACALL_OP_READ || op->opcode == ACALL_OP_WRITE;
	int fl;

	if (!rw)
		return false;
	if (res == -EOPNOTSUPP && (op->flags & ACALL_F_NOCACHE))
		return true;
	if (res != -EINVAL || !op->addr)
		return false;
	if (!(((uintptr_t)op->addr | op->len | op->off) & 4095))
		return false;
	fl = fcntl(op->fd, F_GETFL);
	return fl >= 0 && (fl & O_DIRECT);
}

/* The caller holds cq_lock. Returns how many ops it completed. */
unsigned acall_uring_reap(struct acall_ring *ring, bool wait)
{
	struct io_uring_cqe *cqes[REAP_BATCH], *cqe;
	struct acall_op *ops[REAP_BATCH];
	unsigned total = 0, n;

	if (wait && atomic_load(&ring->uring_inflight)) {
		atomic_store(&ring->leader_sleeping, true);
		io_uring_wait_cqe(&ring->uring, &cqe);
		atomic_store(&ring->leader_sleeping, false);
	}
	do {
		struct acall_op *retry = NULL, *retry_tail = NULL;
		unsigned k = 0, nretry = 0, ncb = 0;

		n = io_uring_peek_batch_cqe(&ring->uring, cqes, REAP_BATCH);
		for (unsigned i = 0; i < n; i++) {
			struct acall_op *op = io_uring_cqe_get_data(cqes[i]);

			if (!op)
				continue;
			ncb += op->cb != NULL;
			if (needs_worker(op, cqes[i]->res)) {
				op->path = ACALL_PATH_WORKERS;
				op->next = op->link = NULL;
				if (retry_tail)
					retry_tail->next = op;
				else
					retry = op;
				retry_tail = op;
				nretry++;
				continue;
			}
			op->result = cqes[i]->res;
			ops[k++] = op;
		}
		io_uring_cq_advance(&ring->uring, n);
		atomic_fetch_sub(&ring->uring_inflight, k + nretry);
		atomic_fetch_sub(&ring->uring_cb_inflight, ncb);
		if (retry)
			acall_workers_queue(ring, retry, nretry);
		if (k)
			acall_complete(ring, ops, k);
		total += k;
	} while (n == REAP_BATCH);
	return total;
}

int acall_uring_wait_timed(struct acall_ring *ring, _Atomic uint32_t *word, uint32_t val,
			   const struct timespec *timeout)
{
	struct __kernel_timespec ts;
	struct io_uring_getevents_arg arg = { .sigmask_sz = _NSIG / 8 };
	int r = 0;

	if (!(ring->uring.features & IORING_FEAT_EXT_ARG))
		return -EOPNOTSUPP;
	if (timeout) {
		ts.tv_sec = timeout->tv_sec;
		ts.tv_nsec = timeout->tv_nsec;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	/* Set before word is read: a completion on another path moves word
	 * first and then, seeing this, kicks (acall_reap_wake(),
	 * complete_batch()); its CQE stays until this thread reaps it. */
	atomic_store(&ring->leader_sleeping, true);
	if (atomic_load(word) == val &&
	    syscall(__NR_io_uring_enter, ring->uring.ring_fd, 0, 1,
		    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg)) < 0)
		r = -errno;
	atomic_store(&ring->leader_sleeping, false);
	if (r == -ETIME)
		return -ETIMEDOUT;
	return r == -EINTR ? r : 0;
}

/*
 * Personalities: io_uring registers the credentials of the thread that
 * registers, so this thread takes on cred for the moment of the call (raw,
 * per-thread syscalls: see acall_cred_switch()). Cached per ring.
 */
int acall_uring_personality(struct acall_ring *ring, const struct acall_cred *cred)
{
	int id = -ENOSPC;

	pthread_mutex_lock(&ring->lock);
	for (unsigned i = 0; i < ring->npersonalities; i++) {
		const struct acall_cred *c = &ring->personalities[i].cred;

		if (c->fsuid == cred->fsuid && c->fsgid == cred->fsgid &&
		    c->ngroups == cred->ngroups &&
		    !memcmp(c->groups, cred->groups, c->ngroups * sizeof(gid_t))) {
			id = ring->personalities[i].id;
			goto out;
		}
	}
	if (ring->npersonalities == ACALL_PERSONALITY_MAX)
		goto out;
	id = acall_cred_switch(cred);
	if (id < 0)
		goto out;
	id = io_uring_register_personality(&ring->uring);
	acall_cred_restore();
	if (id > 0) {
		ring->personalities[ring->npersonalities].cred = *cred;
		ring->personalities[ring->npersonalities++].id = id;
	}
out:
	pthread_mutex_unlock(&ring->lock);
	return id;
}

/*
 * Completes callback ops when nobody else reaps: sleeps while there are
 * none in flight, leads the CQ while there are. While acall_reap_wait()
 * callers keep coming (ext_gen moved within REAPER_STANDBY_NS), they reap
 * the CQ on their own threads and the reaper stays out of their way: it
 * would otherwise take every CQE first and hand it over with a wake-up.
 * Each holder of the CQ wakes those who wait for it as it leaves, so
 * standing aside loses no completion; it only delays callbacks by up to
 * twice REAPER_STANDBY_NS when those callers stop coming.
 */
static long reaper_standby_ns(void)
{
	const char *e = getenv("PONY_ACALL_REAPER_STANDBY_US");
	long us = e ? strtol(e, NULL, 10) : 0;

	return us > 0 && us < 3600000000L ? us * 1000 : REAPER_STANDBY_NS;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *reaper_main(void *arg)
{
	struct acall_ring *ring = arg;
	unsigned gen = atomic_load(&ring->ext_gen);
	long standby = reaper_standby_ns();
	int64_t until = 0;              /* standing aside until then */

	for (;;) {
		uint32_t seen = atomic_load(&ring->reaper_word);
		unsigned g;
		int64_t now;

		if (ring->stopping && !atomic_load(&ring->uring_inflight))
			break;
		/* Idle flag, then the count (the submitter: count, then
		 * flag): one of the two sees the other. */
		atomic_store(&ring->reaper_idle, true);
		if (!atomic_load(&ring->uring_cb_inflight)) {
			acall_futex_wait(&ring->reaper_word, seen, 0);
			continue;
		}
		atomic_store(&ring->reaper_idle, false);
		g = atomic_load(&ring->ext_gen);
		now = mono_ns();
		if (g != gen) {
			gen = g;
			until = now + standby;
		}
		/* Until callers stayed away for a whole standby period. */
		if (now < until && !ring->stopping) {
			acall_futex_wait(&ring->reaper_word, seen, (long)(until - now));
			continue;
		}
		pthread_mutex_lock(&ring->cq_lock);
		if (atomic_load(&ring->uring_cb_inflight))
			acall_uring_reap(ring, true);
		acall_cq_unlock(ring);
	}
	return NULL;
}

int acall_reaper_start(struct acall_ring *ring)
{
	int r = pthread_create(&ring->reaper, NULL, reaper_main, ring);

	ring->reaper_started = r == 0;
	return -r;
}

void acall_reaper_stop(struct acall_ring *ring)
{
	if (!ring->reaper_started)
		return;
	atomic_fetch_add(&ring->reaper_word, 1);
	acall_futex_wake(&ring->reaper_word, 1);
	pthread_join(ring->reaper, NULL);
	ring->reaper_started = false;
}
