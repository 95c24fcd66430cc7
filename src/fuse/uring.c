/*
 * uring.c - FUSE over io_uring (Linux 6.14+), the front end's second
 * transport. Each request on /dev/fuse costs two cross-CPU wakeups: the
 * kernel wakes a daemon thread on whatever CPU it slept on, and the answer
 * wakes the caller again; on an idle VM both land on halted vCPUs, ~110 us
 * a round trip. With io_uring the kernel keeps one queue per CPU and hands
 * a request made on CPU n to queue n, whose thread here is pinned to CPU n:
 * the caller sleeps and the daemon runs on the same CPU, and the answer
 * wakes the caller there.
 *
 * Wire format: uring_abi.h and docs/fuse-uring.md. The INIT reply (devio.c)
 * asks for it when the options want it and the kernel offered it (only with
 * the fuse module's enable_uring on); then every queue registers DEPTH
 * entries, and once all have, the kernel sends requests over the rings
 * instead of /dev/fuse. FORGET, BATCH_FORGET and INTERRUPT still come
 * through /dev/fuse (libfuse's loop keeps reading it), as do notifications
 * the daemon sends.
 *
 * A request is rebuilt as /dev/fuse would have delivered it (in header,
 * opcode header, payload, contiguous: the payload buffer has room before
 * it) and given to libfuse's fuse_session_process_buf() on the ring
 * thread; libfuse answers through devio.c's writev (or splice_send) hook on
 * that same thread, which hands the answer here by its unique id, and the
 * thread commits it and fetches the next request in one command.
 *
 * A large READ is answered by one of the read helpers instead (readpool.c:
 * ponyfuse_uring_defer()), as over /dev/fuse: the kernel's readahead hands
 * all of a sequential reader's READs to the one queue of its CPU, whose
 * thread answered them one after the other, each READ's work (a stream
 * buffer's checks, a decryption, the copies) in series. The helper adopts
 * the entry (its answer lands in the entry's buffers, as here), and marks
 * it done; the queue's thread, woken by a read of an eventfd it keeps on
 * its ring (only it may submit there), commits it and fetches the next
 * request. Cold 1 GiB reads on this 2-CPU VM (BENCHMARKS.md, session 44,
 * three turns each): answered on the ring thread, an AES-256-XTS file at
 * 1.03-1.17 GB/s and a GCM one at 1.05-1.14; by the helpers, 1.26-1.36
 * and 1.28-1.62 (a plain file's, whose stream buffers the answer is
 * copied from with no other work, 1.43-1.80 against 1.47-1.77).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"
#include "uring_abi.h"

#define UR_DEPTH 4                      /* entries per queue */
#define UR_ROOM 4096                    /* bytes before the payload: in header
					 * and opcode header, rebuilt there; a page,
					 * so the payload is page aligned (O_DIRECT
					 * preads into it; the kernel copies it a
					 * page at a time) */
#define UR_STOP_TAG UINT64_MAX          /* user_data of the stop eventfd's poll */
#define UR_DONE_TAG (UINT64_MAX - 1)    /* ... of the read of a queue's done eventfd */

_Static_assert(UR_DEPTH <= 32, "a queue's done entries are bits of a uint32_t");

struct ur_queue;

struct ur_ent {
	struct ur_queue *q;
	struct ponyfuse_uring_header *hdr;
	char *buf;                      /* UR_ROOM + payload bytes */
	struct iovec iov[2];            /* header, payload: what REGISTER passes */
	uint64_t unique;                /* the request being served */
	bool replied;
	bool deferred;                  /* answered by another thread (ponyfuse_uring_defer) */
	bool live;                      /* registered, not yet cancelled */
};

struct ur_queue {
	struct ponyfuse_uring *ur;
	unsigned qid;
	pthread_t thread;
	bool started;
	bool ring_ok;                   /* ring set up */
	struct io_uring ring;
	struct ur_ent ents[UR_DEPTH];
	int done_fd;                    /* eventfd: a deferred entry was answered */
	uint64_t done_count;            /* what its poll's read takes */
	pthread_mutex_t done_lock;
	uint32_t done;                  /* bit i: entry i answered elsewhere, to commit */
};

