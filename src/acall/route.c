/*
 * route.c - the one table saying where each op runs, and why. The reasons
 * are measurements on this machine (kernel 6.18, 2 cores; docs/acall.md and
 * bench/acall): io_uring completes page-cache reads inline and O_DIRECT I/O
 * without a thread, so data I/O goes there; it punts statx, the *at
 * namespace ops, ftruncate, xattrs and O_CREAT opens to its io-wq kernel
 * threads, where they cost more than on pony's two user threads, and it has
 * no op at all for getdents64, fchmod, fchown or a function call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Newer than liburing 2.3's headers; the kernel's value (6.9+). */
#define ACALL_IORING_OP_FTRUNCATE 55

struct acall_route {
	const char *name;
	int uring_op;           /* IORING_OP_*, -1: io_uring has none */
	uint8_t path;           /* where ACALL_PATH_AUTO runs it */
	/* Never blocks for long (no pipes, FIFOs, locks or flushes): a
	 * thread that would only wait for it may run it itself. */
	bool quick;
};

static const struct acall_route routes[ACALL_OP__MAX] = {
	/* A NOP is the cheapest proof the path works: keep it on io_uring. */
	[ACALL_OP_NOP]             = { "nop",             IORING_OP_NOP,             ACALL_PATH_URING, true },
	/* Data I/O: inline from the page cache, no thread for O_DIRECT. */
	[ACALL_OP_READ]            = { "read",            IORING_OP_READ,            ACALL_PATH_URING },
	[ACALL_OP_WRITE]           = { "write",           IORING_OP_WRITE,           ACALL_PATH_URING },
	[ACALL_OP_READV]           = { "readv",           IORING_OP_READV,           ACALL_PATH_URING },
	[ACALL_OP_WRITEV]          = { "writev",          IORING_OP_WRITEV,          ACALL_PATH_URING },
	/* Flushes block either way; io_uring keeps them ordered with its I/O
	 * and links (IOSQE_IO_LINK write -> fsync). */
	[ACALL_OP_FSYNC]           = { "fsync",           IORING_OP_FSYNC,           ACALL_PATH_URING },
	[ACALL_OP_FDATASYNC]       = { "fdatasync",       IORING_OP_FSYNC,           ACALL_PATH_URING },
	[ACALL_OP_SYNC_FILE_RANGE] = { "sync_file_range", IORING_OP_SYNC_FILE_RANGE, ACALL_PATH_URING },
	[ACALL_OP_FALLOCATE]       = { "fallocate",       IORING_OP_FALLOCATE,       ACALL_PATH_URING },
	[ACALL_OP_FADVISE]         = { "fadvise",         IORING_OP_FADVISE,         ACALL_PATH_URING, true },
	/* close is inline in io_uring (no lookup, no blocking). */
	[ACALL_OP_CLOSE]           = { "close",           IORING_OP_CLOSE,           ACALL_PATH_URING, true },
	/* Metadata: io_uring punts these to io-wq (statx: 2-9x a plain call
	 * on two user threads, bench/acall statx_vs_uring). */
	[ACALL_OP_OPENAT]          = { "openat",          IORING_OP_OPENAT,          ACALL_PATH_WORKERS },
	[ACALL_OP_STATX]           = { "statx",           IORING_OP_STATX,           ACALL_PATH_WORKERS, true },
	[ACALL_OP_RENAMEAT2]       = { "renameat2",       IORING_OP_RENAMEAT,        ACALL_PATH_WORKERS, true },
	[ACALL_OP_UNLINKAT]        = { "unlinkat",        IORING_OP_UNLINKAT,        ACALL_PATH_WORKERS, true },
	[ACALL_OP_MKDIRAT]         = { "mkdirat",         IORING_OP_MKDIRAT,         ACALL_PATH_WORKERS, true },
	[ACALL_OP_LINKAT]          = { "linkat",          IORING_OP_LINKAT,          ACALL_PATH_WORKERS, true },
	[ACALL_OP_SYMLINKAT]       = { "symlinkat",       IORING_OP_SYMLINKAT,       ACALL_PATH_WORKERS, true },
	[ACALL_OP_FTRUNCATE]       = { "ftruncate",       ACALL_IORING_OP_FTRUNCATE, ACALL_PATH_WORKERS, true },
	[ACALL_OP_SETXATTR]        = { "setxattr",        IORING_OP_SETXATTR,        ACALL_PATH_WORKERS, true },
	[ACALL_OP_GETXATTR]        = { "getxattr",        IORING_OP_GETXATTR,        ACALL_PATH_WORKERS, true },
	/* io_uring has no op for these. */
	[ACALL_OP_GETDENTS64]      = { "getdents64",      -1,                        ACALL_PATH_WORKERS, true },
	[ACALL_OP_FCHMOD]          = { "fchmod",          -1,                        ACALL_PATH_WORKERS, true },
	[ACALL_OP_FCHOWN]          = { "fchown",          -1,                        ACALL_PATH_WORKERS, true },
	[ACALL_OP_CALL]            = { "call",            -1,                        ACALL_PATH_WORKERS },
};

const char *acall_opcode_name(unsigned opcode)
{
	return opcode < ACALL_OP__MAX ? routes[opcode].name : "?";
}

int acall_opcode_from_name(const char *name)
{
	for (unsigned i = 0; i < ACALL_OP__MAX; i++)
		if (!strcmp(routes[i].name, name))
			return (int)i;
	return -EINVAL;
}

bool acall_route_quick(unsigned opcode)
{
	return opcode < ACALL_OP__MAX && routes[opcode].quick;
}

int acall_route_uring_opcode(unsigned opcode)
{
	return opcode < ACALL_OP__MAX ? routes[opcode].uring_op : -1;
}

enum acall_path acall_route_resolve(enum acall_path path)
{
	const char *e = getenv("PONY_ACALL_PATH");

	if (path != ACALL_PATH_AUTO || !e)
		return path;
	if (!strcmp(e, "uring"))
		return ACALL_PATH_URING;
	if (!strcmp(e, "workers"))
		return ACALL_PATH_WORKERS;
	return ACALL_PATH_AUTO;
}

/* Fills ring->route. io_uring must already be set up (or known absent). */
int acall_route_init(struct acall_ring *ring, enum acall_path path)
{
	struct io_uring_probe *probe = NULL;

	if (path == ACALL_PATH_URING && !ring->has_uring)
		return -ENOSYS;
	if (ring->has_uring) {
		probe = io_uring_get_probe_ring(&ring->uring);
		if (!probe)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < ACALL_OP__MAX; i++) {
		const struct acall_route *r = &routes[i];
		bool kernel_has = probe && r->uring_op >= 0 &&
				  io_uring_opcode_supported(probe, r->uring_op);
		bool want = path == ACALL_PATH_URING ||
			    (path == ACALL_PATH_AUTO && r->path == ACALL_PATH_URING);

		ring->route[i] = kernel_has && want ? ACALL_PATH_URING : ACALL_PATH_WORKERS;
	}
	if (probe)
		io_uring_free_probe(probe);
	return 0;
}

enum acall_path acall_ring_route(const struct acall_ring *ring, unsigned opcode)
{
	return opcode < ACALL_OP__MAX ? ring->route[opcode] : ACALL_PATH_WORKERS;
}
