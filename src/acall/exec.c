/*
 * exec.c - running one op as a plain system call on the calling thread: the
 * worker path. Also what only this path can do: switch credentials per
 * thread, fall back from RWF_DONTCACHE to fadvise, and bounce O_DIRECT I/O
 * from an unaligned buffer through an aligned one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080        /* Linux 6.14; not in Debian 12's headers */
#endif
#define BOUNCE_ALIGN 4096u

static int64_t neg_errno(long r)
{
	return r < 0 ? -errno : r;
}

/*
 * Credentials. Raw syscalls, not glibc's wrappers: glibc's setgroups()
 * applies to every thread of the process, and the other workers are
 * serving other users right now. setfsuid() cannot report failure, so the
 * switch is read back.
 */
int acall_cred_switch(const struct acall_cred *cred)
{
	if (cred->ngroups > ACALL_CRED_MAX_GROUPS)
		return -EINVAL;
	if (syscall(SYS_setgroups, (size_t)cred->ngroups, cred->groups) < 0)
		return -errno;
	syscall(SYS_setfsgid, cred->fsgid);
	syscall(SYS_setfsuid, cred->fsuid);
	if ((uid_t)syscall(SYS_setfsuid, -1) != cred->fsuid ||
	    (gid_t)syscall(SYS_setfsgid, -1) != cred->fsgid) {
		acall_cred_restore();
		return -EPERM;
	}
	return 0;
}

/* Back to the process's own ids (fsuid follows euid), no extra groups. */
int acall_cred_restore(void)
{
	syscall(SYS_setfsuid, geteuid());
	syscall(SYS_setfsgid, getegid());
	return syscall(SYS_setgroups, (size_t)0, NULL) < 0 ? -errno : 0;
}

void acall_exec_restore_cred(struct acall_exec *ex)
{
	if (ex->cred_active)
		acall_cred_restore();
	ex->cred_active = false;
}

static bool cred_equal(const struct acall_cred *a, const struct acall_cred *b)
{
	return a->fsuid == b->fsuid && a->fsgid == b->fsgid && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, MIN(a->ngroups, ACALL_CRED_MAX_GROUPS) * sizeof(gid_t));
}

static int exec_set_cred(struct acall_exec *ex, const struct acall_cred *cred)
{
	int r;

	if (!cred) {
		acall_exec_restore_cred(ex);
		return 0;
	}
	if (ex->cred_active && cred_equal(&ex->cred, cred))
		return 0;       /* the same ids as the op before: already switched */
	r = acall_cred_switch(cred);
	ex->cred_active = r == 0;
	if (r == 0)
		ex->cred = *cred;
	return r;
}

/* The cancel signal: its handler does nothing; installed without
 * SA_RESTART, so a syscall it interrupts returns EINTR. */
static void cancel_handler(int sig)
{
	(void)sig;
}

int acall_signal_number(void)
{
	return SIGRTMIN + 6;
}

static pthread_once_t signal_once = PTHREAD_ONCE_INIT;
static int signal_err;

static void signal_install(void)
{
	struct sigaction sa = { .sa_handler = cancel_handler };

	sigemptyset(&sa.sa_mask);
	if (sigaction(acall_signal_number(), &sa, NULL) < 0)
		signal_err = -errno;
}

int acall_signal_init(void)
{
	pthread_once(&signal_once, signal_install);
	return signal_err;
}

/* Whether this kernel knows RWF_DONTCACHE: a probe write to a file that
 * is never linked anywhere. */
bool acall_probe_dontcache(void)
{
	struct iovec iov = { .iov_base = (void *)"p", .iov_len = 1 };
	int fd = open("/var/tmp", O_TMPFILE | O_RDWR, 0600);
	bool ok;

	if (fd < 0)
		fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		return false;
	ok = pwritev2(fd, &iov, 1, 0, RWF_DONTCACHE) == 1;
	close(fd);
	return ok;
}

static bool is_odirect_misaligned(const struct acall_op *op)
{
	int fl;

	if (!op->addr || !(((uintptr_t)op->addr | op->len | op->off) & (BOUNCE_ALIGN - 1)))
		return false;
	fl = fcntl(op->fd, F_GETFL);
	return fl >= 0 && (fl & O_DIRECT);
}

/*
 * O_DIRECT from or to an unaligned buffer: through an aligned one covering
 * the aligned range around [off, off+len). A write of a partial block reads
 * the block first (not atomic against other writers of that block).
 */
static int64_t exec_bounce(struct acall_op *op)
{
	uint64_t start = op->off & ~(uint64_t)(BOUNCE_ALIGN - 1);
	uint64_t end = ROUND_UP(op->off + op->len, BOUNCE_ALIGN);
	size_t span = (size_t)(end - start), head = (size_t)(op->off - start);
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(span);
	ssize_t n;

	if (!b)
		return -ENOMEM;
	if (op->opcode == ACALL_OP_READ) {
		n = pread(op->fd, b, span, (off_t)start);
		if (n < 0)
			return -errno;
		n = (size_t)n > head ? MIN((size_t)n - head, op->len) : 0;
		memcpy(op->addr, b + head, (size_t)n);
		return n;
	}
	if (head || (op->len & (BOUNCE_ALIGN - 1))) {
		memset(b, 0, span);
		if (pread(op->fd, b, span, (off_t)start) < 0)
			return -errno;
	}
	memcpy(b + head, op->addr, op->len);
	n = pwrite(op->fd, b, span, (off_t)start);
	if (n < 0)
		return -errno;
	return (size_t)n >= head + op->len ? (int64_t)op->len : MAX((ssize_t)0, n - (ssize_t)head);
}