struct ponyfuse_uring {
	struct ponyfuse *pf;
	int fuse_fd;
	int stop_fd;                    /* eventfd: written once to stop every queue */
	size_t payload;                 /* payload buffer size, the kernel's minimum */
	unsigned nqueues;
	atomic_uint failed;             /* queues or entries that could not register */
	struct ur_queue q[];
};

/* The entry whose request this thread is serving, if any. */
static _Thread_local struct ur_ent *ur_cur;

/* The kernel's queue count: num_possible_cpus(), from "0-N" (or "0"). */
static unsigned possible_cpus(void)
{
	_cleanup_(fclosep) FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned lo = 0, hi = 0;

	if (!f)
		return 0;
	switch (fscanf(f, "%u-%u", &lo, &hi)) {
	case 1: return lo + 1;
	case 2: return hi + 1;
	default: return 0;
	}
}

static struct io_uring_sqe *ur_sqe(struct ur_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {                     /* full: hand the queued ones over first */
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
	}
	return sqe;
}

/* Fills a 128-byte SQE with /dev/fuse command op; REGISTER passes iov
 * (header and payload buffer), COMMIT_AND_FETCH none. */
static void ur_prep(struct io_uring_sqe *sqe, int fuse_fd, uint32_t op,
		    const struct iovec *iov, const struct ponyfuse_uring_cmd *cmd)
{
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fuse_fd;
	sqe->cmd_op = op;
	if (iov) {
		sqe->addr = (uint64_t)(uintptr_t)iov;
		sqe->len = 2;
	}
	memcpy(sqe->cmd, cmd, sizeof(*cmd));
}

/* A REGISTER or COMMIT_AND_FETCH command of entry e. */
static int ur_cmd(struct ur_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = ur_sqe(e->q);
	struct ponyfuse_uring_cmd cmd = { .commit_id = commit_id, .qid = (uint16_t)e->q->qid };

	if (!sqe)
		return -EBUSY;
	ur_prep(sqe, e->q->ur->fuse_fd, op, op == PONYFUSE_URING_CMD_REGISTER ? e->iov : NULL,
		&cmd);
	io_uring_sqe_set_data64(sqe, (uint64_t)(e - e->q->ents));
	return 0;
}

/* An answer carrying only an error (the request was malformed or libfuse
 * sent none), so the kernel's caller never waits forever. */
static void ur_reply_error(struct ur_ent *e, int err)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = -err, .unique = e->unique };

	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ent.payload_sz = 0;
	e->replied = true;
}

/* Serves e's request; false when another thread answers it (deferred):
 * then it is committed once that one is done (ur_commit_done). */
static bool ur_serve(struct ur_ent *e)
{
	struct ponyfuse *pf = e->q->ur->pf;
	struct fuse_in_header in;
	size_t psz = e->hdr->ent.payload_sz, oplen;
	char *start, *payload = e->buf + UR_ROOM;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	e->unique = in.unique;
	e->replied = false;
	e->deferred = false;
	if (psz > e->q->ur->payload || in.len < sizeof(in) + psz ||
	    in.len - sizeof(in) - psz > PONYFUSE_URING_OP_SZ) {
		ur_reply_error(e, EIO);
		return true;
	}
	oplen = in.len - sizeof(in) - psz;
	start = payload - oplen - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), e->hdr->op_in, oplen);
	atomic_fetch_add_explicit(&pf->uring_requests, 1, memory_order_relaxed);
	ponyfuse_devio_note(pf, start, in.len);
	ur_cur = e;
	fuse_session_process_buf(pf->se, &(struct fuse_buf){ .size = in.len, .mem = start });
	ur_cur = NULL;
	if (e->deferred)
		return false;
	if (!e->replied)
		ur_reply_error(e, EIO);
	return true;
}

struct ponyfuse_uring_ent *ponyfuse_uring_defer(void)
{
	if (!ponyfuse_uring_serving())
		return NULL;
	ur_cur->deferred = true;
	return (struct ponyfuse_uring_ent *)ur_cur;
}

void ponyfuse_uring_adopt(struct ponyfuse_uring_ent *ent)
{
	ur_cur = (struct ur_ent *)ent;
}

