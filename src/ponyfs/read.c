/*
 * read.c - reads of file data: the extents on disk, each block checked
 * against its CRC32C (a bad one repaired from the volume's redundancy),
 * under the file's cached dirty blocks.
 *
 * Most reads run outside the filesystem lock. Under it a read is planned:
 * which volume blocks hold the range, with their checksums, and the cached
 * blocks copied out at once (so a write acknowledged before the read began
 * is always seen). Then the lock is dropped for the I/O and the checks,
 * and FUSE's read helpers run them in parallel with each other and with
 * the worker serving everything else: a cold sequential read kept one CPU
 * busy with the copies alone. What keeps a planned block from being reused
 * meanwhile: blocks a transaction frees become allocatable only after its
 * commit, and the commit waits on fs->reuse_lock, which every read in
 * flight holds for reading, before it hands them out (alloc.c). A block
 * that fails its checksum, or an I/O error, sends the whole read to the
 * locked path, which repairs and logs.
 *
 * An encrypted file's blocks are decrypted after their checksum passed
 * (the checksum is the ciphertext's): XTS by block number, GCM opened with
 * the nonce and tag its extent row keeps. A GCM block that does not verify
 * is read again from the volume's redundancy, else the read fails with
 * EIO and a log line: tampering is never returned as data. Their blocks
 * are read around the host's page cache (runs_fetch_direct()), a READ's
 * runs whole, before they are checked and decrypted.
 *
 * A read that follows the file's last one first hints the image's blocks
 * further on (readahead.c), so the disk works ahead of the reader, and
 * lets the host's cache drop the blocks it has read and checked; neither
 * for an encrypted file's blocks once its reads go around the cache.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


/* What a chunk of a read needs from the disk, decided under the lock. */
struct read_plan {
	struct ponyfs_read_run run[PONYFS_IO_BLOCKS];
	unsigned nrun;
	uint32_t csum[PONYFS_IO_BLOCKS];       /* per block of the chunk, for disk blocks */
	uint8_t seal[PONYFS_IO_BLOCKS][PONYFS_SEAL_BYTES - 4];  /* GCM nonce and tag */
	bool checked;                   /* the runs' bytes matched csum already (stream.c) */
};

/*
 * A block of ino's file block fblk that failed its checksum: good data
 * from the volume's other copies or parity (bdev_repair()), the bad
 * member rewritten, an event logged. -EBADMSG when nothing matches the
 * checksum.
 */
static int repair_block(struct ponyfs *fs, uint64_t ino, uint64_t fblk, uint8_t *blk,
			uint64_t pblock, uint32_t crc)
{
	/* Through the shutdown gate: after a shutdown nothing reaches the
	 * region (-EIO). */
	int m;

	fs->stats.csum_errors++;
	m = bdev_repair(fs->data, blk, BS, pblock * BS, crc);
	if (m >= 0)
		fs->stats.csum_repaired++;
	/* Recorded for `pony fs badblocks`, logged once with the file's paths. */
	ponyfs_bad_block_locked(fs, VFS_BAD_READ, ino, fblk, pblock, m);
	return m >= 0 ? 0 : -EBADMSG;
}

/* Adds the blocks [blk, blk+n) at pblock (their checksums in p->csum
 * already) to the plan, less those cached pages hold when pages (copied
 * into the buffer by the caller). */
static void plan_extent(struct read_plan *p, const struct ponyfs_inode *in, bool pages,
			uint64_t blk, uint64_t pblock, uint64_t n)
{
	size_t pg = pages ? ponyfs_page_pos(in, blk) : in->npages;

	for (uint64_t i = 0; i < n;) {
		uint64_t cached = pg < in->npages ? in->pages[pg].index : UINT64_MAX;
		uint64_t k;

		if (cached == blk + i) {        /* the page wins */
			pg++;
			i++;
			continue;
		}
		k = MIN(n, cached - blk) - i;
		p->run[p->nrun++] = (struct ponyfs_read_run){ blk + i, pblock + i, k };
		i += k;
	}
}

/* The cached pages of blocks [first, first+n) over to. */
static void pages_copy(const struct ponyfs_inode *in, uint64_t first, uint64_t n, uint8_t *to)
{
	for (size_t i = ponyfs_page_pos(in, first); i < in->npages && in->pages[i].index < first + n; i++)
		memcpy(to + (in->pages[i].index - first) * BS, in->pages[i].data, BS);
}

/*
 * Plans blocks [first, first+n) of in (n at most PONYFS_IO_BLOCKS) into to:
 * zeros for holes, unwritten extents and blocks past a pending truncation,
 * with pages the cached pages copied, runs for the rest. -EUCLEAN for an
 * extent row without checksums.
 */
