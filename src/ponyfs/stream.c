/*
 * stream.c - a file read sequentially: its next blocks read from the
 * image around the host's page cache, several MiB ahead of its READs and
 * several at once, into buffers of the stream's own that the READs then
 * copy from. An encrypted file's buffers hold its ciphertext, which each
 * READ checks and decrypts as it would a block it read itself.
 *
 * Why (BENCHMARKS.md, sessions 33-37): a cold sequential read through the
 * mount was CPU-bound in the daemon, a third of it the image's page cache
 * (made by the WILLNEED hint, copied out by pread, dropped behind the
 * reader). Read around the cache (O_DIRECT) that third goes, but each read
 * helper then waited on one blocking read at a time: the disk ran ~4 deep
 * where ext4's loop device keeps ~6 and its readahead runs ahead. Here a
 * stream keeps STREAM_BUFS reads of up to PONYFS_IO_BLOCKS blocks each in
 * flight or filled, on STREAM_WORKERS threads of an acall ring (its CALL
 * op: the data region is a slice of the image, which has no asynchronous
 * direct read for io_uring to take). Only a data region that reads around
 * the host's cache (an image file) gets streams; on a volume the hints
 * (readahead.c) go on filling the members' caches.
 *
 * Correctness. A buffer holds volume blocks as they were when read, and a
 * READ takes from it only blocks its own plan (made under fs->lock, the
 * cached dirty pages over it) names: a file block overwritten, truncated,
 * punched or moved has another volume block or none, and is not taken.
 * What could still change under a buffer is a volume block freed and
 * written again by its next owner; freed blocks become allocatable only
 * at a commit's end (alloc.c), which bumps fs->stream_gen first: a buffer
 * issued in an older generation is never used, so a buffer never answers
 * with a block reused since it was read. Every block taken is then checked
 * against the plan's CRC32C like any other (read.c), and a bad one sends
 * the READ to the locked path, which reads the disk again and repairs from
 * the volume's redundancy.
 *
 * A READ may also answer straight from a buffer (ponyfs_stream_refs_take(),
 * for read.c): the buffer, pinned (users) until the answer is written, is
 * not read into again, and each block's CRC32C, computed on the worker
 * right after the buffer's read (the bytes hot in that core's cache, the
 * work beside the READs), must be the plan's: the CRC of the very bytes
 * the answer hands out, since nothing writes a filled buffer; a block
 * whose CRC is not the plan's is not answered from there, and its READ
 * goes down the copying path, which reads again and repairs.
 *
 * Memory: STREAM_BUFS buffers of 1 MiB a stream, STREAM_MAX streams at
 * once over the whole filesystem (PONYFS_STREAM_BYTES_MAX, 64 MiB, in
 * docs/ponyfs-format.md); a file streamed while that many are live falls back to
 * the WILLNEED hints (readahead.c). A stream's buffers go when its file's
 * last handle is closed, when a read of it no longer follows the last, or
 * at unmount.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/acall.h"

#define STREAM_BUFS 8u                  /* 8 MiB a stream */
#define STREAM_MAX (PONYFS_STREAM_BYTES_MAX / (STREAM_BUFS * PONYFS_IO_BLOCKS * BS))
#define STREAM_WORKERS 6u               /* reads in flight at once, all streams */
#define STREAM_BEHIND (16ull << 20)     /* a buffer this far behind a READ is spent */
#define STREAM_WINDOW ((uint64_t)STREAM_BUFS * PONYFS_IO_BLOCKS * BS)  /* past the furthest READ */

struct stream_buf {
	struct ponyfs_stream *s;
	uint64_t fblk, pblock, n;       /* n volume blocks at pblock, for file blocks from fblk */
	uint64_t gen;                   /* fs->stream_gen when issued */
	uint64_t left;                  /* blocks no READ took yet */
	uint8_t *data;
	uint32_t crc[PONYFS_IO_BLOCKS]; /* each block's CRC32C, computed as it filled */
	int state;                      /* STREAM_* or -errno (failed) */
	unsigned users;                 /* READs copying out of it, or answers pinning it */
};

enum { STREAM_IDLE = 1, STREAM_FLIGHT = 2, STREAM_FILLED = 0 };

struct ponyfs_stream {
	struct ponyfs *fs;
	struct stream_buf buf[STREAM_BUFS];
	unsigned refs;                  /* the inode's, READs', reads in flight */
};

/* Under fs->stream_lock. */
static void stream_unref(struct ponyfs *fs, struct ponyfs_stream *s)
{
	if (--s->refs)
		return;
	for (unsigned i = 0; i < STREAM_BUFS; i += 2)
		ponyfs_slab_unmap(s->buf[i].data);      /* buffers i and i + 1 */
	fs->stream_bytes -= (uint64_t)STREAM_BUFS * PONYFS_IO_BLOCKS * BS;
	fs->streams--;
	free(s);
}