void ponyfuse_uring_finish(struct ponyfuse_uring_ent *ent)
{
	struct ur_ent *e = (struct ur_ent *)ent;
	struct ur_queue *q = e->q;
	uint64_t one = 1;

	ur_cur = NULL;
	if (!e->replied)
		ur_reply_error(e, EIO);
	pthread_mutex_lock(&q->done_lock);
	q->done |= 1u << (e - q->ents);
	pthread_mutex_unlock(&q->done_lock);
	if (write(q->done_fd, &one, sizeof(one)) < 0) {
		/* Only on overflow: the queue's thread has a wake-up pending. */
	}
}

/* A read of q's done eventfd on its ring: completes once a helper has
 * finished an entry (ponyfuse_uring_finish()). */
static int ur_done_poll(struct ur_queue *q)
{
	struct io_uring_sqe *sqe = ur_sqe(q);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, q->done_fd, &q->done_count, sizeof(q->done_count), 0);
	io_uring_sqe_set_data64(sqe, UR_DONE_TAG);
	return 0;
}

/* The entries answered by other threads: committed, each fetching its next
 * request; then the next wake-up awaited. Returns how many entries could
 * not be (left dead). */
static unsigned ur_commit_done(struct ur_queue *q)
{
	unsigned dead = 0;
	uint32_t done;

	pthread_mutex_lock(&q->done_lock);
	done = q->done;
	q->done = 0;
	pthread_mutex_unlock(&q->done_lock);
	for (unsigned i = 0; i < UR_DEPTH; i++) {
		struct ur_ent *e = &q->ents[i];

		if (!(done & (1u << i)) || !e->live)
			continue;
		if (ur_cmd(e, PONYFUSE_URING_CMD_COMMIT_AND_FETCH, e->hdr->ent.commit_id) < 0) {
			e->live = false;
			dead++;
		}
	}
	ur_done_poll(q);
	return dead;
}

bool ponyfuse_uring_owns(const struct fuse_out_header *out)
{
	return ur_cur && !ur_cur->replied && out->unique == ur_cur->unique;
}

ssize_t ponyfuse_uring_reply(const struct iovec *iov, int count)
{
	struct ur_ent *e = ur_cur;
	char *payload = e->buf + UR_ROOM;
	size_t n = 0, total = iov[0].iov_len;

	if (iov[0].iov_len != sizeof(struct fuse_out_header)) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > e->q->ur->payload - n) {
			errno = E2BIG;
			return -1;
		}
		/* An answer built in place (ponyfuse_uring_payload) is there. */
		if (iov[i].iov_base != payload + n)
			memcpy(payload + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	total += n;
	memcpy(e->hdr->in_out, iov[0].iov_base, sizeof(struct fuse_out_header));
	e->hdr->ent.payload_sz = (uint32_t)n;
	e->replied = true;
	return (ssize_t)total;
}

bool ponyfuse_uring_serving(void)
{
	return ur_cur && !ur_cur->replied;
}

void *ponyfuse_uring_payload(size_t *room)
{
	if (!ponyfuse_uring_serving())
		return NULL;
	*room = ur_cur->q->ur->payload;
	return ur_cur->buf + UR_ROOM;
}

/* libfuse's spliced answer: header and data wait in a pipe; read them in. */
ssize_t ponyfuse_uring_reply_pipe(int pipe_fd, size_t len)
{
	struct ur_ent *e = ur_cur;
	struct fuse_out_header out;
	size_t n = 0;

	if (len < sizeof(out) || len - sizeof(out) > e->q->ur->payload) {
		errno = E2BIG;
		return -1;
	}
	for (size_t got = 0; got < len;) {
		char *dst = got < sizeof(out) ? (char *)&out + got : e->buf + UR_ROOM + n;
		size_t want = got < sizeof(out) ? sizeof(out) - got : len - got;
		ssize_t r = read(pipe_fd, dst, want);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				errno = EIO;
			return -1;
		}
		if (got >= sizeof(out))
			n += (size_t)r;
		got += (size_t)r;
	}
	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ent.payload_sz = (uint32_t)n;
	e->replied = true;
	return (ssize_t)len;
}

