/*
 * layoutd.h - the layout control socket (docs/layout.md "Control socket"):
 * a mount's daemon answers layouts and leases on a socket as well as
 * through ioctls, for clients that hold layouts over time. Over the socket
 * a client hears recalls as they happen (no polling), and a connection's
 * leases end when it closes, so a crashed client holds no blocks for a
 * lease's length.
 *
 * The wire format is little-endian, every message a 16-byte header and a
 * payload; the header's length makes it usable on a byte stream too. On
 * the Unix socket (SOCK_SEQPACKET) each message is one packet, and a GET
 * carries the file as an open descriptor (SCM_RIGHTS): holding it proves
 * the client may read the file, as the ioctl does.
 */
#ifndef PONY_LAYOUTD_H
#define PONY_LAYOUTD_H

#include <stddef.h>
#include <stdint.h>

#include "pony/util.h"
#include "pony/vfs.h"

#define LAYOUTD_MAGIC 0x59414c50u       /* "PLAY" in little-endian bytes */
#define LAYOUTD_VERSION 1

enum layoutd_type {
	LAYOUTD_GET = 1,                /* client: a layout page of the passed file */
	LAYOUTD_LEASE = 2,              /* client: a lease's status, or its return */
	LAYOUTD_LAYOUT = 0x81,          /* daemon: GET's answer */
	LAYOUTD_LEASE_STATE = 0x82,     /* daemon: LEASE's answer */
	LAYOUTD_RECALL = 0x83,          /* daemon, unasked (tag 0): a lease was recalled */
	LAYOUTD_ERROR = 0xff,           /* daemon: the request failed */
};

struct layoutd_hdr {
	le32 magic;
	le16 version;
	le16 type;                      /* enum layoutd_type */
	le32 length;                    /* payload bytes after the header */
	le32 tag;                       /* the client's; an answer echoes it */
} __attribute__((packed));

struct layoutd_get {
	le64 offset, length;            /* the file range (as PONYFUSE_IOC_LAYOUT) */
	le32 lease;                     /* 0, VFS_LEASE_NEW or a lease to join */
	le32 reserved;
} __attribute__((packed));

struct layoutd_lease {
	le32 lease;
	le32 op;                        /* VFS_LEASE_STATUS or VFS_LEASE_RETURN */
} __attribute__((packed));

struct layoutd_lease_state {
	le32 state;                     /* VFS_LEASE_HELD, _RECALLED, _EXPIRED */
	le32 reserved;
	le64 lease_ms;
} __attribute__((packed));

struct layoutd_recall {
	le32 lease;
	le32 reserved;
} __attribute__((packed));

struct layoutd_error {
	le32 err;                       /* a positive Linux errno */
	le32 reserved;
} __attribute__((packed));

/* LAYOUT: this head, then nextents extents, ncsums le32 CRCs, npieces pieces. */
struct layoutd_layout_head {
	le32 flags;                     /* VFS_LAYOUT_ENCRYPTED, _ON_VOLUME, _COMPLETE */
	le32 block_size;
	le64 size, next;
	le32 lease;
	le32 nextents, ncsums, npieces;
	le64 lease_ms;
} __attribute__((packed));

struct layoutd_extent {
	le64 file_offset, length, volume_offset;
	le32 state, first_csum, first_piece, npieces;
} __attribute__((packed));

struct layoutd_piece {
	le64 file_offset, length, member_offset;
	le32 member, role;
} __attribute__((packed));

/* The largest payload: a LAYOUT with LAYOUTD_MAX_* entries. */
#define LAYOUTD_MAX_EXTENTS 32
#define LAYOUTD_MAX_CSUMS 1024
#define LAYOUTD_MAX_PIECES 256
#define LAYOUTD_MAX_PAYLOAD (sizeof(struct layoutd_layout_head) + \
			     LAYOUTD_MAX_EXTENTS * sizeof(struct layoutd_extent) + \
			     LAYOUTD_MAX_CSUMS * 4 + LAYOUTD_MAX_PIECES * sizeof(struct layoutd_piece))

/* A header for a payload of length bytes. */
struct layoutd_hdr layoutd_hdr_make(enum layoutd_type type, uint32_t length, uint32_t tag);
/* 0 when h is a header of this version whose payload is length bytes; else -EPROTO. */
int layoutd_hdr_check(const struct layoutd_hdr *h, size_t length);

/* l's answer as a LAYOUT payload into buf (LAYOUTD_MAX_PAYLOAD bytes): its length. */
size_t layoutd_layout_encode(const struct vfs_layout *l, uint8_t *buf);
/*
 * A LAYOUT payload of len bytes into l, whose arrays hold LAYOUTD_MAX_*
 * entries (l->max_* say so). -EPROTO: malformed (counts past the length or
 * the maximums, indexes outside the arrays).
 */
int layoutd_layout_decode(const uint8_t *buf, size_t len, struct vfs_layout *l);

struct layoutd;

/*
 * Makes the Unix socket at path (0666: the descriptor a GET passes is the
 * permission check) for fs's layouts, for files of the mount at the
 * absolute mountpoint. Open it before daemonizing, so a bad path is the
 * mount command's error; -EADDRINUSE when a daemon already listens there.
 */
int layoutd_open(struct vfs *fs, const char *path, const char *mountpoint,
		 struct layoutd **ret);
/* Serves from a thread of its own, once the mount serves (after any fork). */
int layoutd_start(struct layoutd *d);
/* Stops serving, returns every lease its clients hold, removes the socket. */
void layoutd_stop(struct layoutd *d);

#endif
