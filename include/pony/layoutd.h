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
	LAYOUTD_GET_PATH = 3,           /* client: a layout page of a path (TCP: no descriptors) */
	LAYOUTD_TOPOLOGY = 4,           /* client: the volume's members */
	LAYOUTD_LAYOUT = 0x81,          /* daemon: GET's answer */
	LAYOUTD_LEASE_STATE = 0x82,     /* daemon: LEASE's answer */
	LAYOUTD_RECALL = 0x83,          /* daemon, unasked (tag 0): a lease was recalled */
	LAYOUTD_TOPOLOGY_IS = 0x84,     /* daemon: TOPOLOGY's answer */
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

/* GET_PATH: this, then path_len bytes of a path from the mount's root (no NUL). */
struct layoutd_get_path {
	struct layoutd_get get;
	le32 path_len;                  /* 1 .. LAYOUTD_PATH_MAX */
	le32 reserved;
} __attribute__((packed));
#define LAYOUTD_PATH_MAX 4096

/* TOPOLOGY_IS: this head, then nmembers members. */
struct layoutd_topology_head {
	char level[16];                 /* "raid6", NUL-padded */
	char layout[24];                /* md layout name; "": none */
	le64 chunk, full_stripe, region_offset;
	le32 nmembers;
	le32 reserved;
} __attribute__((packed));

struct layoutd_member {
	le32 state;                     /* 0 working, 1 failed, 2 rebuilding */
	le32 has_uuid;
	uint8_t uuid[16];
	char device[256];               /* as the mount opened it (a path or an NBD URI); "": missing */
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
#define LAYOUTD_MAX_LAYOUT (sizeof(struct layoutd_layout_head) + \
			    LAYOUTD_MAX_EXTENTS * sizeof(struct layoutd_extent) + \
			    LAYOUTD_MAX_CSUMS * 4 + LAYOUTD_MAX_PIECES * sizeof(struct layoutd_piece))
#define LAYOUTD_MAX_TOPOLOGY (sizeof(struct layoutd_topology_head) + \
			      VFS_LAYOUT_MAX_MEMBERS * sizeof(struct layoutd_member))
#define LAYOUTD_MAX_PAYLOAD (LAYOUTD_MAX_LAYOUT > LAYOUTD_MAX_TOPOLOGY ? LAYOUTD_MAX_LAYOUT : \
			     LAYOUTD_MAX_TOPOLOGY)
/* The largest request: a GET_PATH. */
#define LAYOUTD_MAX_REQUEST (sizeof(struct layoutd_get_path) + LAYOUTD_PATH_MAX)

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

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (host ""): host into host[cap], *ret_port into addr. */
int layoutd_addr_split(const char *addr, char *host, size_t cap, const char **ret_port);

/* A topology into a TOPOLOGY_IS payload (LAYOUTD_MAX_TOPOLOGY bytes): its length. */
size_t layoutd_topology_encode(const struct vfs_layout_topology *t, uint8_t *buf);

/* Pre-shared keys (psk.c): "IDENTITY:HEXKEY" lines, as psktool writes them. */
struct layoutd_psk {
	char **id;
	uint8_t **key;
	size_t *len, n;
};
/* -EINVAL (line *ret_line malformed), -ENOKEY (no key in it), -errno (cannot read). */
int layoutd_psk_load(const char *path, struct layoutd_psk *k, unsigned *ret_line);
void layoutd_psk_free(struct layoutd_psk *k);

struct layoutd;

/*
 * Makes the Unix socket at path (0666: the descriptor a GET passes is the
 * permission check) for fs's layouts, for files of the mount at the
 * absolute mountpoint. Open it before daemonizing, so a bad path is the
 * mount command's error; -EADDRINUSE when a daemon already listens there.
 */
int layoutd_open(struct vfs *fs, const char *path, const char *mountpoint,
		 struct layoutd **ret);
/*
 * Also listens on TCP at addr ("HOST:PORT", "[V6]:PORT" or ":PORT"), every
 * connection in TLS with a pre-shared key from psk_file (lines
 * "IDENTITY:HEXKEY", as psktool and nbdkit's tls-psk write them), or, with
 * psk_file NULL, in the clear (the caller's --insecure). Requests there
 * name files by path (GET_PATH). Call between layoutd_open and _start.
 */
int layoutd_listen_tcp(struct layoutd *d, const char *addr, const char *psk_file);
/* Serves from threads of its own, once the mount serves (after any fork). */
int layoutd_start(struct layoutd *d);
/* Stops serving, returns every lease its clients hold, removes the socket. */
void layoutd_stop(struct layoutd *d);

/*
 * The client end (client.c). A connection to a mount's Unix socket, or
 * to its TCP listener ("HOST:PORT") in TLS with the first key of psk_file
 * (NULL: in the clear; -EACCES: the daemon refused the key).
 */
struct layoutd_client;
int layoutd_client_unix(const char *path, struct layoutd_client **ret);
int layoutd_client_tcp(const char *addr, const char *psk_file, struct layoutd_client **ret);
/* One request; file_fd (-1: none) goes along on the Unix socket only. */
int layoutd_client_send(struct layoutd_client *c, enum layoutd_type type, uint32_t tag,
			const void *payload, size_t len, int file_fd);
/* The next message (-ETIMEDOUT after timeout_ms; -1: wait); its payload into payload[cap]. */
int layoutd_client_recv(struct layoutd_client *c, int timeout_ms, struct layoutd_hdr *h,
			uint8_t *payload, size_t cap, size_t *ret_len);
void layoutd_client_close(struct layoutd_client *c);

#endif
