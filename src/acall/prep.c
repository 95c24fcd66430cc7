/*
 * prep.c - filling op records: one prep per opcode, then the per-op
 * setters. Nothing here takes a lock: until acall_submit(), an op belongs to
 * the thread that took it.
 */
#include <string.h>

#include "internal.h"

/* Every prep starts here: arguments and settings of an earlier use are gone. */
static void prep(struct acall_op *op, unsigned opcode, int fd, void *addr, uint64_t len,
		 uint64_t off)
{
	op->opcode = (uint8_t)(opcode < 255 ? opcode : 255);
	op->flags = 0;
	op->fd = fd;
	op->fd2 = -1;
	op->addr = addr;
	op->addr2 = NULL;
	op->addr3 = NULL;
	op->len = len;
	op->off = off;
	op->u1 = op->u2 = 0;
	op->data = NULL;
	op->cb = NULL;
	op->cb_arg = NULL;
	op->cred = NULL;
	op->result = 0;
	op->personality = 0;
}

void acall_prep_nop(struct acall_op *op)
{
	prep(op, ACALL_OP_NOP, -1, NULL, 0, 0);
}

void acall_prep_read(struct acall_op *op, int fd, void *buf, size_t len, uint64_t off)
{
	prep(op, ACALL_OP_READ, fd, buf, len, off);
}

void acall_prep_write(struct acall_op *op, int fd, const void *buf, size_t len, uint64_t off)
{
	prep(op, ACALL_OP_WRITE, fd, (void *)buf, len, off);
}

void acall_prep_readv(struct acall_op *op, int fd, const struct iovec *iov, int iovcnt,
		      uint64_t off)
{
	prep(op, ACALL_OP_READV, fd, (void *)iov, (uint64_t)(unsigned)iovcnt, off);
}

void acall_prep_writev(struct acall_op *op, int fd, const struct iovec *iov, int iovcnt,
		       uint64_t off)
{
	prep(op, ACALL_OP_WRITEV, fd, (void *)iov, (uint64_t)(unsigned)iovcnt, off);
}

void acall_prep_fsync(struct acall_op *op, int fd)
{
	prep(op, ACALL_OP_FSYNC, fd, NULL, 0, 0);
}

void acall_prep_fdatasync(struct acall_op *op, int fd)
{
	prep(op, ACALL_OP_FDATASYNC, fd, NULL, 0, 0);
}

void acall_prep_sync_file_range(struct acall_op *op, int fd, uint64_t off, uint64_t len,
				unsigned flags)
{
	prep(op, ACALL_OP_SYNC_FILE_RANGE, fd, NULL, len, off);
	op->u1 = flags;
}

void acall_prep_openat(struct acall_op *op, int dfd, const char *path, int flags, mode_t mode)
{
	prep(op, ACALL_OP_OPENAT, dfd, (void *)path, 0, 0);
	op->u1 = (uint32_t)flags;
	op->u2 = mode;
}

void acall_prep_close(struct acall_op *op, int fd)
{
	prep(op, ACALL_OP_CLOSE, fd, NULL, 0, 0);
}

void acall_prep_statx(struct acall_op *op, int dfd, const char *path, int flags,
		      unsigned mask, struct statx *buf)
{
	prep(op, ACALL_OP_STATX, dfd, (void *)path, 0, 0);
	op->addr3 = buf;
	op->u1 = (uint32_t)flags;
	op->u2 = mask;
}

void acall_prep_renameat2(struct acall_op *op, int olddfd, const char *oldpath, int newdfd,
			  const char *newpath, unsigned flags)
{
	prep(op, ACALL_OP_RENAMEAT2, olddfd, (void *)oldpath, 0, 0);
	op->fd2 = newdfd;
	op->addr2 = newpath;
	op->u1 = flags;
}

void acall_prep_unlinkat(struct acall_op *op, int dfd, const char *path, int flags)
{
	prep(op, ACALL_OP_UNLINKAT, dfd, (void *)path, 0, 0);
	op->u1 = (uint32_t)flags;
}

