/*
 * devio.c - the front end's own reads and writes of /dev/fuse, through
 * libfuse's custom I/O hooks, for what libfuse 3.14 does not know: the INIT
 * reply gets FUSE_HANDLE_KILLPRIV_V2 (opts.killpriv) and FUSE_PASSTHROUGH
 * with a max_stack_depth (passthrough.c), an open or create reply gets
 * FOPEN_PASSTHROUGH and its backing id, the kill bits of WRITE, SETATTR and
 * OPEN are noted for killpriv.c, and every request is counted by opcode for
 * the counters ioctl (so a test can prove which requests a call made).
 * The INIT reply also asks for FUSE over io_uring when wanted (uring.c),
 * whose requests are noted here the same way and whose answers, passing
 * through the same hooks, are handed to the ring they came from.
 *
 * A libfuse worker (or ring thread) reads a request, then handles and
 * answers it on the same thread, so what the reader notes about "the
 * current request" is thread-local, and the answer is matched to it by its
 * unique id.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"
#include "uring_abi.h"

/* Kernel 6.9's additions (uapi fuse.h 7.40), newer than this host's headers. */
#define PT_INIT_FLAG2 (1u << (37 - 32))         /* FUSE_PASSTHROUGH in flags2 */
#define PT_FOPEN (1u << 7)                      /* FOPEN_PASSTHROUGH */
#define PT_MAX_STACK_DEPTH 1    /* backing files on unstacked filesystems; the
				 * mount itself may then be an overlayfs lower */

/* The request this thread read last, and what its answer must carry. */
static _Thread_local struct {
	uint64_t unique;
	uint32_t opcode;
	bool kill_asked;
	int32_t backing_id;     /* > 0: the open reply passes through to it */
} cur;

void ponyfuse_devio_note(struct ponyfuse *pf, const void *buf, size_t len)
{
	const struct fuse_in_header *in = buf;
	const char *arg = (const char *)buf + sizeof(*in);
	size_t have;

	if (len < sizeof(*in))
		return;
	have = len - sizeof(*in);
	cur.unique = in->unique;
	cur.opcode = in->opcode;
	cur.kill_asked = false;
	cur.backing_id = 0;
	if (in->opcode < PONYFUSE_OPCODES)
		atomic_fetch_add_explicit(&pf->requests[in->opcode], 1, memory_order_relaxed);
	if (in->opcode == FUSE_INIT && have >= sizeof(struct fuse_init_in)) {
		const struct fuse_init_in *ii = (const void *)arg;

		atomic_store(&pf->init_unique, in->unique);
		pf->pt_offered = (ii->flags & FUSE_INIT_EXT) && (ii->flags2 & PT_INIT_FLAG2);
		pf->uring_offered = (ii->flags & FUSE_INIT_EXT) &&
				    (ii->flags2 & PONYFUSE_URING_INIT_FLAG2);
	} else if (in->opcode == FUSE_WRITE && have >= sizeof(struct fuse_write_in)) {
		cur.kill_asked = ((const struct fuse_write_in *)arg)->write_flags &
				 FUSE_WRITE_KILL_SUIDGID;
	} else if (in->opcode == FUSE_SETATTR && have >= sizeof(struct fuse_setattr_in)) {
		cur.kill_asked = ((const struct fuse_setattr_in *)arg)->valid & FATTR_KILL_SUIDGID;
	} else if (in->opcode == FUSE_OPEN && have >= sizeof(struct fuse_open_in)) {
		cur.kill_asked = ((const struct fuse_open_in *)arg)->open_flags &
				 FUSE_OPEN_KILL_SUIDGID;
	}
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = ponyfuse_forget_gated(userdata) ? ponyfuse_forget_read(userdata, fd, buf, len)
						    : read(fd, buf, len);

	if (n > 0)
		ponyfuse_devio_note(userdata, buf, (size_t)n);
	return n;
}

/* The payload buffer the kernel wants of each ring entry: its largest
 * request or answer argument (dev_uring.c's max_payload_sz). */
static size_t ring_payload(const struct fuse_init_out *o)
{
	size_t pages = (o->flags & FUSE_MAX_PAGES) ? o->max_pages : 32;

	return MAX(MAX((size_t)8192, (size_t)o->max_write), pages * (size_t)getpagesize());
}