static int64_t fetch_call(void *arg)
{
	struct stream_buf *b = arg;
	struct ponyfs *fs = b->s->fs;
	int r = bdev_pread_direct(fs->data, b->data, b->n * BS, b->pblock * BS);

	if (r < 0)
		return r;
	/* A stack without the direct read (a volume) read it through the
	 * host's cache: let that drop it, as the hints' drop-behind does. */
	if (r == 0)
		bdev_advise(fs->data, b->pblock * BS, b->n * BS, BDEV_DONTNEED);
	/* Here, while the blocks are fresh in this core's cache, and beside
	 * the READs on the other core: done in the READ, the CRC32C was the
	 * first touch of the buffer and a third of the daemon's CPU. */
	for (uint64_t i = 0; i < b->n; i++)
		b->crc[i] = util_crc32c(0, b->data + i * BS, BS);
	return 0;
}

static void fetch_done(struct acall_ring *ring, struct acall_op *op, void *arg)
{
	struct stream_buf *b = arg;
	struct ponyfs *fs = b->s->fs;

	(void)ring;
	pthread_mutex_lock(&fs->stream_lock);
	b->state = (int)acall_op_result(op);
	pthread_cond_broadcast(&fs->stream_cond);
	stream_unref(fs, b->s);
	pthread_mutex_unlock(&fs->stream_lock);
}

/* Under fs->lock: the ring, made at the first stream, freed at unmount. */
static struct acall_ring *stream_ring_locked(struct ponyfs *fs)
{
	const struct acall_ring_params p = { .workers = STREAM_WORKERS, .path = ACALL_PATH_WORKERS };
	uint8_t *probe;

	if (fs->stream_ring || fs->stream_failed)
		return fs->stream_ring;
	/* Only where the data region reads around the host's cache (an image
	 * file): elsewhere (a volume) the hints fill the members' caches
	 * ahead of the reader already, and a buffer would be a third copy. */
	probe = util_aligned_alloc(BS);
	fs->stream_failed = !probe || bdev_pread_direct(fs->data, probe, BS, 0) != 1 ||
			    acall_ring_new(&p, &fs->stream_ring) < 0;
	free(probe);
	return fs->stream_ring;
}

/* Under fs->lock and fs->stream_lock: a new stream for in, or NULL. */
static struct ponyfs_stream *stream_new_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	struct ponyfs_stream *s;

	if (fs->streams >= STREAM_MAX || !stream_ring_locked(fs) || !(s = calloc(1, sizeof(*s))))
		return NULL;
	s->fs = fs;
	s->refs = 1;
	/* Two buffers a 2 MiB slab, a huge page where the host has one
	 * (pages.c): a buffer of scattered 4 KiB pages is a direct read of
	 * 256 segments, more than the virtio disk takes in one request. */
	for (unsigned i = 0; i < STREAM_BUFS; i++) {
		s->buf[i].s = s;
		s->buf[i].state = STREAM_IDLE;
		s->buf[i].data = i % 2 ? s->buf[i - 1].data + (size_t)PONYFS_IO_BLOCKS * BS :
					 ponyfs_slab_map();
		if (!s->buf[i].data) {
			while (i >= 2) {
				i -= 2;
				ponyfs_slab_unmap(s->buf[i].data);
			}
			free(s);
			return NULL;
		}
	}
	fs->streams++;
	fs->stream_bytes += (uint64_t)STREAM_BUFS * PONYFS_IO_BLOCKS * BS;
	fs->stream_bytes_peak = MAX(fs->stream_bytes_peak, fs->stream_bytes);
	in->stream = s;
	return s;
}

/* Under fs->stream_lock: whether b can take a new read (its last one spent,
 * stale or failed, and no READ copying from it). */
static bool buf_spent(const struct ponyfs *fs, const struct stream_buf *b, uint64_t at_blk)
{
	if (b->state == STREAM_IDLE)
		return true;
	if (b->state == STREAM_FLIGHT || b->users)
		return false;
	return b->state < 0 || !b->left || b->gen != fs->stream_gen ||
	       (b->fblk + b->n) * BS + STREAM_BEHIND <= at_blk * BS;
}

/* Under fs->stream_lock: n blocks at pblock, for file blocks from fblk,
 * read into b on the ring. */
static bool buf_issue(struct ponyfs *fs, struct acall_ring *ring, struct stream_buf *b,
		      uint64_t fblk, uint64_t pblock, uint64_t n)
{
	struct acall_op *op = acall_get_op(ring);

	if (!op)
		return false;
	b->fblk = fblk;
	b->pblock = pblock;
	b->n = b->left = n;
	b->gen = fs->stream_gen;
	b->state = STREAM_FLIGHT;
	b->s->refs++;
	acall_prep_call(op, fetch_call, b);
	acall_op_set_callback(op, fetch_done, b);
	if (acall_submit(ring) == 1)
		return true;
	acall_op_done(ring, op);
	b->state = STREAM_IDLE;
	b->s->refs--;
	return false;
}

