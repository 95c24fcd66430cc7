/*
 * aio.c - the POSIX AIO entry points of libpony-aio.so: aio_read,
 * aio_write, aio_fsync, aio_error, aio_return, aio_suspend, aio_cancel,
 * lio_listio, their *64 names and glibc's aio_init, each exported under the
 * symbol versions glibc 2.36 gives them (GLIBC_2.34 for programs built
 * today, GLIBC_2.2.5 and GLIBC_2.4 for older ones), so an unmodified binary
 * binds to them through LD_PRELOAD, and a program linked with
 * -lpony-aio before libc binds to them at link time.
 *
 * On x86-64 off_t is 64 bits: struct aiocb and struct aiocb64 are the same
 * and every *64 name is the same function.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* glibc's layout, which existing binaries were compiled with. */
static_assert(sizeof(struct aiocb) == 168, "glibc's struct aiocb on x86-64");
static_assert(sizeof(struct aiocb64) == sizeof(struct aiocb), "aiocb64 is aiocb");
static_assert(offsetof(struct aiocb, aio_sigevent) == 32, "aiocb layout");
static_assert(offsetof(struct aiocb, __next_prio) == 96, "aiocb layout");
static_assert(offsetof(struct aiocb, __error_code) == 112, "aiocb layout");
static_assert(offsetof(struct aiocb, __return_value) == 120, "aiocb layout");
static_assert(offsetof(struct aiocb, aio_offset) == 128, "aiocb layout");
static_assert(offsetof(struct aiocb, __glibc_reserved) == 136, "aiocb layout");
static_assert(sizeof(((struct aiocb *)0)->__glibc_reserved) >= sizeof(AIO_CB_MAGIC),
	      "the magic fits");

