/*
 * internal.h - the inside of the layout service, shared by server.c (the
 * daemon, its connections and their requests, the Unix socket) and tcp.c
 * (the TCP listener, TLS with pre-shared keys). Not public.
 */
#ifndef PONY_LAYOUTD_INTERNAL_H
#define PONY_LAYOUTD_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "pony/layoutd.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

/* One client: on the Unix socket (packets, descriptors) or TCP (a stream, maybe TLS). */
struct layoutd_conn {
	struct layoutd *d;
	int fd;
	bool stream;                    /* TCP: messages framed by their length */
	SSL *ssl;                       /* TCP in TLS; NULL: in the clear */
	bool done;                      /* TCP: its thread ended; reaped by the listener */
	pthread_t thread;               /* TCP */
	pthread_mutex_t wlock;          /* one writer at a time: answers, recalls */
	uint32_t *leases;               /* given to it, under d->lock */
	size_t nleases, cap_leases;
	struct layoutd_conn *next;      /* in d->conns, under d->lock */
	/* Scratch of its requests (one at a time per connection). */
	struct vfs_layout_extent extents[LAYOUTD_MAX_EXTENTS];
	uint32_t csums[LAYOUTD_MAX_CSUMS];
	struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
	uint8_t out[sizeof(struct layoutd_hdr) + LAYOUTD_MAX_PAYLOAD];  /* under wlock */
};

struct layoutd {
	struct vfs *fs;
	char *path, *mountpoint;
	int unix_fd;                    /* -1: none */
	int recalls[2];                 /* a pipe of le32 lease ids */
	int stop_fd;                    /* an eventfd */
	pthread_t thread;               /* the Unix socket, recalls */
	bool running;
	pthread_mutex_t lock;
	struct layoutd_conn *conns;
	dev_t dev;                      /* the mount's, found on the first GET */
	bool have_dev;
	/* TCP (tcp.c) */
	int tcp_fd;                     /* -1: none */
	SSL_CTX *tls;                   /* NULL: in the clear */
	struct layoutd_psk psk;
	unsigned tcp_threads;           /* connection threads alive, under lock */
	pthread_cond_t tcp_gone;        /* signalled when one ends */
	pthread_t tcp_thread;
	bool tcp_running;
};

/* server.c */
struct layoutd_conn *layoutd_conn_new(struct layoutd *d, int fd, bool stream);
/* Returns its leases, closes it, frees it; it must be out of d->conns. */
void layoutd_conn_free(struct layoutd_conn *c);
/* Takes c out of d->conns. */
void layoutd_conn_unlink(struct layoutd_conn *c);
/* One request; false: close the connection (it broke the protocol, or is gone). */
bool layoutd_conn_handle(struct layoutd_conn *c, const struct layoutd_hdr *h,
			 const uint8_t *payload, size_t len, int file_fd);

/* tcp.c */
int layoutd_tcp_start(struct layoutd *d);
void layoutd_tcp_stop(struct layoutd *d);
void layoutd_tcp_free(struct layoutd *d);
/* A whole message to a stream connection (TLS or not); false on failure. */
bool layoutd_tcp_write(struct layoutd_conn *c, const void *buf, size_t len);

#endif