bool ponyfs_stream_ahead_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off)
{
	struct acall_ring *ring;
	struct ponyfs_stream *s;
	uint64_t blk, last = DIV_ROUND_UP(MIN(in->size, in->ra_next + STREAM_WINDOW), BS);
	unsigned i = 0;

	if (!(ring = stream_ring_locked(fs)))
		return false;
	pthread_mutex_lock(&fs->stream_lock);
	s = in->stream ? in->stream : stream_new_locked(fs, in);
	if (!s) {
		pthread_mutex_unlock(&fs->stream_lock);
		return false;
	}
	blk = MAX(in->ra_until, in->ra_next) / BS;
	while (blk < last) {
		uint64_t run, pblock;
		int flags;

		while (i < STREAM_BUFS && !buf_spent(fs, &s->buf[i], off / BS))
			i++;
		if (i == STREAM_BUFS || ponyfs_ext_at(fs, in->ino, blk, MIN(last, blk + PONYFS_IO_BLOCKS),
						      &flags, &run, &pblock, NULL, NULL) < 0 || !run)
			break;
		/* Holes and unwritten extents read as zeros: nothing to fetch. */
		if (flags >= 0 && !(flags & PONYFS_EXT_UNWRITTEN) &&
		    !buf_issue(fs, ring, &s->buf[i], blk, pblock, run))
			break;
		blk += run;
		in->ra_until = blk * BS;
	}
	pthread_mutex_unlock(&fs->stream_lock);
	return true;
}

struct ponyfs_stream *ponyfs_stream_get_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	struct ponyfs_stream *s;

	pthread_mutex_lock(&fs->stream_lock);
	s = in->stream;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&fs->stream_lock);
	return s;
}

void ponyfs_stream_put(struct ponyfs *fs, struct ponyfs_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&fs->stream_lock);
	stream_unref(fs, s);
	pthread_mutex_unlock(&fs->stream_lock);
}

void ponyfs_stream_stop_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	if (!in->stream)
		return;
	pthread_mutex_lock(&fs->stream_lock);
	stream_unref(fs, in->stream);
	in->stream = NULL;
	pthread_mutex_unlock(&fs->stream_lock);
}

void ponyfs_stream_gen_bump_locked(struct ponyfs *fs)
{
	pthread_mutex_lock(&fs->stream_lock);
	fs->stream_gen++;
	pthread_mutex_unlock(&fs->stream_lock);
}

/* Under fs->stream_lock: a buffer of s holding volume block pblock, filled
 * (waited for while in flight) in this generation, pinned; NULL: none. */
static struct stream_buf *buf_find(struct ponyfs *fs, struct ponyfs_stream *s, uint64_t pblock)
{
	for (unsigned i = 0; i < STREAM_BUFS; i++) {
		struct stream_buf *b = &s->buf[i];

		if (b->state == STREAM_IDLE || pblock < b->pblock || pblock >= b->pblock + b->n)
			continue;
		while (b->state == STREAM_FLIGHT)
			pthread_cond_wait(&fs->stream_cond, &fs->stream_lock);
		if (b->state != STREAM_FILLED || b->gen != fs->stream_gen)
			return NULL;
		b->users++;
		return b;
	}
	return NULL;
}

/* Whether blocks [off, off + n) of filled buffer b have the CRC32Cs want
 * (the plan's): b->crc, its worker's, are the CRCs of the very bytes there,
 * as nothing writes a filled buffer. */
static bool buf_crcs_are(const struct stream_buf *b, uint64_t off, uint64_t n,
			 const uint32_t *want)
{
	for (uint64_t i = 0; i < n; i++)
		if (b->crc[off + i] != want[i])
			return false;
	return true;
}

