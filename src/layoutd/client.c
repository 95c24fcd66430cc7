/*
 * client.c - the client end of the layout service: a connection to a
 * mount's Unix socket (packets, a descriptor passed with GET) or to its
 * TCP listener on another host (a stream framed by the header's length,
 * TLS 1.3 with the first key of a PSK file unless in the clear), and one
 * message sent or received at a time. Tools and libpony-layout share it,
 * so the wire is read in one place on this side too.
 */
#include <errno.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pony/layoutd.h"

struct layoutd_client {
	int fd;
	bool stream;
	SSL_CTX *ctx;
	SSL *ssl;
	struct layoutd_psk psk;
	uint8_t buf[sizeof(struct layoutd_hdr) + LAYOUTD_MAX_REQUEST];
};

void layoutd_client_close(struct layoutd_client *c)
{
	if (!c)
		return;
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	layoutd_psk_free(&c->psk);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

int layoutd_client_unix(const char *path, struct layoutd_client **ret)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct layoutd_client *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (strlen(path) >= sizeof(a.sun_path)) {
		free(c);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int r = -errno;

		layoutd_client_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

/* OpenSSL's client PSK callback: the file's first identity and key. */
static unsigned int psk_client_cb(SSL *ssl, const char *hint, char *identity,
				  unsigned int max_identity_len, unsigned char *psk,
				  unsigned int max_psk_len)
{
	const struct layoutd_client *c = SSL_get_app_data(ssl);

	if (strlen(c->psk.id[0]) >= max_identity_len || c->psk.len[0] > max_psk_len)
		return 0;
	strcpy(identity, c->psk.id[0]);
	memcpy(psk, c->psk.key[0], c->psk.len[0]);
	return (unsigned int)c->psk.len[0];
}

/* "HOST:PORT" or "[V6]:PORT", connected. */
static int dial(const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	const char *port;
	char host[256];
	int fd = -1, r = layoutd_addr_split(addr, host, sizeof(host), &port);

	if (r < 0 || !host[0])
		return -EINVAL;
	r = -EHOSTUNREACH;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			r = -errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : r;
}

int layoutd_client_tcp(const char *addr, const char *psk_file, struct layoutd_client **ret)
{
	struct layoutd_client *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->stream = true;
	c->fd = dial(addr);
	r = c->fd < 0 ? c->fd : 0;
	if (r >= 0 && psk_file) {
		r = layoutd_psk_load(psk_file, &c->psk, NULL);
		if (r >= 0) {
			c->ctx = SSL_CTX_new(TLS_client_method());
			c->ssl = c->ctx && SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) ?
				 SSL_new(c->ctx) : NULL;
			r = c->ssl ? 0 : -ENOMEM;
		}
		if (r >= 0) {
			SSL_set_app_data(c->ssl, c);
			SSL_set_psk_client_callback(c->ssl, psk_client_cb);
			/* A wrong key fails the handshake: the daemon says no more. */
			r = SSL_set_fd(c->ssl, c->fd) == 1 && SSL_connect(c->ssl) == 1 ? 0 : -EACCES;
		}
	}
	if (r < 0) {
		layoutd_client_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

static int write_all(struct layoutd_client *c, const uint8_t *p, size_t len)
{
	while (len) {
		size_t w = 0;
		ssize_t n = c->ssl ? (SSL_write_ex(c->ssl, p, len, &w) == 1 ? (ssize_t)w : -1) :
				     send(c->fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return n < 0 && !c->ssl ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int layoutd_client_send(struct layoutd_client *c, enum layoutd_type type, uint32_t tag,
			const void *payload, size_t len, int file_fd)
{
	struct layoutd_hdr h = layoutd_hdr_make(type, (uint32_t)len, tag);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { c->buf, sizeof(h) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (len > LAYOUTD_MAX_REQUEST)
		return -EMSGSIZE;
	memcpy(c->buf, &h, sizeof(h));
	if (len)
		memcpy(c->buf + sizeof(h), payload, len);
	if (c->stream)
		return file_fd >= 0 ? -EINVAL : write_all(c, c->buf, sizeof(h) + len);
	if (file_fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &file_fd, sizeof(int));
	}
	return sendmsg(c->fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int read_all(struct layoutd_client *c, uint8_t *p, size_t len)
{
	while (len) {
		size_t got = 0;
		ssize_t n = c->ssl ? (SSL_read_ex(c->ssl, p, len, &got) == 1 ? (ssize_t)got : -1) :
				     recv(c->fd, p, len, 0);

		if (n <= 0)
			return n < 0 && !c->ssl ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int layoutd_client_recv(struct layoutd_client *c, int timeout_ms, struct layoutd_hdr *h,
			uint8_t *payload, size_t cap, size_t *ret_len)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	size_t len;
	int r;

	/* TLS may hold a whole record already read: poll only when it holds none. */
	if (!(c->ssl && SSL_pending(c->ssl)) && poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	if (!c->stream) {
		uint8_t *buf = malloc(sizeof(*h) + cap);
		ssize_t n = buf ? recv(c->fd, buf, sizeof(*h) + cap, MSG_TRUNC) : -1;

		r = n < 0 ? -errno : n < (ssize_t)sizeof(*h) ? -ECONNRESET :
		    (size_t)n > sizeof(*h) + cap ? -EMSGSIZE : 0;
		if (r >= 0) {
			memcpy(h, buf, sizeof(*h));
			len = (size_t)n - sizeof(*h);
			memcpy(payload, buf + sizeof(*h), len);
		}
		free(buf);
	} else {
		r = read_all(c, (uint8_t *)h, sizeof(*h));
		len = r >= 0 ? le32_to_cpu(h->length) : 0;
		if (r >= 0 && len > cap)
			r = -EMSGSIZE;
		if (r >= 0)
			r = read_all(c, payload, len);
	}
	if (r >= 0)
		r = layoutd_hdr_check(h, len);
	if (r >= 0)
		*ret_len = len;
	return r;
}