static int plan_locked(struct ponyfs *fs, struct ponyfs_inode *in, bool pages, uint64_t first,
		       uint64_t n, uint8_t *to, struct read_plan *p)
{
	uint64_t end = first + n, blk = first;
	uint64_t cut = in->trunc_pending ? DIV_ROUND_UP(in->trunc_to, BS) : UINT64_MAX;

	p->nrun = 0;
	p->checked = false;
	if (cut < end)
		memset(to + (MAX(cut, first) - first) * BS, 0, (end - MAX(cut, first)) * BS);
	end = MIN(end, cut);
	while (blk < end) {
		uint64_t run, pblock;
		int flags;
		int r = ponyfs_ext_at(fs, in->ino, blk, end, &flags, &run, &pblock,
				      p->csum + (blk - first), p->seal[blk - first]);

		if (r < 0)
			return r;
		if (flags < 0 || (flags & PONYFS_EXT_UNWRITTEN))
			memset(to + (blk - first) * BS, 0, run * BS);
		else
			plan_extent(p, in, pages, blk, pblock, run);
		blk += run;
	}
	if (pages)
		pages_copy(in, first, n, to);
	return 0;
}

/*
 * An encrypted block back to plaintext (cipher NULL: the file is not
 * encrypted). A GCM block that does not verify: locked, read again from
 * the volume's redundancy, else -EIO with a log line; unlocked -EBADMSG
 * (the locked path tries again).
 */
static int block_decrypt(struct ponyfs *fs, struct ponyfs_inode *in, struct crypt_contents *cipher,
			 bool locked, const struct read_plan *p, uint64_t first, uint64_t fblk,
			 uint64_t pblock, uint8_t *blk)
{
	const uint8_t *seal = p->seal[fblk - first];
	int r;

	if (!cipher)
		return 0;
	r = ponyfs_crypt_blocks(in, cipher, fblk, 1, seal, blk);
	if (r != -EBADMSG || !locked)
		return r;
	fs->stats.csum_errors++;
	if (bdev_repair(fs->data, blk, BS, pblock * BS, p->csum[fblk - first]) >= 0 &&
	    ponyfs_crypt_blocks(in, cipher, fblk, 1, seal, blk) == 0) {
		fs->stats.csum_repaired++;
		return 0;
	}
	ponyfs_log(fs, LOG_ERR, "inode %llu offset %llu: data block %llu failed its "
		   "authentication tag (aes-256-gcm): tampered with or corrupt; the read fails (EIO)",
		   (unsigned long long)in->ino, (unsigned long long)(fblk * BS),
		   (unsigned long long)pblock);
	memset(blk, 0, BS);
	return -EIO;
}

/*
 * Reads and checks nrun runs of plan p into to, and decrypts them with
 * cipher (NULL: not encrypted); fetched: the runs are in to already
 * (runs_fetch_direct()), only checked and decrypted, or with p->checked
 * (copied from a stream's buffers whose CRCs are the plan's) only
 * decrypted. Unlocked, the first
 * error or bad block ends it (-EBADMSG); locked, a bad block of in is
 * repaired from the volume's redundancy first.
 */
static int runs_read(struct ponyfs *fs, struct ponyfs_inode *in, struct crypt_contents *cipher,
		     bool locked, bool fetched, const struct read_plan *p, const struct ponyfs_read_run *run,
		     unsigned nrun, uint64_t first, uint8_t *to)
{
	for (unsigned i = 0; i < nrun; i++) {
		const struct ponyfs_read_run *r = &run[i];
		uint8_t *at = to + (r->fblk - first) * BS;
		int e = fetched ? 0 : bdev_pread(fs->data, at, r->n * BS, r->pblock * BS);

		assert(fetched || !p->checked);
		for (uint64_t j = 0; e >= 0 && j < r->n; j++) {
			uint32_t want = p->csum[r->fblk - first + j];

			if (!p->checked && util_crc32c(0, at + j * BS, BS) != want)
				e = locked ? repair_block(fs, in->ino, r->fblk + j, at + j * BS,
							  r->pblock + j, want) : -EBADMSG;
			if (e >= 0)
				e = block_decrypt(fs, in, cipher, locked, p, first, r->fblk + j,
						  r->pblock + j, at + j * BS);
		}
		if (e < 0)
			return e;
	}
	return 0;
}