int ponyfs_stream_copy(struct ponyfs *fs, struct ponyfs_stream *s,
		       const struct ponyfs_read_run *run, unsigned nrun, uint64_t first,
		       const uint32_t *csum, uint8_t *to)
{
	uint64_t hits = 0;
	int checked = 1;

	for (unsigned i = 0; i < nrun; i++) {
		const struct ponyfs_read_run *r = &run[i];

		for (uint64_t j = 0; j < r->n;) {
			uint8_t *at = to + (r->fblk - first + j) * BS;
			struct stream_buf *b;
			uint64_t k, off;
			int e;

			pthread_mutex_lock(&fs->stream_lock);
			b = buf_find(fs, s, r->pblock + j);
			pthread_mutex_unlock(&fs->stream_lock);
			if (!b) {       /* not fetched (yet): read here, around the cache too */
				k = 1;
				while (j + k < r->n && k < PONYFS_IO_BLOCKS) {
					pthread_mutex_lock(&fs->stream_lock);
					b = buf_find(fs, s, r->pblock + j + k);
					if (b)
						b->users--;
					pthread_mutex_unlock(&fs->stream_lock);
					if (b)
						break;
					k++;
				}
				e = bdev_pread_direct(fs->data, at, k * BS, (r->pblock + j) * BS);
				if (e < 0)
					return e;
				__atomic_add_fetch(&fs->reads_direct, (uint64_t)e, __ATOMIC_RELAXED);
				checked = 0;
				j += k;
				continue;
			}
			off = r->pblock + j - b->pblock;
			k = MIN(r->n - j, b->n - off);
			memcpy(at, b->data + off * BS, k * BS);
			/* The buffer's CRCs (its worker's) are the copies': a block
			 * whose CRC is not the plan's fails the chunk here. */
			if (checked >= 0 && !buf_crcs_are(b, off, k, csum + (r->fblk - first + j)))
				checked = -EBADMSG;
			pthread_mutex_lock(&fs->stream_lock);
			b->users--;
			b->left -= MIN(b->left, k);
			pthread_mutex_unlock(&fs->stream_lock);
			if (checked < 0)
				return checked;
			hits += k;
			j += k;
		}
	}
	__atomic_add_fetch(&fs->stream_hits, hits, __ATOMIC_RELAXED);
	return checked;
}

/* Under fs->stream_lock: a pin of ponyfs_stream_refs_take() let go. */
static void ref_drop(struct ponyfs_stream_ref *ref, bool taken)
{
	struct stream_buf *b = ref->buf;

	b->users--;
	if (taken)
		b->left -= MIN(b->left, ref->n);
}

/* Under fs->stream_lock: run r's blocks from j on pinned into hold
 * (answer offset at for file block first); false when a block is in no
 * filled buffer of s, hold is full, or a buffer's CRC32C of a block is not
 * the one in csum (the plan's, from file block first). */
static bool run_refs_take(struct ponyfs *fs, struct ponyfs_stream *s,
			  const struct ponyfs_read_run *r, uint64_t first, const uint32_t *csum,
			  size_t at, struct ponyfs_read_hold *hold)
{
	for (uint64_t j = 0; j < r->n;) {
		uint64_t blk = r->fblk - first + j, off, n;
		struct stream_buf *b;

		if (hold->nref == PONYFS_READ_REFS_MAX || !(b = buf_find(fs, s, r->pblock + j)))
			return false;
		off = r->pblock + j - b->pblock;
		n = MIN(r->n - j, b->n - off);
		hold->ref[hold->nref].at = at + (size_t)blk * BS;
		hold->ref[hold->nref++].sref = (struct ponyfs_stream_ref){ b, b->data + off * BS, n };
		if (!buf_crcs_are(b, off, n, csum + blk))
			return false;
		j += n;
	}
	return true;
}

bool ponyfs_stream_refs_take(struct ponyfs *fs, struct ponyfs_stream *s,
			     const struct ponyfs_read_run *run, unsigned nrun, uint64_t first,
			     const uint32_t *csum, size_t at, struct ponyfs_read_hold *hold)
{
	unsigned start = hold->nref;
	bool ok = true;

	/* One trip through the lock for the whole chunk: a READ of 1008 KiB
	 * spans two buffers, and the READs of both cores contend here. */
	pthread_mutex_lock(&fs->stream_lock);
	for (unsigned i = 0; ok && i < nrun; i++)
		ok = run_refs_take(fs, s, &run[i], first, csum, at, hold);
	while (!ok && hold->nref > start)
		ref_drop(&hold->ref[--hold->nref].sref, false);
	pthread_mutex_unlock(&fs->stream_lock);
	return ok;
}

void ponyfs_stream_refs_release(struct ponyfs *fs, struct ponyfs_read_hold *hold)
{
	uint64_t n = 0;

	if (!hold->nref)        /* a READ answered from its own buffer: no trip */
		return;
	pthread_mutex_lock(&fs->stream_lock);
	for (unsigned i = 0; i < hold->nref; i++) {
		ref_drop(&hold->ref[i].sref, true);
		n += hold->ref[i].sref.n;
	}
	pthread_mutex_unlock(&fs->stream_lock);
	hold->nref = 0;
	__atomic_add_fetch(&fs->stream_hits, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fs->stream_refs, n, __ATOMIC_RELAXED);
}

void ponyfs_streams_done(struct ponyfs *fs)
{
	/* Every inode's stream was stopped: what is left waits for its reads,
	 * whose callbacks free it. */
	acall_ring_free(fs->stream_ring);
	fs->stream_ring = NULL;
}
