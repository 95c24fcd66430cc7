/*
 * server.c - the layout service's daemon side (docs/layout.md "Control
 * socket"): its connections and their requests, whatever carries them,
 * and the Unix socket. One thread polls the Unix socket, its clients, and
 * a pipe on which the filesystem's recall callback drops the leases it
 * recalls; TCP clients have a thread each (tcp.c). A GET on the Unix
 * socket arrives with the file's descriptor; its inode (from the kernel's
 * cached attributes: no round trip to this very daemon) names the file,
 * and its device must be the mount's. A TCP client names the file by path
 * (GET_PATH). Each connection remembers the leases it was given, to tell
 * it of their recall and to return them when it closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

#define MAX_UNIX_CONNS 64

/* Runs under the filesystem's lock: queue the news, never block. */
static void on_recall(void *arg, uint32_t lease)
{
	struct layoutd *d = arg;
	le32 id = cpu_to_le32(lease);

	/* A full pipe loses the push; the holder's STATUS still says RECALLED. */
	if (write(d->recalls[1], &id, sizeof(id)) < 0)
		return;
}

/* -- connections -------------------------------------------------------------- */

struct layoutd_conn *layoutd_conn_new(struct layoutd *d, int fd, bool stream)
{
	struct layoutd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->d = d;
	c->fd = fd;
	c->stream = stream;
	pthread_mutex_init(&c->wlock, NULL);
	pthread_mutex_lock(&d->lock);
	c->next = d->conns;
	d->conns = c;
	pthread_mutex_unlock(&d->lock);
	return c;
}

void layoutd_conn_unlink(struct layoutd_conn *c)
{
	struct layoutd *d = c->d;

	pthread_mutex_lock(&d->lock);
	for (struct layoutd_conn **p = &d->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&d->lock);
}

void layoutd_conn_free(struct layoutd_conn *c)
{
	for (size_t k = 0; k < c->nleases; k++) {
		uint32_t state;
		uint64_t ms;

		VFS_CALL(c->d->fs, layout_lease, c->leases[k], VFS_LEASE_RETURN, &state, &ms);
	}
	free(c->leases);
	close(c->fd);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

/* Sends a message, c->wlock held; false when the client cannot take it. */
static bool conn_send_locked(struct layoutd_conn *c, enum layoutd_type type, uint32_t tag,
			     const void *payload, size_t len)
{
	struct layoutd_hdr h = layoutd_hdr_make(type, (uint32_t)len, tag);

	memcpy(c->out, &h, sizeof(h));
	if (payload != c->out + sizeof(h))
		memmove(c->out + sizeof(h), payload, len);
	if (c->stream)
		return layoutd_tcp_write(c, c->out, sizeof(h) + len);
	/* A Unix client that does not read its socket is dropped, not waited for. */
	return send(c->fd, c->out, sizeof(h) + len, MSG_DONTWAIT | MSG_NOSIGNAL) ==
	       (ssize_t)(sizeof(h) + len);
}

static bool conn_send(struct layoutd_conn *c, enum layoutd_type type, uint32_t tag,
		      const void *payload, size_t len)
{
	bool ok;

	pthread_mutex_lock(&c->wlock);
	ok = conn_send_locked(c, type, tag, payload, len);
	pthread_mutex_unlock(&c->wlock);
	return ok;
}

static bool send_error(struct layoutd_conn *c, uint32_t tag, int err)
{
	struct layoutd_error e = { .err = cpu_to_le32((uint32_t)err) };

	return conn_send(c, LAYOUTD_ERROR, tag, &e, sizeof(e));
}

static int conn_note_lease(struct layoutd_conn *c, uint32_t lease)
{
	int r = 0;

	pthread_mutex_lock(&c->d->lock);
	for (size_t i = 0; i < c->nleases; i++)
		if (c->leases[i] == lease)
			goto out;
	{
		void *grown = util_array_grow(c->leases, &c->cap_leases, c->nleases,
					      sizeof(*c->leases), 4);

		if (!grown) {
			r = -ENOMEM;
			goto out;
		}
		c->leases = grown;
		c->leases[c->nleases++] = lease;
	}
out:
	pthread_mutex_unlock(&c->d->lock);
	return r;
}

static void conn_forget_lease(struct layoutd_conn *c, uint32_t lease)
{
	pthread_mutex_lock(&c->d->lock);
	for (size_t i = 0; i < c->nleases; i++)
		if (c->leases[i] == lease)
			c->leases[i--] = c->leases[--c->nleases];
	pthread_mutex_unlock(&c->d->lock);
}

/* -- requests ----------------------------------------------------------------- */

/* The inode of fd, which must be a file of the mount. */
static int file_ino(struct layoutd *d, int fd, uint64_t *ret)
{
	struct statx stx;
	struct stat st;

	if (fd < 0)
		return -EBADF;
	if (!d->have_dev) {
		if (stat(d->mountpoint, &st) < 0)
			return -errno;
		d->dev = st.st_dev;
		d->have_dev = true;
	}
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO | STATX_TYPE, &stx) < 0)
		return -errno;
	if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != d->dev)
		return -EXDEV;
	*ret = stx.stx_ino;
	return 0;
}