static int64_t exec_rw(struct acall_ring *ring, struct acall_op *op)
{
	bool write = op->opcode == ACALL_OP_WRITE || op->opcode == ACALL_OP_WRITEV;
	bool vec = op->opcode == ACALL_OP_READV || op->opcode == ACALL_OP_WRITEV;
	struct iovec one = { .iov_base = op->addr, .iov_len = op->len };
	const struct iovec *iov = vec ? op->addr : &one;
	int cnt = vec ? (int)op->len : 1;
	bool nocache = op->flags & ACALL_F_NOCACHE;
	int64_t r;

	if (!op->addr && (vec || op->len))
		return -EFAULT;
	if (nocache && ring->has_dontcache) {
		r = neg_errno(write ? pwritev2(op->fd, iov, cnt, (off_t)op->off, RWF_DONTCACHE)
				    : preadv2(op->fd, iov, cnt, (off_t)op->off, RWF_DONTCACHE));
		/* Two workers streaming neighbouring ranges race the kernel's
		 * drop-behind (a folio locked by the other's readahead is
		 * skipped, and stays): drop what is left of the range. */
		if (r > 0 && !write)
			posix_fadvise(op->fd, (off_t)op->off, r, POSIX_FADV_DONTNEED);
		if (r != -EOPNOTSUPP)
			goto out;
	}
	/* preadv2(), not preadv(): offset -1 means the file position, as in
	 * io_uring, so pipes and sockets work. */
	r = neg_errno(write ? pwritev2(op->fd, iov, cnt, (off_t)op->off, 0)
			    : preadv2(op->fd, iov, cnt, (off_t)op->off, 0));
	if (r == -EINVAL && !vec && is_odirect_misaligned(op))
		r = exec_bounce(op);
	if (nocache && r > 0) {
		/* Dirty pages are not dropped: write them back first. */
		if (write)
			sync_file_range(op->fd, (off_t)op->off, r, SYNC_FILE_RANGE_WAIT_BEFORE |
					SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
		posix_fadvise(op->fd, (off_t)op->off, r, POSIX_FADV_DONTNEED);
	}
out:
	return r;
}

static int64_t exec_call(struct acall_op *op)
{
	acall_call_fn fn;

	memcpy(&fn, &op->off, sizeof(fn));
	return fn ? fn((void *)op->addr2) : -EFAULT;
}

static int64_t exec_syscall(struct acall_ring *ring, struct acall_op *op)
{
	switch (op->opcode) {
	case ACALL_OP_NOP:
		return 0;
	case ACALL_OP_READ: case ACALL_OP_WRITE: case ACALL_OP_READV: case ACALL_OP_WRITEV:
		return exec_rw(ring, op);
	case ACALL_OP_FSYNC:
		return neg_errno(fsync(op->fd));
	case ACALL_OP_FDATASYNC:
		return neg_errno(fdatasync(op->fd));
	case ACALL_OP_SYNC_FILE_RANGE:
		return neg_errno(sync_file_range(op->fd, (off_t)op->off, (off_t)op->len, op->u1));
	case ACALL_OP_OPENAT:
		return neg_errno(openat(op->fd, op->addr, (int)op->u1, (mode_t)op->u2));
	case ACALL_OP_CLOSE:
		return neg_errno(close(op->fd));
	case ACALL_OP_STATX:
		/* The raw call: glibc declares the buffer nonnull, bad input may not be. */
		return neg_errno(syscall(SYS_statx, op->fd, op->addr, (int)op->u1, op->u2, op->addr3));
	case ACALL_OP_RENAMEAT2:
		return neg_errno(renameat2(op->fd, op->addr, op->fd2, op->addr2, op->u1));
	case ACALL_OP_UNLINKAT:
		return neg_errno(unlinkat(op->fd, op->addr, (int)op->u1));
	case ACALL_OP_MKDIRAT:
		return neg_errno(mkdirat(op->fd, op->addr, (mode_t)op->u2));
	case ACALL_OP_LINKAT:
		return neg_errno(linkat(op->fd, op->addr, op->fd2, op->addr2, (int)op->u1));
	case ACALL_OP_SYMLINKAT:
		return neg_errno(symlinkat(op->addr3, op->fd, op->addr));
	case ACALL_OP_FALLOCATE:
		return neg_errno(fallocate(op->fd, (int)op->u1, (off_t)op->off, (off_t)op->len));
	case ACALL_OP_FADVISE:
		return -posix_fadvise(op->fd, (off_t)op->off, (off_t)op->len, (int)op->u1);
	case ACALL_OP_FTRUNCATE:
		return neg_errno(ftruncate(op->fd, (off_t)op->off));
	case ACALL_OP_GETDENTS64:
		return neg_errno(syscall(SYS_getdents64, op->fd, op->addr, op->len));
	case ACALL_OP_FCHMOD:
		return neg_errno(fchmod(op->fd, (mode_t)op->u2));
	case ACALL_OP_FCHOWN:
		return neg_errno(fchown(op->fd, op->u1, op->u2));
	case ACALL_OP_SETXATTR:
		return neg_errno(setxattr(op->addr, op->addr2, op->addr3, op->len, (int)op->u1));
	case ACALL_OP_GETXATTR:
		return neg_errno(getxattr(op->addr, op->addr2, op->addr3, op->len));
	case ACALL_OP_CALL:
		return exec_call(op);
	}
	return -EINVAL;
}

/* Runs op with its credentials; the caller publishes ex in op->exec so that
 * acall_cancel() can interrupt it. */
int64_t acall_exec_op(struct acall_ring *ring, struct acall_exec *ex, struct acall_op *op)
{
	int r = exec_set_cred(ex, op->cred);

	if (r < 0)
		return r;
	return exec_syscall(ring, op);
}