static int ur_queue_setup(struct ur_queue *q)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN,
	};
	struct io_uring_sqe *sqe;
	int r = io_uring_queue_init_params(UR_DEPTH * 2, &q->ring, &p);

	if (r == -EINVAL) {             /* a kernel without DEFER_TASKRUN */
		p = (struct io_uring_params){ .flags = IORING_SETUP_SQE128 };
		r = io_uring_queue_init_params(UR_DEPTH * 2, &q->ring, &p);
	}
	if (r < 0)
		return r;
	q->ring_ok = true;
	for (unsigned i = 0; i < UR_DEPTH; i++) {
		struct ur_ent *e = &q->ents[i];

		r = ur_cmd(e, PONYFUSE_URING_CMD_REGISTER, 0);
		if (r < 0)
			return r;
	}
	sqe = ur_sqe(q);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, q->ur->stop_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, UR_STOP_TAG);
	r = ur_done_poll(q);
	if (r < 0)
		return r;
	r = io_uring_submit(&q->ring);
	return r < 0 ? r : 0;
}

static void ur_refuse(int fuse_fd);

static void *ur_queue_main(void *arg)
{
	struct ur_queue *q = arg;
	unsigned live = UR_DEPTH;
	bool stop = false;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(q->qid, &cpus);
	/* A CPU possible but offline cannot be pinned to: its queue only
	 * gets requests once it is online, and then the thread may move. */
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (ur_queue_setup(q) < 0) {
		/* Without every queue the kernel would hold requests forever. */
		atomic_fetch_add(&q->ur->failed, 1);
		ur_refuse(q->ur->fuse_fd);
		if (q->ring_ok)
			io_uring_queue_exit(&q->ring);
		return NULL;
	}
	for (unsigned i = 0; i < UR_DEPTH; i++)
		q->ents[i].live = true;
	while (!stop && live) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int r = io_uring_submit_and_wait(&q->ring, 1);

		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			break;
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			struct ur_ent *e = tag < UR_DEPTH ? &q->ents[tag] : NULL;

			seen++;
			if (tag == UR_DONE_TAG) {
				live -= ur_commit_done(q);
			} else if (!e) {
				stop = true;
			} else if (cqe->res < 0) {
				/* -ENOTCONN, -ECONNABORTED, -ECANCELED: the mount
				 * is gone. Anything else: the kernel refused the
				 * entry (and went back to /dev/fuse itself). */
				if (cqe->res != -ENOTCONN && cqe->res != -ECONNABORTED &&
				    cqe->res != -ECANCELED)
					atomic_fetch_add(&q->ur->failed, 1);
				e->live = false;
				live--;
			} else if (ur_serve(e)) {
				if (ur_cmd(e, PONYFUSE_URING_CMD_COMMIT_AND_FETCH,
					   e->hdr->ent.commit_id) < 0) {
					e->live = false;
					live--;
				}
			}
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	io_uring_submit(&q->ring);
	/* Closing the ring cancels what the kernel still holds of it. */
	io_uring_queue_exit(&q->ring);
	return NULL;
}

static void ur_free(struct ponyfuse_uring *ur)
{
	for (unsigned i = 0; i < ur->nqueues; i++) {
		for (unsigned j = 0; j < UR_DEPTH; j++) {
			free(ur->q[i].ents[j].hdr);
			free(ur->q[i].ents[j].buf);
		}
		if (ur->q[i].done_fd >= 0)
			close(ur->q[i].done_fd);
		pthread_mutex_destroy(&ur->q[i].done_lock);
	}
	if (ur->stop_fd >= 0)
		close(ur->stop_fd);
	free(ur);
}

bool ponyfuse_uring_usable(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };

	if (io_uring_queue_init_params(2, &ring, &p) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

/* Tells the kernel to give up on io_uring for this connection: a REGISTER
 * it must refuse (queue out of range) clears its io_uring flag and wakes the
 * callers it holds until the rings are ready; /dev/fuse serves them then. */
static void ur_refuse(int fuse_fd)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	struct ponyfuse_uring_cmd cmd = { .qid = UINT16_MAX };
	struct ponyfuse_uring_header hdr;
	char payload[8];
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { payload, sizeof(payload) } };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	if (io_uring_queue_init_params(2, &ring, &p) < 0)
		return;
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_queue_exit(&ring);
		return;
	}
	ur_prep(sqe, fuse_fd, PONYFUSE_URING_CMD_REGISTER, iov, &cmd);
	if (io_uring_submit_and_wait(&ring, 1) >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0)
		io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
}