/* The inode of a path from the mount's root (a TCP client's file), looked up as root. */
static int path_ino(struct layoutd *d, const uint8_t *path, size_t len, uint64_t *ret)
{
	struct vfs_ctx ctx = { .uid = 0, .gid = 0, .umask = 022 };
	struct vfs_entry e;
	char *p = malloc(len + 1);
	int r;

	if (!p)
		return -ENOMEM;
	memcpy(p, path, len);
	p[len] = '\0';
	r = memchr(path, '\0', len) ? -EINVAL : vfs_walk(d->fs, &ctx, p, &e);
	free(p);
	if (r < 0)
		return r;
	*ret = e.ino;
	/* vfs_walk's reference: the layout needs the inode only for this call. */
	if (e.ino != VFS_ROOT_INO)
		VFS_FORGET(d->fs, e.ino, 1);
	return 0;
}

static bool serve_layout(struct layoutd_conn *c, uint32_t tag, const struct layoutd_get *g,
			 int r, uint64_t ino)
{
	uint8_t *payload = c->out + sizeof(struct layoutd_hdr);
	struct vfs_layout l = {
		.offset = le64_to_cpu(g->offset), .length = le64_to_cpu(g->length),
		.lease = le32_to_cpu(g->lease),
		.extents = c->extents, .max_extents = LAYOUTD_MAX_EXTENTS,
		.csums = c->csums, .max_csums = LAYOUTD_MAX_CSUMS,
		.pieces = c->pieces, .max_pieces = LAYOUTD_MAX_PIECES,
	};
	size_t len;
	bool ok;

	if (r >= 0)
		r = VFS_CALL(c->d->fs, layout_map, ino, &l);
	if (r >= 0 && l.lease && conn_note_lease(c, l.lease) < 0) {
		uint32_t state;
		uint64_t ms;

		VFS_CALL(c->d->fs, layout_lease, l.lease, VFS_LEASE_RETURN, &state, &ms);
		r = -ENOMEM;
	}
	if (r < 0)
		return send_error(c, tag, -r);
	/* The page is encoded straight into the send buffer. */
	pthread_mutex_lock(&c->wlock);
	len = layoutd_layout_encode(&l, payload);
	ok = conn_send_locked(c, LAYOUTD_LAYOUT, tag, payload, len);
	pthread_mutex_unlock(&c->wlock);
	return ok;
}

static bool serve_lease(struct layoutd_conn *c, uint32_t tag, const struct layoutd_lease *q)
{
	struct layoutd_lease_state a = { 0 };
	uint32_t lease = le32_to_cpu(q->lease), op = le32_to_cpu(q->op), state = 0;
	uint64_t ms = 0;
	int r = VFS_CALL(c->d->fs, layout_lease, lease, op, &state, &ms);

	if (r < 0)
		return send_error(c, tag, -r);
	if (op == VFS_LEASE_RETURN)
		conn_forget_lease(c, lease);
	a.state = cpu_to_le32(state);
	a.lease_ms = cpu_to_le64(ms);
	return conn_send(c, LAYOUTD_LEASE_STATE, tag, &a, sizeof(a));
}