/*
 * An encrypted file's runs of p into to, around the host's page cache
 * (bdev_pread_direct()): its ciphertext is of no use there, since the
 * kernel caches the plaintext this read returns, yet a cached read paid
 * for the image's pages twice: made and filled (the readahead hint), then
 * copied out (pread), a third of the daemon's CPU on a cold read, as much
 * as the cipher. Each run is one read, whole (a 1 MiB read from the disk
 * here: 3.3 GB/s at depth one, 128 KiB pieces 1 GB/s), so the pieces the
 * helper shares are only checked and decrypted. Returns 1 when every run
 * went around the cache, 0 when one did not (unaligned to, a stack without
 * the op: correct, as bdev_pread()), or the first error. Only chunks of
 * DIRECT_MIN_BLOCKS or more go this way, a sequential reader's: small
 * READs are a random reader's, whose later reads the host's cache (its
 * own readahead of the image) answers without the disk: read directly,
 * bench/ponyfs's cold 4 KiB random reads fell from 0.88 of a plain file's
 * IOPS to 0.15.
 */
#define DIRECT_MIN_BLOCKS 32u           /* 128 KiB: the kernel's readahead READs are larger */

static int runs_fetch_direct(struct ponyfs *fs, const struct read_plan *p, uint64_t first,
			     uint8_t *to)
{
	int all = 1;

	for (unsigned i = 0; i < p->nrun; i++) {
		const struct ponyfs_read_run *r = &p->run[i];
		int e = bdev_pread_direct(fs->data, to + (r->fblk - first) * BS, r->n * BS,
					  r->pblock * BS);

		if (e < 0)
			return e;
		all &= e;
	}
	return all;
}

static int plan_run(struct ponyfs *fs, struct ponyfs_inode *in, struct crypt_contents *cipher,
		    bool locked, bool fetched, const struct read_plan *p, uint64_t first, uint8_t *to)
{
	return runs_read(fs, in, cipher, locked, fetched, p, p->run, p->nrun, first, to);
}

/*
 * An unlocked read of an encrypted file shared with a helper (a share,
 * helper.c): the plan's runs are cut into pieces of SHARE_BLOCKS, and
 * this thread and the helper, each with a cipher of its own, take the
 * next piece in turn until none is left, checking and decrypting it (the
 * runs were read whole first, fetched: runs_fetch_direct()), or reading
 * it too. So the cipher's work spreads over both CPUs when the
 * helper gets one, and when it does not (the other CPU busy: the reader
 * copying the last answer out, another READ) this thread simply takes
 * every piece. A fixed half each made this thread wait for the helper's
 * half: traced on a cold 256 MiB read, the helper ran on the reader's CPU
 * after it (serialised), or started milliseconds late. A piece's blocks
 * are checked and decrypted one by one, each still in the CPU's cache
 * after its checksum. Plain files
 * are not shared: their work per block is the copy and the checksum,
 * which FUSE's parallel READs (readpool.c) spread already.
 */
#define SHARE_MIN_BLOCKS 64u            /* smaller reads: the hand-off costs more */
#define SHARE_BLOCKS 32u                /* a piece: 128 KiB */

struct read_share {
	struct ponyfs *fs;
	struct ponyfs_inode *in;
	const struct read_plan *p;
	uint64_t first;
	uint8_t *to;
	bool fetched;                   /* the pieces' blocks are in to: check and decrypt */
	struct ponyfs_read_run piece[PONYFS_IO_BLOCKS / SHARE_BLOCKS + PONYFS_IO_BLOCKS];
	struct ponyfs_share share;      /* its ciphers: this thread's, the helper's */
};

static int read_piece(void *arg, uint64_t i, struct crypt_contents *cipher)
{
	struct read_share *s = arg;

	return runs_read(s->fs, s->in, cipher, false, s->fetched, s->p, &s->piece[i], 1, s->first,
			 s->to);
}

/* p's runs cut into pieces of at most SHARE_BLOCKS. Returns how many
 * blocks they hold. */
static uint64_t plan_pieces(const struct read_plan *p, struct read_share *s)
{
	uint64_t total = 0;

	s->share.pieces = 0;
	for (unsigned i = 0; i < p->nrun; i++) {
		const struct ponyfs_read_run *r = &p->run[i];

		for (uint64_t k = 0; k < r->n; k += SHARE_BLOCKS)
			s->piece[s->share.pieces++] = (struct ponyfs_read_run){
				r->fblk + k, r->pblock + k, MIN((uint64_t)SHARE_BLOCKS, r->n - k) };
		total += r->n;
	}
	return total;
}

