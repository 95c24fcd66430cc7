/*
 * server.c - the layout control socket's daemon side (docs/layout.md
 * "Control socket"): one thread polls a Unix SOCK_SEQPACKET socket, its
 * clients, and a pipe on which the filesystem's recall callback drops the
 * leases it recalls. A GET arrives with the file's descriptor; its inode
 * (from the kernel's cached attributes: no round trip to this very
 * daemon) names the file, and its device must be the mount's. Each
 * connection remembers the leases it was given, to tell it of their recall
 * and to return them when it closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "pony/layoutd.h"

#define MAX_CONNS 64
#define REQUEST_MAX 64                  /* the largest request's payload */

struct conn {
	int fd;
	uint32_t *leases;
	size_t nleases, cap_leases;
};

struct layoutd {
	struct vfs *fs;
	char *path, *mountpoint;
	int listen_fd;
	int recalls[2];                 /* a pipe of le32 lease ids */
	int stop_fd;                    /* an eventfd */
	pthread_t thread;
	bool running;                   /* thread started */
	struct conn conns[MAX_CONNS];
	size_t nconns;
	dev_t dev;                      /* the mount's, found on the first GET */
	bool have_dev;
	uint8_t msg[sizeof(struct layoutd_hdr) + LAYOUTD_MAX_PAYLOAD];
	struct vfs_layout_extent extents[LAYOUTD_MAX_EXTENTS];
	uint32_t csums[LAYOUTD_MAX_CSUMS];
	struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
};

/* Runs under the filesystem's lock: queue the news, never block. */
static void on_recall(void *arg, uint32_t lease)
{
	struct layoutd *d = arg;
	le32 id = cpu_to_le32(lease);

	/* A full pipe loses the push; the holder's STATUS still says RECALLED. */
	if (write(d->recalls[1], &id, sizeof(id)) < 0)
		return;
}

/* Sends a message; false when the client cannot take it (it is dropped). */
static bool send_msg(int fd, enum layoutd_type type, uint32_t tag, const void *payload,
		     size_t len, uint8_t *scratch)
{
	struct layoutd_hdr h = layoutd_hdr_make(type, (uint32_t)len, tag);

	memcpy(scratch, &h, sizeof(h));
	if (payload != scratch + sizeof(h))
		memmove(scratch + sizeof(h), payload, len);
	return send(fd, scratch, sizeof(h) + len, MSG_DONTWAIT | MSG_NOSIGNAL) ==
	       (ssize_t)(sizeof(h) + len);
}

static bool send_error(struct layoutd *d, int fd, uint32_t tag, int err)
{
	struct layoutd_error e = { .err = cpu_to_le32((uint32_t)err) };

	return send_msg(fd, LAYOUTD_ERROR, tag, &e, sizeof(e), d->msg);
}

static void conn_forget_lease(struct conn *c, uint32_t lease)
{
	for (size_t i = 0; i < c->nleases; i++)
		if (c->leases[i] == lease)
			c->leases[i--] = c->leases[--c->nleases];
}

static int conn_note_lease(struct conn *c, uint32_t lease)
{
	void *grown;

	for (size_t i = 0; i < c->nleases; i++)
		if (c->leases[i] == lease)
			return 0;
	grown = util_array_grow(c->leases, &c->cap_leases, c->nleases, sizeof(*c->leases), 4);
	if (!grown)
		return -ENOMEM;
	c->leases = grown;
	c->leases[c->nleases++] = lease;
	return 0;
}

/* Closes connection i and returns the leases it held. */
static void conn_close(struct layoutd *d, size_t i)
{
	struct conn *c = &d->conns[i];

	for (size_t k = 0; k < c->nleases; k++) {
		uint32_t state;
		uint64_t ms;

		VFS_CALL(d->fs, layout_lease, c->leases[k], VFS_LEASE_RETURN, &state, &ms);
	}
	free(c->leases);
	close(c->fd);
	d->conns[i] = d->conns[--d->nconns];
}

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

static bool serve_get(struct layoutd *d, struct conn *c, uint32_t tag,
		      const struct layoutd_get *g, int file_fd)
{
	uint8_t *payload = d->msg + sizeof(struct layoutd_hdr);
	struct vfs_layout l = {
		.offset = le64_to_cpu(g->offset), .length = le64_to_cpu(g->length),
		.lease = le32_to_cpu(g->lease),
		.extents = d->extents, .max_extents = LAYOUTD_MAX_EXTENTS,
		.csums = d->csums, .max_csums = LAYOUTD_MAX_CSUMS,
		.pieces = d->pieces, .max_pieces = LAYOUTD_MAX_PIECES,
	};
	uint64_t ino = 0;
	int r = file_ino(d, file_fd, &ino);

	if (r >= 0)
		r = VFS_CALL(d->fs, layout_map, ino, &l);
	if (r >= 0 && l.lease && conn_note_lease(c, l.lease) < 0) {
		uint32_t state;
		uint64_t ms;

		VFS_CALL(d->fs, layout_lease, l.lease, VFS_LEASE_RETURN, &state, &ms);
		r = -ENOMEM;
	}
	if (r < 0)
		return send_error(d, c->fd, tag, -r);
	return send_msg(c->fd, LAYOUTD_LAYOUT, tag, payload, layoutd_layout_encode(&l, payload),
			d->msg);
}

