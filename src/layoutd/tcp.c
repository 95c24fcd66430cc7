/*
 * tcp.c - the layout service on TCP, for clients on other hosts
 * (`pony mount --layout-listen ADDR`, docs/layout.md "Across hosts"): a
 * listener thread, and a thread a connection that reads framed requests
 * (the header's length) and answers them through server.c. Every
 * connection speaks TLS 1.3 with a pre-shared key unless the mount was
 * told --insecure: a layout names where a file's bytes lie and hands out
 * leases, so only hosts holding the key may ask. No descriptor can cross
 * hosts, so files are named by path (GET_PATH).
 */
#include <errno.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"

/* OpenSSL's PSK callback: the key of the identity the client presents (0: none, refused). */
static unsigned int psk_server_cb(SSL *ssl, const char *identity, unsigned char *psk,
				  unsigned int max_psk_len)
{
	const struct layoutd *d = SSL_get_app_data(ssl);

	for (size_t i = 0; identity && i < d->psk.n; i++)
		if (!strcmp(identity, d->psk.id[i]) && d->psk.len[i] <= max_psk_len) {
			memcpy(psk, d->psk.key[i], d->psk.len[i]);
			return (unsigned int)d->psk.len[i];
		}
	return 0;
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" into a listening socket. */
static int listen_on(const char *addr, int *ret)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res;
	const char *port;
	char host[256];
	int fd, one = 1, r = layoutd_addr_split(addr, host, sizeof(host), &port);

	if (r < 0)
		return r;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0)
		return -EADDRNOTAVAIL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	r = fd < 0 ? -errno : 0;
	if (r >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		       bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0))
		r = -errno;
	freeaddrinfo(res);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	*ret = fd;
	return 0;
}

int layoutd_listen_tcp(struct layoutd *d, const char *addr, const char *psk_file)
{
	int r;

	if (psk_file) {
		r = layoutd_psk_load(psk_file, &d->psk, NULL);
		if (r < 0)
			return r;
		d->tls = SSL_CTX_new(TLS_server_method());
		if (!d->tls || !SSL_CTX_set_min_proto_version(d->tls, TLS1_3_VERSION))
			return -ENOMEM;
		SSL_CTX_set_psk_server_callback(d->tls, psk_server_cb);
	}
	return listen_on(addr, &d->tcp_fd);
}

bool layoutd_tcp_write(struct layoutd_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (c->ssl) {
			size_t w = 0;

			n = SSL_write_ex(c->ssl, p, len, &w) == 1 ? (ssize_t)w : -1;
		} else {
			n = send(c->fd, p, len, MSG_NOSIGNAL);
		}
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Exactly len bytes, or false (closed, an error, TLS broken). */
static bool read_full(struct layoutd_conn *c, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (c->ssl) {
			size_t got = 0;

			n = SSL_read_ex(c->ssl, p, len, &got) == 1 ? (ssize_t)got : -1;
		} else {
			n = recv(c->fd, p, len, 0);
		}
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void *conn_main(void *arg)
{
	struct layoutd_conn *c = arg;
	struct layoutd *d = c->d;
	uint8_t *req = malloc(LAYOUTD_MAX_REQUEST);
	bool ok = req && (!c->ssl || SSL_accept(c->ssl) == 1);

	while (ok) {
		struct layoutd_hdr h;
		size_t len;

		if (!read_full(c, &h, sizeof(h)))
			break;
		len = le32_to_cpu(h.length);
		if (len > LAYOUTD_MAX_REQUEST) {
			/* Not read: the stream cannot be followed past it. */
			layoutd_conn_handle(c, &h, NULL, SIZE_MAX, -1);
			break;
		}
		ok = read_full(c, req, len) && layoutd_conn_handle(c, &h, req, len, -1);
	}
	free(req);
	layoutd_conn_unlink(c);
	if (c->ssl)
		SSL_free(c->ssl);
	layoutd_conn_free(c);
	pthread_mutex_lock(&d->lock);
	d->tcp_threads--;
	pthread_cond_broadcast(&d->tcp_gone);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* A new connection's thread, TLS set up unless in the clear. */
static void tcp_accept(struct layoutd *d, int fd)
{
	struct timeval tv = { .tv_sec = 10 };   /* a client that stops reading is dropped */
	struct layoutd_conn *c;
	pthread_attr_t attr;
	int r;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c = layoutd_conn_new(d, fd, true);
	if (!c) {
		close(fd);
		return;
	}
	if (d->tls) {
		c->ssl = SSL_new(d->tls);
		if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
			layoutd_conn_unlink(c);
			SSL_free(c->ssl);
			layoutd_conn_free(c);
			return;
		}
		SSL_set_app_data(c->ssl, d);
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&d->lock);
	d->tcp_threads++;
	pthread_mutex_unlock(&d->lock);
	r = pthread_create(&c->thread, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (r) {
		pthread_mutex_lock(&d->lock);
		d->tcp_threads--;
		pthread_mutex_unlock(&d->lock);
		layoutd_conn_unlink(c);
		SSL_free(c->ssl);
		layoutd_conn_free(c);
	}
}

static void *listen_main(void *arg)
{
	struct layoutd *d = arg;

	for (;;) {
		int fd = accept4(d->tcp_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			tcp_accept(d, fd);
		else if (errno != EINTR && errno != ECONNABORTED && errno != EMFILE)
			break;          /* shut down by layoutd_tcp_stop */
	}
	return NULL;
}

int layoutd_tcp_start(struct layoutd *d)
{
	int r;

	if (d->tcp_fd < 0)
		return 0;
	r = -pthread_create(&d->tcp_thread, NULL, listen_main, d);
	d->tcp_running = r == 0;
	return r;
}

void layoutd_tcp_stop(struct layoutd *d)
{
	if (!d->tcp_running)
		return;
	shutdown(d->tcp_fd, SHUT_RDWR);
	pthread_join(d->tcp_thread, NULL);
	d->tcp_running = false;
	/* Every connection's thread sees its socket end, returns its leases, goes. */
	pthread_mutex_lock(&d->lock);
	for (struct layoutd_conn *c = d->conns; c; c = c->next)
		if (c->stream)
			shutdown(c->fd, SHUT_RDWR);
	while (d->tcp_threads)
		pthread_cond_wait(&d->tcp_gone, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

void layoutd_tcp_free(struct layoutd *d)
{
	if (d->tcp_fd >= 0)
		close(d->tcp_fd);
	SSL_CTX_free(d->tls);
	layoutd_psk_free(&d->psk);
}