static int plan_run_shared(struct ponyfs *fs, struct ponyfs_inode *in, struct read_share *s,
			   bool fetched, const struct read_plan *p, uint64_t first, uint8_t *to)
{
	if (plan_pieces(p, s) < SHARE_MIN_BLOCKS)
		return plan_run(fs, in, s->share.cipher[0], false, fetched, p, first, to);
	s->fetched = fetched;
	s->fs = fs;
	s->in = in;
	s->p = p;
	s->first = first;
	s->to = to;
	s->share.piece = read_piece;
	s->share.arg = s;
	return ponyfs_share_run(fs, &s->share);
}

int ponyfs_disk_read_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t first, uint64_t n,
			    uint8_t *buf)
{
	_cleanup_(freep) struct read_plan *plan = malloc(sizeof(*plan));
	int r;

	if (!plan)
		return -ENOMEM;
	if (n > PONYFS_IO_BLOCKS)
		return -EINVAL;
	if (in->crypt.on && !in->cipher)
		return -ENOKEY;
	r = plan_locked(fs, in, false, first, n, buf, plan);
	return r < 0 ? r : plan_run(fs, in, in->cipher, true, false, plan, first, buf);
}

unsigned ponyfs_read_hold_iov(const struct ponyfs_read_hold *hold, void *buf, size_t n,
			      struct iovec *iov)
{
	size_t pos = 0;
	unsigned k = 0;

	static_assert(2 * PONYFS_READ_REFS_MAX + 1 <= VFS_READ_IOV_MAX, "iov room");
	for (unsigned i = 0; i < hold->nref; i++) {
		size_t at = hold->ref[i].at, len = (size_t)hold->ref[i].sref.n * BS;

		if (at > pos)
			iov[k++] = (struct iovec){ (uint8_t *)buf + pos, at - pos };
		iov[k++] = (struct iovec){ (void *)hold->ref[i].sref.data, len };
		pos = at + len;
	}
	if (pos < n)
		iov[k++] = (struct iovec){ (uint8_t *)buf + pos, n - pos };
	return k;
}

void ponyfs_read_release(struct ponyfs *fs, struct ponyfs_read_hold *hold)
{
	ponyfs_stream_refs_release(fs, hold);
	ponyfs_stream_put(fs, hold->stream);
	hold->stream = NULL;
}

