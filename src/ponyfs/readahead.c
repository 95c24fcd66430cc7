/*
 * readahead.c - the image read ahead of a file read sequentially. A cold
 * sequential read through the mount asks for one READ's worth (1 MiB) at a
 * time, and each one's pread(2) of the image waited for the disk: the
 * kernel's own readahead of the image saw only the few READs in flight,
 * out of order over the read helpers, so the disk ran at depth one or two.
 *
 * So once a file's reads follow each other (within RA_SLACK of where the
 * last one ended: the kernel's READs arrive in any order), the volume
 * blocks of the next RA_WINDOW bytes of the file are looked up under the
 * filesystem lock and handed to bdev_advise() after it, RA_STEP or more
 * at a time: the host's page cache fills ahead of the reader, and the
 * reads that follow copy from it. Nothing is cached here: a read still
 * reads the image and checks every block's CRC32C (read.c), so a block
 * overwritten, truncated, punched or moved since is never returned stale,
 * and a bad block is repaired as before; a hint for blocks that were
 * freed meanwhile costs a read of the disk and nothing else.
 *
 * Behind a stream the blocks just read and checked are dropped from the
 * host's cache (BDEV_DONTNEED). A cold 4 GiB read otherwise left 4 GiB of
 * the image cached beside the mount's own 4 GiB of the file, all in pages
 * the host had not handed out since the last drop_caches, and on this VM
 * (a PVM guest whose free pages go back to the hypervisor: free page
 * reporting) touching such a page for the first time is what the daemon's
 * CPU went on: its copies out of the image ran at a fraction of memory
 * speed, 8.6 s of system time for 4 GiB, and the disk idled after the
 * first ~2 GB. Dropped behind the reader, the same few MiB of pages are
 * reused for the image from one READ to the next: 1.8 s (BENCHMARKS.md,
 * session 36). Only a stream drops: a file read at random, or read once
 * in small pieces, keeps its blocks cached for the next reader.
 *
 * The hints go out from a worker of their own (one thread of an acall
 * ring, made at the first round), not from the READ that planned them: a
 * WILLNEED of image not yet cached costs ~0.8 ms per 2 MiB (the kernel
 * allocates and queues the pages before it returns), sixteen of them a
 * round, and a 4 KiB random READ that happened to land near the last one
 * waited for all of them before it answered (BENCHMARKS.md, session 40).
 * From the worker the READ answers at once and the disk fills the cache
 * behind it. Rounds queue in order on the one thread; past RA_QUEUED_MAX
 * waiting, a new round is dropped: the worker is that far behind, and
 * a hint is only a hint (the READs read what they need). Without the
 * worker (its ring could not be made) hints go out in line, as before.
 */
#include <stdlib.h>

#include "internal.h"
#include "pony/acall.h"

#define RA_WINDOW (32ull << 20)         /* how far ahead of the reader */
#define RA_STEP (8ull << 20)            /* the least worth a round of hints */
#define RA_SLACK (16ull << 20)          /* a read this near the last end follows it */
#define RA_QUEUED_MAX 4u                /* rounds waiting for the worker, at most */

/* One round of hints, the worker's from its submission to its callback. */
struct ra_round {
	struct ponyfs *fs;
	struct ponyfs_readahead ra;
};

static void ra_add(struct ponyfs_readahead *ra, uint64_t pblock, uint64_t n)
{
	struct ponyfs_ra_run *last = ra->n ? &ra->run[ra->n - 1] : NULL;

	if (last && last->pblock + last->n == pblock)
		last->n += n;
	else
		ra->run[ra->n++] = (struct ponyfs_ra_run){ pblock, n };
}

/* Under fs->lock: the hints' worker, made at the first round of hints;
 * NULL (hints in line) if it could not be. */
static void ra_ring_locked(struct ponyfs *fs)
{
	/* The worker path alone: a CALL never goes to io_uring. */
	const struct acall_ring_params p = { .workers = 1, .path = ACALL_PATH_WORKERS };
	struct acall_ring *ring;

	if (fs->ra_ring || fs->ra_ring_failed)
		return;
	fs->ra_ring_failed = acall_ring_new(&p, &ring) < 0;
	/* READs load it without the lock (ponyfs_readahead_issue). */
	if (!fs->ra_ring_failed)
		__atomic_store_n(&fs->ra_ring, ring, __ATOMIC_RELEASE);
}

