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
 */
#include "internal.h"

#define RA_WINDOW (32ull << 20)         /* how far ahead of the reader */
#define RA_STEP (8ull << 20)            /* the least worth a round of hints */
#define RA_SLACK (16ull << 20)          /* a read this near the last end follows it */

static void ra_add(struct ponyfs_readahead *ra, uint64_t pblock, uint64_t n)
{
	struct ponyfs_ra_run *last = ra->n ? &ra->run[ra->n - 1] : NULL;

	if (last && last->pblock + last->n == pblock)
		last->n += n;
	else
		ra->run[ra->n++] = (struct ponyfs_ra_run){ pblock, n };
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
}

void ponyfs_readahead_issue(struct ponyfs *fs, const struct ponyfs_readahead *ra)
{
	/* A hint: a failure (a gate cut by shutdown) shows at the read. */
	for (unsigned i = 0; i < ra->n; i++)
		bdev_advise(fs->data, ra->run[i].pblock * BS, ra->run[i].n * BS, BDEV_WILLNEED);
}

void ponyfs_readahead_drop(struct ponyfs *fs, const struct ponyfs_readahead *ra, uint64_t pblock,
			   uint64_t n)
{
	/* Only once read and checked: a block that failed went to the
	 * locked path, which reads it again. A hint; a failure changes nothing. */
	if (ra->stream)
		bdev_advise(fs->data, pblock * BS, n * BS, BDEV_DONTNEED);
}
