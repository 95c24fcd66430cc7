/*
 * nbd.c - a bdev on an NBD export (nbd://, nbds://, nbd+unix://), through
 * libnbd's asynchronous API: a volume's members may live on other
 * machines, served by nbdkit, qemu-nbd or nbd-server, with no kernel module.
 *
 * Requests are issued from the submitting thread (libnbd sends at once
 * when the socket takes it); one poll thread per device drives the
 * connections' state machines and runs the completions, as acall's
 * reapers do for files. When the server advertises multi-conn, several
 * connections carry the requests round robin.
 *
 * Ordering: a write completes when the server acknowledged it; bdev_flush
 * sends NBD_CMD_FLUSH (on one connection: with multi-conn the protocol
 * makes a flush cover the writes completed on every connection). A server
 * without flush but with FUA gets every write with FUA, so that a
 * completed write is durable; one with neither has no cache to flush.
 *
 * Fork: `pony mount` opens its members, then daemonizes, and a fork keeps
 * only the calling thread; the first request in a forked child starts the
 * device's poll thread again (the parent's was idle in poll(), holding no
 * lock, as nothing is in flight when a daemon forks).
 *
 * Failure: a lost connection or a request older than the timeout kills
 * the device (its sockets are shut down, libnbd fails what was in flight)
 * and every later request fails with -ENODEV, which a volume takes as a
 * failed member. An error the server returns for one request (EIO) is
 * that request's result.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nbd_lib.h"
#include "pony/bdev.h"
#include "pony/util.h"

#define NBDEV_MAX_CONNS 4
#define NBDEV_MAX_REQUEST (32u << 20)     /* without a server maximum */
#define NBDEV_DEFAULT_TIMEOUT_MS 30000

/* One bdev_io in flight, split into parts (libnbd requests). */
struct nbdev_cmd {
	struct bdev_io *io;
	unsigned parts;                 /* requests not completed, +1 while issuing */
	int err;
	uint64_t deadline_ns;
	struct nbdev_cmd *prev, *next;    /* the in-flight list, oldest first */
	struct nbdev_cmd *done_next;      /* the completed list */
};

/* Everything below lock is protected by it. */
struct bdev_nbd {
	struct bdev b;
	unsigned nconns;
	struct nbd_handle *conn[NBDEV_MAX_CONNS];
	unsigned timeout_ms;
	uint32_t write_flags;           /* FUA when the server flushes no other way */
	bool can_flush, can_trim;
	size_t max_request;
	pthread_t thread;
	unsigned thread_gen;            /* nbdev_fork_gen when thread was started */
	int wake_fd;
	pthread_mutex_t lock;
	struct nbdev_cmd *oldest, *newest;
	struct nbdev_cmd *done;
	unsigned next_conn;
	bool dead, stopping;
};

static unsigned nbdev_fork_gen;         /* forks so far */
static pthread_mutex_t nbdev_fork_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t nbdev_fork_once = PTHREAD_ONCE_INIT;