static void patch_init(struct ponyfuse *pf, struct fuse_init_out *o, size_t len)
{
	if (pf->opts.killpriv)
		o->flags |= FUSE_HANDLE_KILLPRIV_V2;
	/* Asked for, the kernel holds every request until the rings are
	 * ready: ask only where this process may make rings at all. */
	if (pf->opts.io_uring && pf->uring_offered && ponyfuse_uring_usable()) {
		o->flags |= FUSE_INIT_EXT;
		o->flags2 |= PONYFUSE_URING_INIT_FLAG2;
		pf->uring_payload = ring_payload(o);
	}
	/* The kernel refuses passthrough next to the writeback cache. */
	if (!pf->pt || !pf->pt_offered || (o->flags & FUSE_WRITEBACK_CACHE) ||
	    len < offsetof(struct fuse_init_out, unused) + sizeof(o->unused[0]))
		return;
	o->flags |= FUSE_INIT_EXT;
	o->flags2 |= PT_INIT_FLAG2;
	o->unused[0] = PT_MAX_STACK_DEPTH;      /* max_stack_depth since 7.40 */
	atomic_store(&pf->pt_on, true);
}

/* fuse_reply_open() and fuse_reply_create() end their one argument buffer
 * with a fuse_open_out; its padding is the backing id since 7.40. */
static void patch_open(struct iovec *arg)
{
	struct fuse_open_out *o = (void *)((char *)arg->iov_base + arg->iov_len - sizeof(*o));

	o->open_flags = (o->open_flags & ~(uint32_t)FOPEN_KEEP_CACHE) | PT_FOPEN;
	o->padding = (uint32_t)cur.backing_id;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct ponyfuse *pf = userdata;
	const struct fuse_out_header *out = iov[0].iov_base;
	bool ok = count == 2 && iov[0].iov_len >= sizeof(*out) && out->error == 0;
	bool init = false;
	ssize_t n;

	if (iov[0].iov_len < sizeof(*out))
		return writev(fd, iov, count);
	if (ok && out->unique == atomic_load(&pf->init_unique) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background)) {
		patch_init(pf, iov[1].iov_base, iov[1].iov_len);
		atomic_store(&pf->init_unique, UINT64_MAX);
		init = true;
	}
	if (out->unique == cur.unique && cur.unique) {
		if (ok && cur.backing_id > 0 && iov[1].iov_len >= sizeof(struct fuse_open_out) &&
		    (cur.opcode == FUSE_OPEN || cur.opcode == FUSE_CREATE))
			patch_open(&iov[1]);
		cur.backing_id = 0;
	}
	/* The answer to a request that came over a ring goes back over it;
	 * notifications (unique 0) and the rest go to /dev/fuse. */
	if (ponyfuse_uring_owns(out))
		return ponyfuse_uring_reply(iov, count);
	n = writev(fd, iov, count);
	/* The kernel took the INIT answer: the rings can register now. */
	if (init && n > 0 && pf->uring_payload)
		ponyfuse_uring_start(pf, pf->uring_payload);
	return n;
}

/* libfuse splices large answers whose data is a file: header and data sit
 * in a pipe. An answer to a ring request is read from it into the ring. */
static ssize_t dev_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			       unsigned int flags, void *userdata)
{
	struct ponyfuse *pf = userdata;

	if (ponyfuse_uring_serving())
		return ponyfuse_uring_reply_pipe(fdin, len);
	atomic_fetch_add_explicit(&pf->spliced_answers, 1, memory_order_relaxed);
	return splice(fdin, offin, fdout, offout, len, flags);
}

static const struct fuse_custom_io devio = {
	.read = dev_read, .writev = dev_writev, .splice_send = dev_splice_send,
};

int ponyfuse_devio_setup(struct ponyfuse *pf)
{
	ponyfuse_forget_init(pf);
	atomic_store(&pf->init_unique, UINT64_MAX);
	return fuse_session_custom_io(pf->se, &devio, fuse_session_fd(pf->se)) == 0 ? 0 : -EIO;
}

bool ponyfuse_devio_take_kill(void)
{
	bool asked = cur.kill_asked;

	cur.kill_asked = false;
	return asked;
}

void ponyfuse_devio_reply_backing(int id)
{
	cur.backing_id = id;
}

