/*
 * readpool.c - large READs of host files answered on helper threads, over
 * /dev/fuse. A mount is served by one libfuse worker (more would bounce
 * every request of a serial workload between threads: untar and rm -rf
 * measured 5-16% slower with two), so a streaming read had its answers
 * spliced one after the other on that worker, and the kernel's copy of
 * each into the mount's page cache (inside the splice to /dev/fuse) ran on
 * one CPU. On a VM whose fresh pages fault on first touch that copy is most
 * of a cold read: a 1 GiB read through a union just after mounting took
 * 0.75-0.88 s with one worker, 0.36-0.40 s with two.
 *
 * So a READ of at least READPOOL_MIN bytes whose data is a host file, or
 * of an instance whose read() runs in parallel (ponyfs: its reads leave
 * its lock for their I/O and checksums), is queued here, and one of a few
 * helpers answers it with the same splice while the worker reads the next
 * request; everything else stays on the worker. The helpers are one per
 * CPU, four at least: an instance's read may wait on its disk in a helper
 * (ponyfs reads an encrypted file's blocks around the host's page cache,
 * with no readahead), and with two helpers on two CPUs a READ waiting
 * there left a CPU idle while the kernel had more READs queued
 * (pooled_reads_peak 10): a cold 512 MiB encrypted read took 0.80-0.90 s
 * of daemon CPU a GiB at 0.9-1.4 GB/s with two, 0.60-0.70 s at 1.1-1.9
 * GB/s with four. The kernel holds the open file until its READs are
 * answered (a readahead READ keeps a reference, RELEASE waits for the
 * last), so the descriptor borrowed from the vfs stays valid here.
 * A full queue, or a pool that is not running, answers on the caller.
 *
 * Over the io_uring rings (uring.c) a READ is queued here the same way:
 * the helper adopts the ring entry the READ came in, answers into it,
 * and hands it back to the ring's thread to commit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

#define READPOOL_MIN (128u << 10)      /* smaller READs: the hand-off costs more */
#define READPOOL_QUEUE 64               /* READs waiting; the kernel sends a few */
#define READPOOL_MIN_THREADS 4          /* see above: some wait on the disk */
#define READPOOL_MAX_THREADS 8

struct readpool_job {
	fuse_req_t req;
	int fd;                         /* the host file; -1: the instance's read() */
	uint64_t ino, fh;               /* for read() */
	size_t size;
	off_t off;
	struct ponyfuse_uring_ent *ring_ent;    /* the ring entry it came in, or NULL */
};

struct ponyfuse_readpool {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct readpool_job queue[READPOOL_QUEUE];
	unsigned head, count;           /* a ring of count jobs from head */
	unsigned busy;                  /* jobs taken, being answered */
	bool stop;
	unsigned nthreads;
	pthread_t threads[READPOOL_MAX_THREADS];
};

/* Answers a READ with the host file's bytes: spliced where libfuse can. */
void ponyfuse_reply_host_read(fuse_req_t req, int fd, size_t size, off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, 0);
}

static void *readpool_main(void *arg)
{
	struct ponyfuse_readpool *rp = arg;

	pthread_mutex_lock(&rp->lock);
	for (;;) {
		while (!rp->count && !rp->stop)
			pthread_cond_wait(&rp->wake, &rp->lock);
		if (!rp->count)
			break;
		struct readpool_job job = rp->queue[rp->head];

		rp->head = (rp->head + 1) % READPOOL_QUEUE;
		rp->count--;
		rp->busy++;
		pthread_mutex_unlock(&rp->lock);
		if (job.ring_ent)
			ponyfuse_uring_adopt(job.ring_ent);
		if (job.fd >= 0)
			ponyfuse_reply_host_read(job.req, job.fd, job.size, job.off);
		else
			ponyfuse_reply_vfs_read(job.req, job.ino, job.fh, job.size, job.off);
		if (job.ring_ent)
			ponyfuse_uring_finish(job.ring_ent);
		pthread_mutex_lock(&rp->lock);
		rp->busy--;
	}
	pthread_mutex_unlock(&rp->lock);
	return NULL;
}

int ponyfuse_readpool_start(struct ponyfuse *pf)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct ponyfuse_readpool *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return -ENOMEM;
	pthread_mutex_init(&rp->lock, NULL);
	pthread_cond_init(&rp->wake, NULL);
	for (unsigned i = 0; i < MIN(MAX(cpus, (long)READPOOL_MIN_THREADS), (long)READPOOL_MAX_THREADS); i++) {
		if (pthread_create(&rp->threads[i], NULL, readpool_main, rp) != 0)
			break;
		rp->nthreads++;
	}
	pf->readpool = rp;
	return 0;
}

/* Answers what is queued, then ends the helpers. The pool stays, stopped:
 * a ring thread may still be serving a READ (the loop ended on a signal). */
void ponyfuse_readpool_stop(struct ponyfuse *pf)
{
	struct ponyfuse_readpool *rp = pf->readpool;

	if (!rp)
		return;
	pthread_mutex_lock(&rp->lock);
	rp->stop = true;
	pthread_cond_broadcast(&rp->wake);
	pthread_mutex_unlock(&rp->lock);
	/* Each helper drains the queue before it ends (with none, submit
	 * queued nothing), so every READ taken here has had its answer. */
	for (unsigned i = 0; i < rp->nthreads; i++)
		pthread_join(rp->threads[i], NULL);
	pthread_mutex_lock(&rp->lock);
	rp->nthreads = 0;
	pthread_mutex_unlock(&rp->lock);
}

void ponyfuse_readpool_free(struct ponyfuse *pf)
{
	struct ponyfuse_readpool *rp = pf->readpool;

	if (!rp)
		return;
	ponyfuse_readpool_stop(pf);
	pthread_cond_destroy(&rp->wake);
	pthread_mutex_destroy(&rp->lock);
	free(rp);
	pf->readpool = NULL;
}

bool ponyfuse_readpool_submit(struct ponyfuse *pf, fuse_req_t req, int fd, uint64_t ino,
			      uint64_t fh, size_t size, off_t off)
{
	struct ponyfuse_readpool *rp = pf->readpool;
	bool queued = false;

	if (!rp || size < READPOOL_MIN)
		return false;
	pthread_mutex_lock(&rp->lock);
	if (!rp->stop && rp->nthreads && rp->count < READPOOL_QUEUE) {
		/* One that came over a ring: the helper answers into its entry
		 * (ponyfuse_uring_defer() on the ring's thread, here). */
		rp->queue[(rp->head + rp->count) % READPOOL_QUEUE] =
			(struct readpool_job){ .req = req, .fd = fd, .ino = ino, .fh = fh,
					       .size = size, .off = off,
					       .ring_ent = ponyfuse_uring_defer() };
		rp->count++;
		queued = true;
		atomic_fetch_add_explicit(&pf->pooled_reads, 1, memory_order_relaxed);
		/* How many READs the kernel had here at once: more than two
		 * only when its readahead window spans several READs. */
		if (rp->count + rp->busy > atomic_load_explicit(&pf->pooled_peak, memory_order_relaxed))
			atomic_store_explicit(&pf->pooled_peak, rp->count + rp->busy,
					      memory_order_relaxed);
		pthread_cond_signal(&rp->wake);
	}
	pthread_mutex_unlock(&rp->lock);
	return queued;
}