static bool serve_lease(struct layoutd *d, struct conn *c, uint32_t tag,
			const struct layoutd_lease *q)
{
	struct layoutd_lease_state a = { 0 };
	uint32_t lease = le32_to_cpu(q->lease), op = le32_to_cpu(q->op), state = 0;
	uint64_t ms = 0;
	int r = VFS_CALL(d->fs, layout_lease, lease, op, &state, &ms);

	if (r < 0)
		return send_error(d, c->fd, tag, -r);
	if (op == VFS_LEASE_RETURN)
		conn_forget_lease(c, lease);
	a.state = cpu_to_le32(state);
	a.lease_ms = cpu_to_le64(ms);
	return send_msg(c->fd, LAYOUTD_LEASE_STATE, tag, &a, sizeof(a), d->msg);
}

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

/* One request from connection i; false: close it (gone or broke the protocol). */
static bool serve_one(struct layoutd *d, size_t i)
{
	struct conn *c = &d->conns[i];
	uint8_t req[sizeof(struct layoutd_hdr) + REQUEST_MAX];
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
	size_t len;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n < (ssize_t)sizeof(h) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		goto out;
	memcpy(&h, req, sizeof(h));
	len = (size_t)n - sizeof(h);
	if (layoutd_hdr_check(&h, len) < 0) {
		send_error(d, c->fd, le32_to_cpu(h.tag), EPROTO);
		goto out;
	}
	switch (le16_to_cpu(h.type)) {
	case LAYOUTD_GET:
		if (len == sizeof(struct layoutd_get)) {
			struct layoutd_get g;

			memcpy(&g, req + sizeof(h), sizeof(g));
			ok = serve_get(d, c, le32_to_cpu(h.tag), &g, file_fd);
		}
		break;
	case LAYOUTD_LEASE:
		if (len == sizeof(struct layoutd_lease)) {
			struct layoutd_lease q;

			memcpy(&q, req + sizeof(h), sizeof(q));
			ok = serve_lease(d, c, le32_to_cpu(h.tag), &q);
		}
		break;
	default:
		break;
	}
	if (!ok)
		send_error(d, c->fd, le32_to_cpu(h.tag), EPROTO);
out:
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

			for (size_t i = 0; i < d->nconns; i++)
				for (size_t j = 0; j < d->conns[i].nleases; j++)
					if (d->conns[i].leases[j] == lease &&
					    !send_msg(d->conns[i].fd, LAYOUTD_RECALL, 0, &rc,
						      sizeof(rc), d->msg))
						shutdown(d->conns[i].fd, SHUT_RDWR);
		}
}

static void accept_one(struct layoutd *d)
{
	int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (d->nconns == MAX_CONNS) {
		close(fd);
		return;
	}
	d->conns[d->nconns++] = (struct conn){ .fd = fd };
}

static void *serve_main(void *arg)
{
	struct layoutd *d = arg;
	struct pollfd p[3 + MAX_CONNS];

	for (;;) {
		size_t n = d->nconns;

		p[0] = (struct pollfd){ .fd = d->stop_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = d->recalls[0], .events = POLLIN };
		p[2] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
		for (size_t i = 0; i < n; i++)
			p[3 + i] = (struct pollfd){ .fd = d->conns[i].fd, .events = POLLIN };
		if (poll(p, 3 + n, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents)
			push_recalls(d);
		/* From the last, so closing one (the last moves into its slot) skips none. */
		for (size_t i = n; i-- > 0;)
			if (p[3 + i].revents && !serve_one(d, i))
				conn_close(d, i);
		if (p[2].revents)
			accept_one(d);
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

static void layoutd_free(struct layoutd *d)
{
	while (d->nconns)
		conn_close(d, d->nconns - 1);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->path);
	}
	for (int i = 0; i < 2; i++)
		if (d->recalls[i] >= 0)
			close(d->recalls[i]);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
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
	d->recalls[0] = d->recalls[1] = d->stop_fd = -1;
	if (!fs->ops->layout_recall_watch) {
		d->listen_fd = -1;
		r = -EOPNOTSUPP;
		goto fail;
	}
	d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	d->path = strdup(path);
	d->mountpoint = strdup(mountpoint);
	if (d->listen_fd < 0 || !d->path || !d->mountpoint) {
		r = d->listen_fd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	r = bind_path(d->listen_fd, path);
	if (r < 0) {
		close(d->listen_fd);
		d->listen_fd = -1;      /* not ours to unlink */
		goto fail;
	}
	d->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (d->stop_fd < 0 || pipe2(d->recalls, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	*ret = d;
	return 0;
fail:
	layoutd_free(d);
	return r;
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
	return 0;
}

void layoutd_stop(struct layoutd *d)
{
	uint64_t one = 1;

	if (!d)
		return;
	if (d->running) {
		/* An eventfd's write fails only on overflow, which one write cannot reach. */
		if (write(d->stop_fd, &one, sizeof(one)) != sizeof(one))
			abort();
		pthread_join(d->thread, NULL);
		d->fs->ops->layout_recall_watch(d->fs, NULL, NULL);
	}
	layoutd_free(d);
}