/* Opcode names as the kernel's fuse_opcode spells them, lower case. */
static const char *const opcode_names[PONYFUSE_OPCODES] = {
	[FUSE_LOOKUP] = "lookup", [FUSE_FORGET] = "forget", [FUSE_GETATTR] = "getattr",
	[FUSE_SETATTR] = "setattr", [FUSE_READLINK] = "readlink", [FUSE_SYMLINK] = "symlink",
	[FUSE_MKNOD] = "mknod", [FUSE_MKDIR] = "mkdir", [FUSE_UNLINK] = "unlink",
	[FUSE_RMDIR] = "rmdir", [FUSE_RENAME] = "rename", [FUSE_LINK] = "link",
	[FUSE_OPEN] = "open", [FUSE_READ] = "read", [FUSE_WRITE] = "write",
	[FUSE_STATFS] = "statfs", [FUSE_RELEASE] = "release", [FUSE_FSYNC] = "fsync",
	[FUSE_SETXATTR] = "setxattr", [FUSE_GETXATTR] = "getxattr",
	[FUSE_LISTXATTR] = "listxattr", [FUSE_REMOVEXATTR] = "removexattr",
	[FUSE_FLUSH] = "flush", [FUSE_INIT] = "init", [FUSE_OPENDIR] = "opendir",
	[FUSE_READDIR] = "readdir", [FUSE_RELEASEDIR] = "releasedir",
	[FUSE_FSYNCDIR] = "fsyncdir", [FUSE_ACCESS] = "access", [FUSE_CREATE] = "create",
	[FUSE_INTERRUPT] = "interrupt", [FUSE_IOCTL] = "ioctl",
	[FUSE_BATCH_FORGET] = "batch_forget", [FUSE_FALLOCATE] = "fallocate",
	[FUSE_READDIRPLUS] = "readdirplus", [FUSE_RENAME2] = "rename2", [FUSE_LSEEK] = "lseek",
	[FUSE_COPY_FILE_RANGE] = "copy_file_range",
};

/* Appends a line to buf (size bytes, *len used), truncating at size. */
static int counter_line(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int counter_line(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf + *len, size - MIN(*len, size), fmt, ap);
	va_end(ap);
	if (r < 0)
		return -EIO;
	*len = MIN(*len + (size_t)r, size);
	return 0;
}

int ponyfuse_devio_counters(struct ponyfuse *pf, char *buf, size_t size)
{
	uint64_t forgotten = atomic_load(&pf->forgotten), spliced = atomic_load(&pf->spliced_answers);
	uint64_t pooled = atomic_load(&pf->pooled_reads);
	size_t len = 0;
	int r = 0;

	for (unsigned op = 0; op < PONYFUSE_OPCODES && r == 0; op++) {
		unsigned long long n = atomic_load_explicit(&pf->requests[op], memory_order_relaxed);

		if (n && opcode_names[op])
			r = counter_line(buf, size, &len, "fuse_%s %llu\n", opcode_names[op], n);
		else if (n)
			r = counter_line(buf, size, &len, "fuse_op%u %llu\n", op, n);
	}
	/* Inodes forgotten, however many came in one FORGET or BATCH_FORGET. */
	if (r == 0 && forgotten)
		r = counter_line(buf, size, &len, "forget_inodes %llu\n",
				 (unsigned long long)forgotten);
	/* Answers spliced to /dev/fuse: READs of host files, when they fit. */
	if (r == 0 && spliced)
		r = counter_line(buf, size, &len, "spliced_answers %llu\n",
				 (unsigned long long)spliced);
	/* READs answered by readpool.c's helpers. */
	if (r == 0 && pooled)
		r = counter_line(buf, size, &len, "pooled_reads %llu\npooled_reads_peak %llu\n",
				 (unsigned long long)pooled,
				 (unsigned long long)atomic_load(&pf->pooled_peak));
	/* Which transport served them: the io_uring lines only with rings. */
	if (r == 0 && pf->uring && !ponyfuse_uring_failed(pf->uring))
		r = counter_line(buf, size, &len,
				 "uring_queues %u\nuring_requests %llu\nuring_direct_reads %llu\n",
				 ponyfuse_uring_queues(pf->uring),
				 (unsigned long long)atomic_load(&pf->uring_requests),
				 (unsigned long long)atomic_load(&pf->uring_direct_reads));
	return r < 0 ? r : (int)len;
}