void acall_prep_mkdirat(struct acall_op *op, int dfd, const char *path, mode_t mode)
{
	prep(op, ACALL_OP_MKDIRAT, dfd, (void *)path, 0, 0);
	op->u2 = mode;
}

void acall_prep_linkat(struct acall_op *op, int olddfd, const char *oldpath, int newdfd,
		       const char *newpath, int flags)
{
	prep(op, ACALL_OP_LINKAT, olddfd, (void *)oldpath, 0, 0);
	op->fd2 = newdfd;
	op->addr2 = newpath;
	op->u1 = (uint32_t)flags;
}

void acall_prep_symlinkat(struct acall_op *op, const char *target, int newdfd,
			  const char *linkpath)
{
	prep(op, ACALL_OP_SYMLINKAT, newdfd, (void *)linkpath, 0, 0);
	op->addr3 = (void *)target;
}

void acall_prep_fallocate(struct acall_op *op, int fd, int mode, uint64_t off, uint64_t len)
{
	prep(op, ACALL_OP_FALLOCATE, fd, NULL, len, off);
	op->u1 = (uint32_t)mode;
}

void acall_prep_fadvise(struct acall_op *op, int fd, uint64_t off, uint64_t len, int advice)
{
	prep(op, ACALL_OP_FADVISE, fd, NULL, len, off);
	op->u1 = (uint32_t)advice;
}

void acall_prep_ftruncate(struct acall_op *op, int fd, uint64_t len)
{
	prep(op, ACALL_OP_FTRUNCATE, fd, NULL, 0, len);
}

void acall_prep_getdents64(struct acall_op *op, int fd, void *buf, size_t len)
{
	prep(op, ACALL_OP_GETDENTS64, fd, buf, len, 0);
}

void acall_prep_fchmod(struct acall_op *op, int fd, mode_t mode)
{
	prep(op, ACALL_OP_FCHMOD, fd, NULL, 0, 0);
	op->u2 = mode;
}

void acall_prep_fchown(struct acall_op *op, int fd, uid_t uid, gid_t gid)
{
	prep(op, ACALL_OP_FCHOWN, fd, NULL, 0, 0);
	op->u1 = uid;
	op->u2 = gid;
}

void acall_prep_setxattr(struct acall_op *op, const char *path, const char *name,
			 const void *value, size_t size, int flags)
{
	prep(op, ACALL_OP_SETXATTR, -1, (void *)path, size, 0);
	op->addr2 = name;
	op->addr3 = (void *)value;
	op->u1 = (uint32_t)flags;
}

void acall_prep_getxattr(struct acall_op *op, const char *path, const char *name,
			 void *value, size_t size)
{
	prep(op, ACALL_OP_GETXATTR, -1, (void *)path, size, 0);
	op->addr2 = name;
	op->addr3 = value;
}

void acall_prep_call(struct acall_op *op, acall_call_fn fn, void *arg)
{
	prep(op, ACALL_OP_CALL, -1, NULL, 0, 0);
	op->addr2 = arg;
	/* A function pointer does not convert to void *; keep it whole. */
	memcpy(&op->off, &fn, sizeof(fn) <= sizeof(op->off) ? sizeof(fn) : sizeof(op->off));
}

void acall_prep_raw(struct acall_op *op, unsigned opcode, int fd, void *addr, uint64_t len,
		    uint64_t off)
{
	prep(op, opcode, fd, addr, len, off);
}

void acall_op_set_data(struct acall_op *op, void *data)
{
	op->data = data;
}

void acall_op_set_flags(struct acall_op *op, unsigned flags)
{
	op->flags = (uint16_t)flags;
}

void acall_op_set_callback(struct acall_op *op, acall_callback_fn fn, void *arg)
{
	op->cb = fn;
	op->cb_arg = arg;
}

void acall_op_set_cred(struct acall_op *op, const struct acall_cred *cred)
{
	op->cred = cred;
}

void *acall_op_data(const struct acall_op *op)
{
	return op->data;
}

unsigned acall_op_opcode(const struct acall_op *op)
{
	return op->opcode;
}

int64_t acall_op_result(const struct acall_op *op)
{
	return op->result;
}