static bool serve_topology(struct layoutd_conn *c, uint32_t tag)
{
	struct vfs_layout_topology *t = malloc(sizeof(*t));
	uint8_t *payload = c->out + sizeof(struct layoutd_hdr);
	int r = t ? VFS_CALL(c->d->fs, layout_topology, t) : -ENOMEM;
	size_t len = 0;
	bool ok;

	if (r < 0) {
		free(t);
		return send_error(c, tag, -r);
	}
	pthread_mutex_lock(&c->wlock);
	len = layoutd_topology_encode(t, payload);
	ok = conn_send_locked(c, LAYOUTD_TOPOLOGY_IS, tag, payload, len);
	pthread_mutex_unlock(&c->wlock);
	free(t);
	return ok;
}

bool layoutd_conn_handle(struct layoutd_conn *c, const struct layoutd_hdr *h,
			 const uint8_t *payload, size_t len, int file_fd)
{
	uint32_t tag = le32_to_cpu(h->tag);
	uint64_t ino = 0;
	bool ok = false;
	int r;

	if (layoutd_hdr_check(h, len) < 0) {
		send_error(c, tag, EPROTO);
		return false;
	}
	switch (le16_to_cpu(h->type)) {
	case LAYOUTD_GET:
		if (len == sizeof(struct layoutd_get)) {
			struct layoutd_get g;

			memcpy(&g, payload, sizeof(g));
			r = file_ino(c->d, file_fd, &ino);
			ok = serve_layout(c, tag, &g, r, ino);
		}
		break;
	case LAYOUTD_GET_PATH:
		if (len > sizeof(struct layoutd_get_path)) {
			struct layoutd_get_path g;

			memcpy(&g, payload, sizeof(g));
			if (le32_to_cpu(g.path_len) != len - sizeof(g) ||
			    len - sizeof(g) > LAYOUTD_PATH_MAX)
				break;
			r = path_ino(c->d, payload + sizeof(g), len - sizeof(g), &ino);
			ok = serve_layout(c, tag, &g.get, r, ino);
		}
		break;
	case LAYOUTD_LEASE:
		if (len == sizeof(struct layoutd_lease)) {
			struct layoutd_lease q;

			memcpy(&q, payload, sizeof(q));
			ok = serve_lease(c, tag, &q);
		}
		break;
	case LAYOUTD_TOPOLOGY:
		ok = len == 0 && serve_topology(c, tag);
		break;
	default:
		break;
	}
	if (!ok)
		send_error(c, tag, EPROTO);
	return ok;
}

/* -- the Unix socket ---------------------------------------------------------- */

/* The descriptor a message carried (-1: none); any more are closed. */
static int take_fd(struct msghdr *mh)
{
	int fd = -1;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	return fd;
}

/* One packet from a Unix client; false: close it. */
static bool unix_serve_one(struct layoutd_conn *c)
{
	static _Thread_local uint8_t req[sizeof(struct layoutd_hdr) + LAYOUTD_MAX_REQUEST];
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { req, sizeof(req) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	int file_fd = n >= 0 ? take_fd(&mh) : -1;
	struct layoutd_hdr h;
	bool ok = false;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n >= (ssize_t)sizeof(h) && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		memcpy(&h, req, sizeof(h));
		ok = layoutd_conn_handle(c, &h, req + sizeof(h), (size_t)n - sizeof(h), file_fd);
	}
	if (file_fd >= 0)
		close(file_fd);
	return ok;
}

/* Tells the connection holding each recalled lease in the pipe. */
static void push_recalls(struct layoutd *d)
{
	le32 ids[64];
	ssize_t n;

	while ((n = read(d->recalls[0], ids, sizeof(ids))) > 0)
		for (ssize_t k = 0; k < n / (ssize_t)sizeof(ids[0]); k++) {
			uint32_t lease = le32_to_cpu(ids[k]);
			struct layoutd_recall rc = { .lease = ids[k] };
			struct layoutd_conn *to = NULL;

			pthread_mutex_lock(&d->lock);
			for (struct layoutd_conn *c = d->conns; c && !to; c = c->next)
				for (size_t j = 0; j < c->nleases && !to; j++)
					if (c->leases[j] == lease)
						to = c;
			/* Sent under d->lock: the connection cannot be freed meanwhile. */
			if (to && !conn_send(to, LAYOUTD_RECALL, 0, &rc, sizeof(rc)))
				shutdown(to->fd, SHUT_RDWR);
			pthread_mutex_unlock(&d->lock);
		}
}