/* Exports fn as name@@GLIBC_2.34 and name@GLIBC_2.2.5, and name64 the same. */
#define AIO_EXPORT(name)                                                      \
	__attribute__((symver(#name "@@GLIBC_2.34"), symver(#name "@GLIBC_2.2.5"), \
		       symver(#name "64@@GLIBC_2.34"), symver(#name "64@GLIBC_2.2.5")))

static int fail(int r)
{
	errno = -r;
	return -1;
}

static bool cb_known(const struct aiocb *cb)
{
	return cb && !memcmp(cb->__glibc_reserved, AIO_CB_MAGIC, sizeof(AIO_CB_MAGIC));
}

static int submit(struct aiocb *cb, enum aio_kind kind)
{
	struct aio_req *run = NULL;
	int r;

	if (!cb)
		return fail(-EINVAL);
	aio_lock();
	r = aio_submit_locked(cb, kind, NULL, false, &run);
	aio_unlock();
	if (run)
		aio_run_inline(run);
	return r < 0 ? fail(r) : 0;
}

int pony_aio_read(struct aiocb *cb);
AIO_EXPORT(aio_read) int pony_aio_read(struct aiocb *cb)
{
	return submit(cb, AIO_KIND_READ);
}

int pony_aio_write(struct aiocb *cb);
AIO_EXPORT(aio_write) int pony_aio_write(struct aiocb *cb)
{
	return submit(cb, AIO_KIND_WRITE);
}

int pony_aio_fsync(int op, struct aiocb *cb);
AIO_EXPORT(aio_fsync) int pony_aio_fsync(int op, struct aiocb *cb)
{
	if (op != O_SYNC && op != O_DSYNC)
		return fail(-EINVAL);
	return submit(cb, op == O_SYNC ? AIO_KIND_FSYNC : AIO_KIND_FDATASYNC);
}

int pony_aio_error(const struct aiocb *cb);
AIO_EXPORT(aio_error) int pony_aio_error(const struct aiocb *cb)
{
	if (!cb_known(cb))
		return fail(-EINVAL);
	return aio_cb_error(cb);
}

ssize_t pony_aio_return(struct aiocb *cb);
AIO_EXPORT(aio_return) ssize_t pony_aio_return(struct aiocb *cb)
{
	ssize_t ret;

	/* Once only, and only when complete: POSIX leaves both undefined,
	 * pony says EINVAL rather than hand out a stale value. */
	if (!cb_known(cb) || aio_cb_error(cb) == EINPROGRESS)
		return fail(-EINVAL);
	ret = cb->__return_value;
	memset(cb->__glibc_reserved, 0, sizeof(AIO_CB_MAGIC));
	return ret;
}

static bool any_done(const struct aiocb *const list[], int nent, bool *ret_waitable)
{
	*ret_waitable = false;
	for (int i = 0; i < nent; i++) {
		if (!list[i])
			continue;
		if (aio_cb_error(list[i]) != EINPROGRESS)
			return true;
		*ret_waitable = true;
	}
	return false;
}

/* Nanoseconds from now to end; 0 if past. */
static long ns_left(const struct timespec *end)
{
	struct timespec now;
	long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (end->tv_sec - now.tv_sec) * 1000000000L + end->tv_nsec - now.tv_nsec;
	return ns > 0 ? ns : 0;
}

int pony_aio_suspend(const struct aiocb *const list[], int nent, const struct timespec *timeout);
AIO_EXPORT(aio_suspend)
int pony_aio_suspend(const struct aiocb *const list[], int nent, const struct timespec *timeout)
{
	struct timespec end;
	bool waitable;
	int r = 0;

	if (nent < 0 || (nent && !list))
		return fail(-EINVAL);
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000)
			return fail(-EINVAL);
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += timeout->tv_sec + (end.tv_nsec + timeout->tv_nsec) / 1000000000;
		end.tv_nsec = (end.tv_nsec + timeout->tv_nsec) % 1000000000;
	}
	for (bool last = false;;) {
		uint32_t seq = atomic_load(&aio.seq);
		struct timespec rel = { 0, 0 };
		long ns;

		if (any_done(list, nent, &waitable) || !waitable)
			break;
		if (aio_copy_help())    /* rather than sleep until a worker does */
			continue;
		if (timeout) {
			ns = ns_left(&end);
			/* Time is up: one last look at what the ring holds
			 * (aio_wait_seq() reaps it), since the reaper thread
			 * may be standing aside for this thread. */
			if (!ns && last) {
				r = -EAGAIN;
				break;
			}
			last = !ns;
			rel.tv_sec = ns / 1000000000;
			rel.tv_nsec = ns % 1000000000;
		}
		r = aio_wait_seq(seq, timeout ? &rel : NULL);
		if (r == -EINTR)
			break;
		r = 0;
	}
	return r < 0 ? fail(r) : 0;
}

int pony_aio_cancel(int fd, struct aiocb *cb);
AIO_EXPORT(aio_cancel) int pony_aio_cancel(int fd, struct aiocb *cb)
{
	int r;

	if (fcntl(fd, F_GETFL) < 0)
		return fail(-EBADF);
	if (cb && cb->aio_fildes != fd)
		return fail(-EINVAL);
	r = aio_cancel_fd(fd, cb);
	return r < 0 ? fail(r) : r;
}

/* LIO_WAIT: sleeps until every request of lio completed; -EINTR if a
 * signal came first (the requests go on). */
static int lio_wait(struct aio_lio *lio)
{
	int r = 0;

	for (;;) {
		uint32_t seq = atomic_load(&aio.seq);
		unsigned left;

		aio_lock();
		left = lio->nreq;
		aio_unlock();
		if (!left)
			break;
		if (aio_copy_help())
			continue;
		r = aio_wait_seq(seq, NULL);
		if (r == -EINTR)
			break;
		r = 0;
	}
	return r;
}

/* Submits the list's entries; a failed one gets its error in its aiocb.
 * Returns how many failed. */
static int lio_submit_locked(struct aiocb *const list[], int nent, struct aio_lio *lio)
{
	int failed = 0;

	for (int i = 0; i < nent; i++) {
		struct aiocb *cb = list[i];
		int r;

		if (!cb || cb->aio_lio_opcode == LIO_NOP)
			continue;
		if (cb->aio_lio_opcode == LIO_READ)
			r = aio_submit_locked(cb, AIO_KIND_READ, lio, true, NULL);
		else if (cb->aio_lio_opcode == LIO_WRITE)
			r = aio_submit_locked(cb, AIO_KIND_WRITE, lio, true, NULL);
		else
			r = -EINVAL;
		if (r < 0) {
			memcpy(cb->__glibc_reserved, AIO_CB_MAGIC, sizeof(AIO_CB_MAGIC));
			aio_cb_publish(cb, -r, -1);
			failed++;
		}
	}
	return failed;
}

static int lio_listio_common(int mode, struct aiocb *const list[], int nent,
			     struct sigevent *sev, bool individual)
{
	struct aio_notes_one { struct sigevent sev; pid_t pid; } now = { .pid = 0 };
	struct aio_lio *lio;
	int failed, r = 0;

	if ((mode != LIO_WAIT && mode != LIO_NOWAIT) || nent < 0 || (nent && !list))
		return fail(-EINVAL);
	if (mode == LIO_NOWAIT && sev && aio_sigevent_check(sev) < 0)
		return fail(-EINVAL);
	lio = calloc(1, sizeof(*lio));
	if (!lio)
		return fail(-EAGAIN);
	lio->refs = 1;
	lio->individual = individual;
	lio->pid = aio_getpid();
	lio->notify = mode == LIO_NOWAIT && sev && sev->sigev_notify != SIGEV_NONE;
	if (lio->notify)
		lio->sev = *sev;
	now.sev.sigev_notify = SIGEV_NONE;
	aio_lock();
	failed = lio_submit_locked(list, nent, lio);
	if (aio.ring)
		acall_submit(aio.ring);  /* the whole list in one batch; it
					  * cannot fail (acall falls back to its
					  * workers when io_uring refuses) */
	if (lio->notify && !lio->nreq) {
		now.sev = lio->sev;     /* nothing went out: notify at once */
		now.pid = lio->pid;
	}
	aio_unlock();
	aio_notify(&now.sev, now.pid);
	if (mode == LIO_WAIT) {
		r = lio_wait(lio);
		for (int i = 0; !r && i < nent; i++)
			if (list[i] && list[i]->aio_lio_opcode != LIO_NOP && aio_cb_error(list[i]))
				failed++;
	}
	aio_lock();
	if (--lio->refs == 0)
		free(lio);
	aio_unlock();
	if (r < 0)
		return fail(r);
	return failed ? fail(-EIO) : 0;
}

int pony_lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sev);
__attribute__((symver("lio_listio@@GLIBC_2.34"), symver("lio_listio@GLIBC_2.4"),
	       symver("lio_listio64@@GLIBC_2.34"), symver("lio_listio64@GLIBC_2.4")))
int pony_lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sev)
{
	return lio_listio_common(mode, list, nent, sev, true);
}

/* The first lio_listio of glibc ignored the aiocbs' own sigevents. */
int pony_lio_listio_old(int mode, struct aiocb *const list[], int nent, struct sigevent *sev);
__attribute__((symver("lio_listio@GLIBC_2.2.5"), symver("lio_listio64@GLIBC_2.2.5")))
int pony_lio_listio_old(int mode, struct aiocb *const list[], int nent, struct sigevent *sev)
{
	return lio_listio_common(mode, list, nent, sev, false);
}

/* glibc's tuning hint for its thread pool; pony has none to tune. */
void pony_aio_init(const struct aioinit *init);
__attribute__((symver("aio_init@@GLIBC_2.34"), symver("aio_init@GLIBC_2.2.5")))
void pony_aio_init(const struct aioinit *init)
{
	(void)init;
}
