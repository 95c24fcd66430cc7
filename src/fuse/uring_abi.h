/*
 * uring_abi.h - the kernel's FUSE-over-io_uring wire format (Linux 6.14+,
 * fs/fuse/dev_uring.c, uapi fuse.h 7.42), which this host's 6.1 uapi
 * headers lack. Defined here under pony's own names; docs/fuse-uring.md
 * describes every field. Host byte order (the kernel and the daemon share
 * the machine), natural alignment, no packing needed: every struct below
 * has the kernel's size, checked by the static asserts.
 */
#ifndef PONY_FUSE_URING_ABI_H
#define PONY_FUSE_URING_ABI_H

#include <assert.h>
#include <stdint.h>

/* INIT flags2 bit (flag 41 of the 64-bit flags): the daemon will serve
 * requests through io_uring; the kernel offers it only with enable_uring. */
#define PONYFUSE_URING_INIT_FLAG2 (1u << (41 - 32))

/* IORING_OP_URING_CMD's cmd_op values for /dev/fuse. */
enum {
	PONYFUSE_URING_CMD_REGISTER = 1,        /* hand an entry's buffers over,
						 * wait for a request */
	PONYFUSE_URING_CMD_COMMIT_AND_FETCH = 2,        /* answer, wait for the next */
};

#define PONYFUSE_URING_IN_OUT_SZ 128    /* room for fuse_in/out_header */
#define PONYFUSE_URING_OP_SZ 128        /* room for the opcode's own header */

/* The kernel's per-request bookkeeping, in the header buffer. */
struct ponyfuse_uring_ent_in_out {
	uint64_t flags;                 /* 0 */
	uint64_t commit_id;             /* in: the id to commit the answer with */
	uint32_t payload_sz;            /* in: request bytes in the payload buffer;
					 * out: answer bytes the daemon put there */
	uint32_t padding;
	uint64_t reserved;
};
static_assert(sizeof(struct ponyfuse_uring_ent_in_out) == 32, "fuse_uring_ent_in_out");

/* An entry's header buffer: iov[0] of the REGISTER command. */
struct ponyfuse_uring_header {
	/* in: struct fuse_in_header; out: struct fuse_out_header */
	char in_out[PONYFUSE_URING_IN_OUT_SZ];
	/* in: the request's first argument (its fixed header), if any */
	char op_in[PONYFUSE_URING_OP_SZ];
	struct ponyfuse_uring_ent_in_out ent;
};
static_assert(sizeof(struct ponyfuse_uring_header) == 288, "fuse_uring_req_header");

/* The command area of a 128-byte SQE (sqe->cmd). */
struct ponyfuse_uring_cmd {
	uint64_t flags;                 /* 0 */
	uint64_t commit_id;             /* COMMIT_AND_FETCH: ent.commit_id read */
	uint16_t qid;                   /* the queue: the CPU whose requests it takes */
	uint8_t padding[6];
};
static_assert(sizeof(struct ponyfuse_uring_cmd) == 24, "fuse_uring_cmd_req");

#endif