static void nbdev_forked(void)
{
	__atomic_add_fetch(&nbdev_fork_gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_init(&nbdev_fork_lock, NULL);
}

static void nbdev_fork_watch(void)
{
	pthread_atfork(NULL, NULL, nbdev_forked);
}

static void *nbdev_poller(void *arg);

/* In a forked child, the first request starts the poll thread again. */
static void nbdev_after_fork(struct bdev_nbd *n)
{
	unsigned gen = __atomic_load_n(&nbdev_fork_gen, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&n->thread_gen, __ATOMIC_ACQUIRE) == gen)
		return;
	pthread_mutex_lock(&nbdev_fork_lock);
	if (n->thread_gen != gen) {
		pthread_mutex_init(&n->lock, NULL);
		if (pthread_create(&n->thread, NULL, nbdev_poller, n) == 0)
			__atomic_store_n(&n->thread_gen, gen, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&nbdev_fork_lock);
}

bool bdev_name_is_nbd(const char *name)
{
	return !strncmp(name, "nbd://", 6) || !strncmp(name, "nbds://", 7) ||
	       !strncmp(name, "nbd+unix://", 11) || !strncmp(name, "nbds+unix://", 12);
}

static void nbdev_wake(struct bdev_nbd *n)
{
	uint64_t one = 1;

	if (write(n->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is full: the poller is awake anyway */
	}
}

/* Called with lock held: cmd leaves the in-flight list for the completed one. */
static void cmd_finish_locked(struct bdev_nbd *n, struct nbdev_cmd *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		n->oldest = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		n->newest = c->prev;
	c->done_next = n->done;
	n->done = c;
}

/* One part is over with error err (0: done). Runs under libnbd's handle lock. */
static void cmd_part_done(struct bdev_nbd *n, struct nbdev_cmd *c, int err)
{
	pthread_mutex_lock(&n->lock);
	if (err && !c->err)
		c->err = err;
	if (--c->parts == 0)
		cmd_finish_locked(n, c);
	pthread_mutex_unlock(&n->lock);
}

struct nbdev_part {
	struct bdev_nbd *n;
	struct nbdev_cmd *c;
};

static int part_callback(void *arg, int *error)
{
	struct nbdev_part *p = arg;

	cmd_part_done(p->n, p->c, *error ? -*error : 0);
	free(p);
	return 1;               /* retire the request: its result is taken */
}

/* Runs the completed requests' done() outside every lock. */
static void nbdev_run_done(struct bdev_nbd *n)
{
	struct nbdev_cmd *c, *next;
	bool dead;

	pthread_mutex_lock(&n->lock);
	c = n->done;
	n->done = NULL;
	dead = n->dead;
	pthread_mutex_unlock(&n->lock);
	for (; c; c = next) {
		struct bdev_io *io = c->io;

		next = c->done_next;
		/* Whatever libnbd says of a request the connection died under,
		 * the device is gone: the volume must fail the member. */
		io->result = c->err && dead ? -ENODEV : c->err;
		free(c);
		if (io->done)
			io->done(io);
	}
}

/* The device is gone: no new requests, and libnbd fails the ones in flight. */
static void nbdev_kill_locked(struct bdev_nbd *n)
{
	if (n->dead)
		return;
	n->dead = true;
	for (unsigned i = 0; i < n->nconns; i++) {
		int fd = nbd_aio_get_fd(n->conn[i]);

		if (fd >= 0)
			shutdown(fd, SHUT_RDWR);
	}
}

static int nbdev_issue(struct bdev_nbd *n, struct nbd_handle *h, struct nbdev_cmd *c, uint64_t off,
		     size_t len)
{
	struct nbdev_part *p = malloc(sizeof(*p));
	struct bdev_io *io = c->io;
	nbd_completion_callback cb = { .callback = part_callback, .user_data = p };
	uint8_t *buf = io->buf ? (uint8_t *)io->buf + (off - io->off) : NULL;
	int64_t r;

	if (!p)
		return -ENOMEM;
	*p = (struct nbdev_part){ .n = n, .c = c };
	switch (io->op) {
	case BDEV_READ: r = nbd_aio_pread(h, buf, len, off, cb, 0); break;
	case BDEV_WRITE: r = nbd_aio_pwrite(h, buf, len, off, cb, n->write_flags); break;
	case BDEV_DISCARD: r = nbd_aio_trim(h, len, off, cb, 0); break;
	default: r = nbd_aio_flush(h, cb, 0); break;
	}
	if (r < 0) {
		/* Not queued: libnbd never calls the callback. */
		int e = nbd_get_errno();

		free(p);
		return e ? -e : -EIO;
	}
	return 0;
}

static void nbdev_complete_now(struct bdev_io *io, int result)
{
	io->result = result;
	if (io->done)
		io->done(io);
}

static void nbdev_submit(struct bdev *b, struct bdev_io *io)
{
	struct bdev_nbd *n = (struct bdev_nbd *)b;
	struct nbdev_cmd *c;
	uint64_t off = io->off, end = io->off + io->len;
	bool wake = false;
	unsigned conn;
	int err = 0;

	nbdev_after_fork(n);
	if ((io->op == BDEV_FLUSH && !n->can_flush) || (io->op != BDEV_FLUSH && !io->len))
		return nbdev_complete_now(io, 0);
	if (io->op == BDEV_DISCARD && !n->can_trim)
		return nbdev_complete_now(io, -EOPNOTSUPP);
	c = calloc(1, sizeof(*c));
	if (!c)
		return nbdev_complete_now(io, -ENOMEM);
	c->io = io;
	c->parts = 1;
	c->deadline_ns = util_now_ns() + (uint64_t)n->timeout_ms * 1000000u;
	pthread_mutex_lock(&n->lock);
	if (n->dead) {
		pthread_mutex_unlock(&n->lock);
		free(c);
		return nbdev_complete_now(io, -ENODEV);
	}
	c->prev = n->newest;
	if (n->newest) {
		n->newest->next = c;
	} else {
		n->oldest = c;
		wake = true;    /* the poller sleeps without a deadline: give it this one */
	}
	n->newest = c;
	conn = n->next_conn++ % n->nconns;
	pthread_mutex_unlock(&n->lock);
	do {
		size_t len = (size_t)MIN((uint64_t)n->max_request, end - off);
		struct nbd_handle *h = n->conn[conn];

		pthread_mutex_lock(&n->lock);
		c->parts++;
		pthread_mutex_unlock(&n->lock);
		err = nbdev_issue(n, h, c, off, len);
		if (err < 0) {
			cmd_part_done(n, c, err);
			break;
		}
		if (nbd_aio_get_direction(h) & LIBNBD_AIO_DIRECTION_WRITE)
			wake = true;            /* a request still to send: the poller waits for POLLOUT */
		off += len;
		conn = (conn + 1) % n->nconns;
	} while (off < end);
	cmd_part_done(n, c, 0);
	pthread_mutex_lock(&n->lock);
	wake |= n->done != NULL;
	pthread_mutex_unlock(&n->lock);
	if (wake)
		nbdev_wake(n);
}

/* The poll timeout: until the oldest request's deadline, else none. */
static int nbdev_poll_timeout(struct bdev_nbd *n)
{
	uint64_t now = util_now_ns();
	int ms = -1;

	pthread_mutex_lock(&n->lock);
	if (n->oldest && !n->dead)
		ms = n->oldest->deadline_ns <= now ? 0 : (int)((n->oldest->deadline_ns - now) / 1000000u + 1);
	pthread_mutex_unlock(&n->lock);
	return ms;
}

static void nbdev_check_deadline(struct bdev_nbd *n)
{
	uint64_t now = util_now_ns();

	pthread_mutex_lock(&n->lock);
	if (n->oldest && n->oldest->deadline_ns <= now)
		nbdev_kill_locked(n);
	pthread_mutex_unlock(&n->lock);
}

/* One round of the connections' state machines after poll() said what is ready. */
static void nbdev_notify(struct bdev_nbd *n, const struct pollfd *pfd)
{
	for (unsigned i = 0; i < n->nconns; i++) {
		struct nbd_handle *h = n->conn[i];
		int r = 0;

		if (pfd[i].fd < 0)
			continue;
		if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
			r = nbd_aio_notify_read(h);
		else if (pfd[i].revents & POLLOUT)
			r = nbd_aio_notify_write(h);
		if (r < 0 || nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
			pthread_mutex_lock(&n->lock);
			nbdev_kill_locked(n);
			pthread_mutex_unlock(&n->lock);
		}
	}
}

static void *nbdev_poller(void *arg)
{
	struct bdev_nbd *n = arg;
	struct pollfd pfd[NBDEV_MAX_CONNS + 1];

	for (;;) {
		uint64_t count;
		bool stop;

		pthread_mutex_lock(&n->lock);
		stop = n->stopping;
		pthread_mutex_unlock(&n->lock);
		if (stop)
			break;
		for (unsigned i = 0; i < n->nconns; i++) {
			unsigned dir = (unsigned)nbd_aio_get_direction(n->conn[i]);
			int fd = nbd_aio_get_fd(n->conn[i]);

			pfd[i] = (struct pollfd){
				.fd = nbd_aio_is_dead(n->conn[i]) || nbd_aio_is_closed(n->conn[i]) ? -1 : fd,
				.events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
						  (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0)),
			};
		}
		pfd[n->nconns] = (struct pollfd){ .fd = n->wake_fd, .events = POLLIN };
		if (poll(pfd, n->nconns + 1, nbdev_poll_timeout(n)) < 0 && errno != EINTR)
			break;
		if (pfd[n->nconns].revents & POLLIN && read(n->wake_fd, &count, sizeof(count)) < 0) {
			/* EAGAIN: another round already took it */
		}
		nbdev_notify(n, pfd);
		nbdev_check_deadline(n);
		nbdev_run_done(n);
	}
	return NULL;
}

/* Synchronous calls: a request, waited for. */
struct nbdev_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool over;
};