static int ur_alloc(struct ponyfuse *pf, size_t payload, struct ponyfuse_uring **ret)
{
	unsigned n = possible_cpus();
	struct ponyfuse_uring *ur;

	if (!n || n > UINT16_MAX)
		return -EOPNOTSUPP;
	ur = calloc(1, sizeof(*ur) + n * sizeof(ur->q[0]));
	if (!ur)
		return -ENOMEM;
	ur->pf = pf;
	ur->fuse_fd = fuse_session_fd(pf->se);
	ur->payload = payload;
	ur->nqueues = n;
	for (unsigned i = 0; i < n; i++) {      /* all, before ur_free may see them */
		ur->q[i].ur = ur;
		ur->q[i].qid = i;
		ur->q[i].done_fd = -1;
		pthread_mutex_init(&ur->q[i].done_lock, NULL);
	}
	ur->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (ur->stop_fd < 0) {
		ur_free(ur);
		return -errno;
	}
	for (unsigned i = 0; i < n; i++) {
		ur->q[i].done_fd = eventfd(0, EFD_CLOEXEC);
		if (ur->q[i].done_fd < 0) {
			int e = -errno;

			ur_free(ur);
			return e;
		}
		for (unsigned j = 0; j < UR_DEPTH; j++) {
			struct ur_ent *e = &ur->q[i].ents[j];
			void *buf;

			e->q = &ur->q[i];
			e->hdr = calloc(1, sizeof(*e->hdr));
			e->buf = posix_memalign(&buf, UR_ROOM, UR_ROOM + payload) == 0 ? buf : NULL;
			if (!e->hdr || !e->buf) {
				ur_free(ur);
				return -ENOMEM;
			}
			e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
			e->iov[1] = (struct iovec){ e->buf + UR_ROOM, payload };
		}
	}
	*ret = ur;
	return 0;
}

void ponyfuse_uring_start(struct ponyfuse *pf, size_t payload)
{
	struct ponyfuse_uring *ur = NULL;

	if (ur_alloc(pf, payload, &ur) < 0) {
		ur_refuse(fuse_session_fd(pf->se));
		return;
	}
	/* Published before any ring is ready, so a request served over the
	 * rings (the counters ioctl) sees it; ponyfuse_free() stops it. */
	pf->uring = ur;
	atomic_store_explicit(&pf->uring_on, true, memory_order_release);
	for (unsigned i = 0; i < ur->nqueues; i++) {
		ur->q[i].started = pthread_create(&ur->q[i].thread, NULL, ur_queue_main,
						  &ur->q[i]) == 0;
		if (!ur->q[i].started && atomic_fetch_add(&ur->failed, 1) == 0)
			ur_refuse(ur->fuse_fd);
	}
}

bool ponyfuse_uring_failed(const struct ponyfuse_uring *ur)
{
	return atomic_load(&ur->failed) > 0;
}

unsigned ponyfuse_uring_queues(const struct ponyfuse_uring *ur)
{
	return ur->nqueues;
}

void ponyfuse_uring_stop(struct ponyfuse_uring *ur)
{
	uint64_t one = 1;

	if (!ur)
		return;
	if (write(ur->stop_fd, &one, sizeof(one)) < 0) {
		/* An eventfd write fails only on overflow: it is already set. */
	}
	for (unsigned i = 0; i < ur->nqueues; i++)
		if (ur->q[i].started)
			pthread_join(ur->q[i].thread, NULL);
	ur_free(ur);
}

#define UR_PARAM "/sys/module/fuse/parameters/enable_uring"

int ponyfuse_uring_param(void)
{
	_cleanup_(fclosep) FILE *f = fopen(UR_PARAM, "re");
	int c;

	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	c = fgetc(f);
	return c == 'Y' || c == '1';
}

int ponyfuse_uring_enable(void)
{
	_cleanup_(closep) int fd = open(UR_PARAM, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return write(fd, "1", 1) == 1 ? 0 : -errno;
}