void ponyfs_readahead_plan_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off,
				  size_t size, struct ponyfs_readahead *ra)
{
	uint64_t end = off + size, from, to, blk, last;
	bool follows = in->ra_next && off + RA_SLACK >= in->ra_next && off <= in->ra_next + RA_SLACK;
	bool exact = off == in->ra_next;        /* a reader's own next read, not a neighbour's */

	ra->n = 0;
	ra->stream = follows;
	ra->buffered = false;
	if (!follows) {                 /* a new stream, or none: hints wait for the next read */
		in->ra_next = in->ra_until = end;
		ponyfs_stream_stop_locked(fs, in);
		return;
	}
	in->ra_next = MAX(in->ra_next, end);
	/* A stream reads ahead into buffers of its own instead
	 * (stream.c), once its reads are large or exactly contiguous (then
	 * all that follow, out of order too): small reads merely near each
	 * other are a random reader's (fio's 4 KiB reads at depth), whom the
	 * hints and the host's cache serve better. */
	ra->buffered = (size >= PONYFS_STREAM_MIN_READ || exact || in->stream) &&
		       ponyfs_stream_ahead_locked(fs, in, off);
	if (ra->buffered)
		return;
	from = MAX(in->ra_until, end);
	to = MIN(in->size, end + RA_WINDOW);
	if (to <= from || (to - from < RA_STEP && to < in->size))
		return;
	blk = from / BS;
	last = DIV_ROUND_UP(to, BS);
	while (blk < last && ra->n < PONYFS_RA_RUNS) {
		uint64_t run, pblock;
		int flags;

		if (ponyfs_ext_at(fs, in->ino, blk, last, &flags, &run, &pblock, NULL, NULL) < 0)
			break;
		/* Holes and unwritten extents read as zeros: nothing to fetch. */
		if (flags >= 0 && !(flags & PONYFS_EXT_UNWRITTEN))
			ra_add(ra, pblock, run);
		blk += run;
	}
	in->ra_until = MAX(in->ra_until, blk * BS);
	if (ra->n)
		ra_ring_locked(fs);
}

static void ra_send(struct ponyfs *fs, const struct ponyfs_readahead *ra)
{
	/* A hint: a failure (a gate cut by shutdown) shows at the read. */
	for (unsigned i = 0; i < ra->n; i++)
		bdev_advise(fs->data, ra->run[i].pblock * BS, ra->run[i].n * BS, BDEV_WILLNEED);
}

static int64_t round_call(void *arg)
{
	struct ra_round *rr = arg;

	ra_send(rr->fs, &rr->ra);
	__atomic_add_fetch(&rr->fs->ra_rounds, 1, __ATOMIC_RELAXED);
	return 0;
}

static void round_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct ra_round *rr = arg;

	(void)ring;
	(void)op;
	__atomic_sub_fetch(&rr->fs->ra_queued, 1, __ATOMIC_RELAXED);
	free(rr);
}

/* Whether the round went to the worker (else the caller still has it). */
static bool round_submit(struct ponyfs *fs, struct acall_ring *ring,
			 const struct ponyfs_readahead *ra)
{
	struct ra_round *rr = malloc(sizeof(*rr));
	struct acall_op *op = rr ? acall_get_op(ring) : NULL;

	if (!op) {
		free(rr);
		return false;
	}
	rr->fs = fs;
	rr->ra = *ra;
	acall_prep_call(op, round_call, rr);
	acall_op_set_callback(op, round_done, rr);
	if (acall_submit(ring) == 1)
		return true;
	acall_op_done(ring, op);
	free(rr);
	return false;
}

void ponyfs_readahead_issue(struct ponyfs *fs, const struct ponyfs_readahead *ra)
{
	struct acall_ring *ring = __atomic_load_n(&fs->ra_ring, __ATOMIC_ACQUIRE);

	if (!ring) {
		ra_send(fs, ra);
		return;
	}
	if (__atomic_fetch_add(&fs->ra_queued, 1, __ATOMIC_RELAXED) >= RA_QUEUED_MAX) {
		__atomic_sub_fetch(&fs->ra_queued, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&fs->ra_rounds_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	if (round_submit(fs, ring, ra))
		return;
	__atomic_sub_fetch(&fs->ra_queued, 1, __ATOMIC_RELAXED);
	ra_send(fs, ra);                /* no memory for the round: in line */
}

void ponyfs_readahead_done(struct ponyfs *fs)
{
	/* Waits for the rounds queued; their callbacks free them. Before the
	 * data region closes: the worker hints through it. */
	acall_ring_free(fs->ra_ring);
	fs->ra_ring = NULL;
}

void ponyfs_readahead_drop(struct ponyfs *fs, const struct ponyfs_readahead *ra, uint64_t pblock,
			   uint64_t n)
{
	/* Only once read and checked: a block that failed went to the
	 * locked path, which reads it again. A hint; a failure changes nothing. */
	if (ra->stream)
		bdev_advise(fs->data, pblock * BS, n * BS, BDEV_DONTNEED);
}