static void nbdev_wait_done(struct bdev_io *io)
{
	struct nbdev_wait *w = io->data;

	pthread_mutex_lock(&w->lock);
	w->over = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int nbdev_run(struct bdev *b, enum bdev_op op, void *buf, size_t len, uint64_t off)
{
	struct nbdev_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct bdev_io io = { .op = op, .buf = buf, .len = len, .off = off, .done = nbdev_wait_done,
			      .data = &w };

	nbdev_submit(b, &io);
	pthread_mutex_lock(&w.lock);
	while (!w.over)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	return io.result;
}

static int nbdev_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return nbdev_run(b, BDEV_READ, buf, len, off);
}

static int nbdev_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return nbdev_run(b, BDEV_WRITE, (void *)buf, len, off);
}

static int nbdev_flush(struct bdev *b)
{
	return nbdev_run(b, BDEV_FLUSH, NULL, 0, 0);
}

static int nbdev_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	return len > SIZE_MAX ? -EINVAL : nbdev_run(b, BDEV_DISCARD, NULL, (size_t)len, off);
}

static void nbdev_conns_close(struct bdev_nbd *n)
{
	for (unsigned i = 0; i < n->nconns; i++) {
		if (nbd_aio_is_ready(n->conn[i]))
			nbd_aio_disconnect(n->conn[i], 0);      /* a polite NBD_CMD_DISC, not waited for */
		nbd_close(n->conn[i]);
	}
	n->nconns = 0;
}