ssize_t ponyfs_read(struct ponyfs *fs, struct ponyfs_inode *in, void *buf, size_t size,
		    uint64_t off, struct ponyfs_read_hold *hold)
{
	_cleanup_(freep) struct read_plan *plan = malloc(sizeof(*plan));
	_cleanup_(freep) uint8_t *tmp = NULL;
	_cleanup_(freep) struct read_share *share = NULL;
	struct crypt_contents *cipher = NULL;
	struct ponyfs_readahead ra = { .stream = false, .n = 0 };
	struct ponyfs_stream *stream = NULL;
	size_t done = 0;
	ssize_t r = 0;

	if (!plan)
		return -ENOMEM;
	/* Scrub backs off while this is not zero (scrub.c). */
	__atomic_add_fetch(&fs->reads_in_flight, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&fs->lock);
	/* An encrypted file's reader gets a cipher of its own: the I/O and
	 * the decryption run unlocked, alongside other readers. */
	r = ponyfs_crypt_reader_locked(in, &cipher);
	/* A large one a second, for the pieces the helper takes. */
	if (r >= 0 && cipher && size >= SHARE_MIN_BLOCKS * BS && (share = calloc(1, sizeof(*share)))) {
		share->share.cipher[0] = cipher;
		if (ponyfs_crypt_reader_locked(in, &share->share.cipher[1]) < 0) {
			free(share);
			share = NULL;
		}
	}
	if (r >= 0 && !fs->shut_down && off < in->size) {
		ponyfs_readahead_plan_locked(fs, in, off, size, &ra);
		/* An encrypted file's large reads go around the host's page
		 * cache (a stream's buffers, or runs_fetch_direct()) once that
		 * works: a hint would fill it for nothing, and read the disk
		 * twice. */
		if (cipher && size >= DIRECT_MIN_BLOCKS * BS &&
		    __atomic_load_n(&fs->crypt_direct, __ATOMIC_RELAXED))
			ra.n = 0;
		if (ra.n) {     /* the kernel queues the reads; no waiting under the lock */
			pthread_mutex_unlock(&fs->lock);
			ponyfs_readahead_issue(fs, &ra);
			pthread_mutex_lock(&fs->lock);
		}
	}
	/* A stream: its READs answered from buffers read ahead (none unless
	 * readahead.c judged it a stream of its own); an encrypted file's
	 * hold its ciphertext, checked and decrypted in to as any run. */
	if (ra.buffered)
		stream = ponyfs_stream_get_locked(fs, in);
	while (r >= 0 && !fs->shut_down && done < size && off + done < in->size) {
		uint64_t pos = off + done, first = pos / BS;
		size_t want = (size_t)MIN((uint64_t)(size - done), in->size - pos);
		uint64_t n = MIN((uint64_t)PONYFS_IO_BLOCKS, DIV_ROUND_UP(pos + want, BS) - first);
		size_t skip = (size_t)(pos % BS), len = (size_t)MIN(n * BS - skip, want);
		/* Whole blocks go straight to the caller: one copy less. */
		uint8_t *to = !skip && len == n * BS ? (uint8_t *)buf + done : tmp;
		int fetched;
		bool direct, ok, refd;

		/* Aligned, for the direct reads of an encrypted file's blocks. */
		if (!to && !(to = tmp = util_aligned_alloc((size_t)PONYFS_IO_BLOCKS * BS))) {
			r = -ENOMEM;
			break;
		}
		r = plan_locked(fs, in, true, first, n, to, plan);
		if (r < 0)
			break;
		if (plan->nrun) {
			pthread_rwlock_rdlock(&fs->reuse_lock);
			pthread_mutex_unlock(&fs->lock);
			/* A stream's runs all land in to: from its buffers, or read
			 * around the cache there (stream.c); checked below. */
			direct = (cipher && n >= DIRECT_MIN_BLOCKS) || stream;
			/* A plain chunk a stream holds is answered from its
			 * buffers, not copied (the copy was a fifth of the daemon's
			 * CPU on a cold read, BENCHMARKS.md session 39): pinned
			 * until the answer is written, each block's CRC32C (the
			 * buffer's, computed as it filled) the plan's. Else, with
			 * nothing pinned, the copying path reads, checks, repairs. */
			refd = hold && stream && !cipher && to != tmp &&
			       ponyfs_stream_refs_take(fs, stream, plan->run, plan->nrun, first,
						       plan->csum, done, hold);
			if (refd) {
				fetched = 1;
			} else if (stream) {
				/* Copied from buffers whose worker's CRCs are the
				 * plan's: checked; only an encrypted chunk's decrypt
				 * is left. */
				fetched = ponyfs_stream_copy(fs, stream, plan->run, plan->nrun, first,
							     plan->csum, to);
				plan->checked = fetched == 1;
			} else {
				fetched = direct ? runs_fetch_direct(fs, plan, first, to) : 0;
			}
			fetched = stream && fetched >= 0 ? 1 : fetched;
			if (fetched >= 0 && direct && !stream) {
				__atomic_store_n(&fs->crypt_direct, fetched == 1, __ATOMIC_RELAXED);
				__atomic_add_fetch(&fs->reads_direct, (uint64_t)fetched, __ATOMIC_RELAXED);
			}
			ok = fetched >= 0 &&
			     (refd || (share ? plan_run_shared(fs, in, share, direct, plan, first, to)
					     : plan_run(fs, in, cipher, false, direct, plan, first, to)) == 0);
			pthread_rwlock_unlock(&fs->reuse_lock);
			for (unsigned i = 0; ok && fetched != 1 && i < plan->nrun; i++)
				ponyfs_readahead_drop(fs, &ra, plan->run[i].pblock, plan->run[i].n);
			pthread_mutex_lock(&fs->lock);
			/* The locked path reads again: it repairs and reports. */
			if (!ok) {
				fs->reads_redone++;
				r = ponyfs_disk_read_locked(fs, in, first, n, to);
				if (r < 0)
					break;
				pages_copy(in, first, n, to);
			}
		}
		if (to == tmp)
			memcpy((uint8_t *)buf + done, tmp + skip, len);
		done += len;
	}
	if (fs->shut_down && !done)
		r = -EIO;
	if (r >= 0 || done)
		ponyfs_atime_access_locked(fs, in);
	pthread_mutex_unlock(&fs->lock);
	__atomic_store_n(&fs->read_end_ns, util_now_ns(), __ATOMIC_RELAXED);
	__atomic_sub_fetch(&fs->reads_in_flight, 1, __ATOMIC_RELAXED);
	/* Pinned buffers keep their stream until the answer is written. */
	if (hold && hold->nref)
		hold->stream = stream;
	else
		ponyfs_stream_put(fs, stream);
	crypt_contents_free(cipher);
	if (share)
		crypt_contents_free(share->share.cipher[1]);
	return done ? (ssize_t)done : r;
}