static void unix_accept(struct layoutd *d, size_t nunix)
{
	int fd = accept4(d->unix_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (nunix >= MAX_UNIX_CONNS || !layoutd_conn_new(d, fd, false))
		close(fd);
}

static void *serve_main(void *arg)
{
	struct layoutd *d = arg;
	struct pollfd p[3 + MAX_UNIX_CONNS];
	struct layoutd_conn *who[MAX_UNIX_CONNS];

	for (;;) {
		size_t n = 0;

		p[0] = (struct pollfd){ .fd = d->stop_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = d->recalls[0], .events = POLLIN };
		p[2] = (struct pollfd){ .fd = d->unix_fd, .events = POLLIN };
		pthread_mutex_lock(&d->lock);
		for (struct layoutd_conn *c = d->conns; c && n < MAX_UNIX_CONNS; c = c->next)
			if (!c->stream) {
				who[n] = c;
				p[3 + n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
			}
		pthread_mutex_unlock(&d->lock);
		if (poll(p, 3 + n, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents)
			push_recalls(d);
		/* Unix clients are this thread's alone: it frees them. */
		for (size_t i = 0; i < n; i++)
			if (p[3 + i].revents && !unix_serve_one(who[i])) {
				layoutd_conn_unlink(who[i]);
				layoutd_conn_free(who[i]);
			}
		if (p[2].revents)
			unix_accept(d, n);
	}
	return NULL;
}

/* Binds path, replacing a socket file nobody listens on (a crashed daemon's). */
static int bind_path(int fd, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0;

		if (probe >= 0)
			close(probe);
		if (live)
			return -EADDRINUSE;
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 16) < 0)
		return -errno;
	return 0;
}

/* -- the daemon ------------------------------------------------------------------ */

static void layoutd_free(struct layoutd *d)
{
	while (d->conns) {
		struct layoutd_conn *c = d->conns;

		d->conns = c->next;
		layoutd_conn_free(c);
	}
	if (d->unix_fd >= 0) {
		close(d->unix_fd);
		unlink(d->path);
	}
	layoutd_tcp_free(d);
	for (int i = 0; i < 2; i++)
		if (d->recalls[i] >= 0)
			close(d->recalls[i]);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->tcp_gone);
	free(d->path);
	free(d->mountpoint);
	free(d);
}

int layoutd_open(struct vfs *fs, const char *path, const char *mountpoint,
		 struct layoutd **ret)
{
	struct layoutd *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->fs = fs;
	d->recalls[0] = d->recalls[1] = d->stop_fd = d->tcp_fd = d->unix_fd = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->tcp_gone, NULL);
	d->mountpoint = strdup(mountpoint);
	r = d->mountpoint ? 0 : -ENOMEM;
	if (r >= 0 && !fs->ops->layout_recall_watch)
		r = -EOPNOTSUPP;
	if (r >= 0 && path) {
		d->unix_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		d->path = strdup(path);
		r = d->unix_fd < 0 ? -errno : !d->path ? -ENOMEM : bind_path(d->unix_fd, path);
		if (r < 0 && d->unix_fd >= 0) {
			close(d->unix_fd);
			d->unix_fd = -1;        /* not ours to unlink */
		}
	}
	if (r >= 0) {
		d->stop_fd = eventfd(0, EFD_CLOEXEC);
		if (d->stop_fd < 0 || pipe2(d->recalls, O_CLOEXEC | O_NONBLOCK) < 0)
			r = -errno;
	}
	if (r < 0) {
		layoutd_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

int layoutd_start(struct layoutd *d)
{
	int r;

	d->fs->ops->layout_recall_watch(d->fs, on_recall, d);
	r = -pthread_create(&d->thread, NULL, serve_main, d);
	if (r < 0) {
		d->fs->ops->layout_recall_watch(d->fs, NULL, NULL);
		return r;
	}
	d->running = true;
	return layoutd_tcp_start(d);
}

void layoutd_stop(struct layoutd *d)
{
	uint64_t one = 1;

	if (!d)
		return;
	layoutd_tcp_stop(d);
	if (d->running) {
		/* An eventfd's write fails only on overflow, which one write cannot reach. */
		if (write(d->stop_fd, &one, sizeof(one)) != sizeof(one))
			abort();
		pthread_join(d->thread, NULL);
		d->fs->ops->layout_recall_watch(d->fs, NULL, NULL);
	}
	layoutd_free(d);
}