static void nbdev_free(struct bdev *b)
{
	struct bdev_nbd *n = (struct bdev_nbd *)b;

	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	pthread_mutex_unlock(&n->lock);
	nbdev_wake(n);
	/* A child that forked and made no request since has no poll thread. */
	if (n->thread_gen == __atomic_load_n(&nbdev_fork_gen, __ATOMIC_ACQUIRE))
		pthread_join(n->thread, NULL);
	nbdev_conns_close(n);
	close(n->wake_fd);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

static const struct bdev_ops nbdev_ops = {
	.name = "nbd",
	.pread = nbdev_pread,
	.pwrite = nbdev_pwrite,
	.flush = nbdev_flush,
	.discard = nbdev_discard,
	.free = nbdev_free,
	.submit = nbdev_submit,
};

/* libnbd's message for the last failure on this thread, into why; returns -errno. */
static int nbdev_failed(const char *what, char *why, size_t why_size)
{
	int e = nbd_get_errno();

	if (why && why_size)
		snprintf(why, why_size, "%s: %s", what, nbd_get_error() ?: strerror(e ? e : EIO));
	return e ? -e : -EIO;
}

/* One connection to uri, ready for requests within timeout_ms. */
static int nbdev_connect(const char *uri, unsigned timeout_ms, struct nbd_handle **ret, char *why,
		       size_t why_size)
{
	struct nbd_handle *h = nbd_create();
	uint64_t deadline = util_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int r = 0;

	if (!h)
		return nbdev_failed("cannot make a libnbd handle", why, why_size);
	/* The URI is the user's own: its tls-psk-file and tls-certificates are allowed. */
	if (nbd_set_uri_allow_local_file(h, true) < 0 || nbd_aio_connect_uri(h, uri) < 0)
		r = nbdev_failed("cannot connect", why, why_size);
	while (!r && !nbd_aio_is_ready(h)) {
		uint64_t now = util_now_ns();

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
			r = nbdev_failed("cannot connect", why, why_size);
		} else if (now >= deadline) {
			r = -ETIMEDOUT;
			if (why && why_size)
				snprintf(why, why_size, "no answer from the server within %u ms", timeout_ms);
		} else if (nbd_poll(h, (int)((deadline - now) / 1000000u + 1)) < 0) {
			r = nbdev_failed("cannot connect", why, why_size);
		}
	}
	if (r < 0) {
		nbd_close(h);
		return r;
	}
	*ret = h;
	return 0;
}

