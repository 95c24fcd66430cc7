/*
 * gather.c - cached pages on their way to the data region, and the
 * gathering of many small files' blocks into one write.
 *
 * A writeback of many small files (an untar's, when their reservations
 * fill the metadata space, or the commit's) gives each file the blocks the
 * allocator hands out next, side by side. One write per file was a system
 * call, the host filesystem's block mapping and a device kick each: 15%
 * of the daemon's CPU over an untar (BENCHMARKS.md, session 37). Between
 * ponyfs_gather_begin() and ponyfs_gather_end(), a write of a few blocks
 * that follows the last one is copied after it into one buffer, which
 * goes out as one write when the next does not follow, the buffer is
 * full, or at the end.
 *
 * Nothing reads a gathered block before it is written: the blocks were
 * free until this writeback took them (blocks freed in the open
 * transaction are not handed out again before it commits, alloc.c), and
 * fs->lock is held from begin to end, so no reader can find the extent
 * that points at them, and no commit can flush or commit before them
 * (rule 1 stays as it was: the commit's flush follows the end).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define IO_BLOCKS PONYFS_IO_BLOCKS

/* Runs up to this many blocks are gathered; longer ones go out in place
 * (a copy of a megabyte costs more than the write it would save). */
#define GATHER_RUN_MAX 16u

/* The writeback's bounce buffer, allocated on first need, aligned for
 * bdev_pwrite_direct() as the slabs' pages are. */
static uint8_t *bounce_get(uint8_t **buf)
{
	if (!*buf)
		*buf = aligned_alloc(BDEV_DIRECT_ALIGN, (size_t)IO_BLOCKS * BS);
	return *buf;
}

/* Writes what is gathered; it is empty afterwards, written or not. */
static int gather_flush(struct ponyfs *fs)
{
	struct ponyfs_gather *g = &fs->gather;
	int r;

	if (!g->n)
		return 0;
	r = bdev_pwrite_direct(fs->data, g->buf, g->n * BS, g->start * BS);
	g->n = 0;
	return r;
}

uint8_t *ponyfs_gather_room(struct ponyfs *fs, uint64_t k, uint64_t p, int *err)
{
	struct ponyfs_gather *g = &fs->gather;
	uint8_t *room;

	*err = 0;
	if (!g->depth || k > GATHER_RUN_MAX)
		return NULL;
	if (g->n && (p != g->start + g->n || g->n + k > IO_BLOCKS))
		*err = gather_flush(fs);
	if (*err < 0)
		return NULL;
	if (!g->n)
		g->start = p;
	room = g->buf + g->n * BS;
	g->n += k;
	return room;
}

void ponyfs_gather_begin(struct ponyfs *fs)
{
	struct ponyfs_gather *g = &fs->gather;

	if (!g->buf)
		g->buf = aligned_alloc(BDEV_DIRECT_ALIGN, (size_t)IO_BLOCKS * BS);
	/* Without the buffer, every write goes out on its own, as before. */
	if (g->buf)
		g->depth++;
}

int ponyfs_gather_end(struct ponyfs *fs)
{
	struct ponyfs_gather *g = &fs->gather;
	int r;

	if (!g->depth || --g->depth)    /* not begun, or a writeback inside one */
		return 0;
	r = gather_flush(fs);
	if (r < 0)      /* extent rows of the transaction point at blocks never written */
		ponyfs_fail_locked(fs, r, "writeback of gathered data failed");
	return r;
}

void ponyfs_gather_done(struct ponyfs *fs)
{
	free(fs->gather.buf);
	fs->gather.buf = NULL;
}

/*
 * Writes k cached pages to blocks [p, p+k). A few blocks are gathered
 * while a gather is on. Pages cut in order from one slab (pages.c) sit
 * side by side in memory, as a sequential writer's do: those go out from
 * where they are, without a copy; scattered ones are gathered into *buf
 * (allocated on first need) and written at once. Either way past the
 * host's page cache (bdev_pwrite_direct): the daemon keeps its own cache
 * of what it wrote, and the copy into the host's was three quarters of its
 * CPU time over a sequential write.
 */
int ponyfs_pages_write(struct ponyfs *fs, const struct ponyfs_page *pg, uint64_t k, uint64_t p,
		       uint8_t **buf)
{
	unsigned runs = 1;
	int r = 0;

	uint8_t *room = ponyfs_gather_room(fs, k, p, &r);

	if (room) {
		for (uint64_t i = 0; i < k; i++)
			memcpy(room + i * BS, pg[i].data, BS);
		return 0;
	}
	if (r < 0)
		return r;
	for (uint64_t i = 1; i < k; i++)
		runs += pg[i].data != pg[i - 1].data + BS;
	if (runs <= 4) {
		for (uint64_t i = 0, j; r >= 0 && i < k; i = j) {
			for (j = i + 1; j < k && pg[j].data == pg[j - 1].data + BS; j++)
				;
			r = bdev_pwrite_direct(fs->data, pg[i].data, (j - i) * BS, (p + i) * BS);
		}
		return r;
	}
	if (!bounce_get(buf))
		return -ENOMEM;
	for (uint64_t i = 0; i < k; i++)
		memcpy(*buf + i * BS, pg[i].data, BS);
	return bdev_pwrite_direct(fs->data, *buf, k * BS, p * BS);
}