/* What the first connection learnt of the export. */
static int nbdev_learn(struct bdev_nbd *n, bool rdwr, char *why, size_t why_size)
{
	struct nbd_handle *h = n->conn[0];
	int64_t size = nbd_get_size(h);
	int64_t min = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
	int64_t max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);

	if (size < 0)
		return nbdev_failed("cannot get the export's size", why, why_size);
	if (rdwr && nbd_is_read_only(h) == 1) {
		if (why && why_size)
			snprintf(why, why_size, "the server exports it read-only");
		return -EROFS;
	}
	n->b.size = (uint64_t)size;
	n->b.block_size = min > 512 ? (unsigned)min : 512;
	n->max_request = max > 0 && (uint64_t)max < NBDEV_MAX_REQUEST ? (size_t)max : NBDEV_MAX_REQUEST;
	n->can_flush = nbd_can_flush(h) == 1;
	n->can_trim = rdwr && nbd_can_trim(h) == 1;
	if (!n->can_flush && nbd_can_fua(h) == 1)
		n->write_flags = LIBNBD_CMD_FLAG_FUA;
	return 0;
}

void bdev_nbd_name(const char *uri, char *buf, size_t cap)
{
	/* Messages name the server and export; a TCP URI's query holds only
	 * TLS settings (a key file's path), which they need not repeat. */
	snprintf(buf, cap, "%.*s", strstr(uri, "+unix://") ? (int)strlen(uri) :
		 (int)strcspn(uri, "?"), uri);
}

int bdev_nbd_open(const char *uri, const struct bdev_open_params *p, struct bdev **ret)
{
	struct bdev_nbd *n = calloc(1, sizeof(*n));
	unsigned timeout = p->timeout_ms ? p->timeout_ms : NBDEV_DEFAULT_TIMEOUT_MS;
	bool rdwr = (p->flags & O_ACCMODE) != O_RDONLY;
	int r;

	r = nbd_lib_load(p->why, p->why_size);
	if (r < 0 || !n) {
		free(n);
		return r < 0 ? r : -ENOMEM;
	}
	n->b.ops = &nbdev_ops;
	n->timeout_ms = timeout;
	bdev_nbd_name(uri, n->b.name, sizeof(n->b.name));
	pthread_mutex_init(&n->lock, NULL);
	n->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r = n->wake_fd < 0 ? -errno : nbdev_connect(uri, timeout, &n->conn[0], p->why, p->why_size);
	if (r >= 0) {
		n->nconns = 1;
		r = nbdev_learn(n, rdwr, p->why, p->why_size);
	}
	/* More connections only where the server says they see one another's writes. */
	if (r >= 0 && nbd_can_multi_conn(n->conn[0]) == 1)
		while (n->nconns < NBDEV_MAX_CONNS &&
		       nbdev_connect(uri, timeout, &n->conn[n->nconns], NULL, 0) == 0)
			n->nconns++;
	pthread_once(&nbdev_fork_once, nbdev_fork_watch);
	n->thread_gen = __atomic_load_n(&nbdev_fork_gen, __ATOMIC_ACQUIRE);
	if (r >= 0)
		r = -pthread_create(&n->thread, NULL, nbdev_poller, n);
	if (r < 0) {
		nbdev_conns_close(n);
		if (n->wake_fd >= 0)
			close(n->wake_fd);
		pthread_mutex_destroy(&n->lock);
		free(n);
		return r;
	}
	*ret = &n->b;
	return 0;
}

unsigned bdev_nbd_connections(const struct bdev *b)
{
	return b->ops == &nbdev_ops ? ((const struct bdev_nbd *)b)->nconns : 0;
}
