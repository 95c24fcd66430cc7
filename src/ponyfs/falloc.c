/*
 * falloc.c - preallocation, punch hole and block counts. ponyfs is
 * copy-on-write, yet a write into a fallocated range must not fail with
 * ENOSPC and must not grow the file's blocks. So fallocate takes the
 * space at once (a reservation of the range's holes, counted against free
 * space) and writeback makes it real: the holes become *unwritten*
 * extents, allocated blocks that read as zeros, in the same transaction
 * as the file's data and after its pending truncation, so a file being
 * rewritten is never committed half-way (rule 2). The first write into an
 * unwritten block goes in place: the committed state still calls the
 * block unwritten, so a crash before the commit reads zeros there, never a
 * torn or partial block, and the commit that makes it written comes after
 * the data flush (rule 1). Later overwrites are copy-on-write again.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INPLACE_MAX 256u        /* blocks per in-place write: 1 MiB */

/* The first block a pending truncation removes (none: UINT64_MAX). */
static uint64_t trunc_cut(const struct ponyfs_inode *in)
{
	return in->trunc_pending ? DIV_ROUND_UP(in->trunc_to, BS) : UINT64_MAX;
}

/* Cached pages of kind NEW in blocks [first, end): they hold a reservation already. */
static uint64_t new_pages(const struct ponyfs_inode *in, uint64_t first, uint64_t end)
{
	uint64_t n = 0;

	for (size_t lo = ponyfs_page_pos(in, first); lo < in->npages && in->pages[lo].index < end; lo++)
		n += in->pages[lo].kind == PONYFS_PAGE_NEW;
	return n;
}

/*
 * Blocks of [first, end) that writeback will find to be holes (past the
 * pending cut, all of them) and that no NEW page has reserved already:
 * what a fallocate of the range must reserve.
 */
static int count_holes(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t first, uint64_t end,
		       uint64_t *ret)
{
	uint64_t cut = trunc_cut(in), lim = MIN(end, cut), from = MIN(end, MAX(first, cut));
	uint64_t n = end - from - new_pages(in, from, end);
	int r = 0;

	for (uint64_t blk = first; r >= 0 && blk < lim;) {
		uint64_t run;
		int flags;

		r = ponyfs_ext_at(fs, in->ino, blk, lim, &flags, &run, NULL, NULL, NULL);
		if (flags < 0)
			n += run - new_pages(in, blk, blk + run);
		blk += run;
	}
	*ret = n;
	return r;
}

static bool in_falloc(const struct ponyfs_inode *in, uint64_t index)
{
	for (size_t i = 0; i < in->nfalloc && in->falloc[i].first <= index; i++)
		if (index < in->falloc[i].end)
			return true;
	return false;
}

/* Adds [first, end) to the sorted ranges, merged with those it meets or touches. */
static int falloc_add(struct ponyfs_inode *in, uint64_t first, uint64_t end)
{
	size_t i = 0, j;
	void *p = realloc(in->falloc, (in->nfalloc + 1) * sizeof(*in->falloc));

	if (!p)
		return -ENOMEM;
	in->falloc = p;
	while (i < in->nfalloc && in->falloc[i].end < first)
		i++;
	for (j = i; j < in->nfalloc && in->falloc[j].first <= end; j++) {
		first = MIN(first, in->falloc[j].first);
		end = MAX(end, in->falloc[j].end);
	}
	/* Ranges [i, j) merge into one at i. */
	memmove(in->falloc + i + 1, in->falloc + j, (in->nfalloc - j) * sizeof(*in->falloc));
	in->falloc[i] = (struct ponyfs_falloc){ first, end };
	in->nfalloc = in->nfalloc - (j - i) + 1;
	return 0;
}

void ponyfs_falloc_trim(struct ponyfs_inode *in, uint64_t keep)
{
	while (in->nfalloc && in->falloc[in->nfalloc - 1].first >= keep)
		in->nfalloc--;
	if (in->nfalloc && in->falloc[in->nfalloc - 1].end > keep)
		in->falloc[in->nfalloc - 1].end = keep;
}

int ponyfs_falloc_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off, uint64_t len)
{
	uint64_t first = off / BS, end = DIV_ROUND_UP(off + len, BS), pos = first, need = 0, n;
	/* Renamed in the open transaction: written back as it was (bound.c). */
	int r = ponyfs_inode_unbind_locked(fs, in);

	/* Only what no pending range covers yet needs reserving. */
	for (size_t i = 0; r >= 0 && i < in->nfalloc && pos < end; i++) {
		const struct ponyfs_falloc *f = &in->falloc[i];

		if (f->end <= pos)
			continue;
		if (f->first >= end)
			break;
		if (f->first > pos) {
			r = count_holes(fs, in, pos, f->first, &n);
			need += n;
		}
		pos = MAX(pos, f->end);
	}
	if (r >= 0 && pos < end) {
		r = count_holes(fs, in, pos, end, &n);
		need += n;
	}
	/* The unwritten rows writeback fills the holes with, then their blocks. */
	if (r >= 0)
		r = ponyfs_inode_reserve_locked(fs, in, 0, UINT64_MAX, need);
	if (r >= 0 && need)
		r = ponyfs_reserve_locked(fs, need);
	if (r >= 0) {
		r = falloc_add(in, first, end);
		if (r < 0)
			fs->reserved -= need;
	}
	if (r >= 0) {
		in->falloc_res += need;
		ponyfs_dirty_add(fs, in);
	}
	ponyfs_inode_settle_locked(fs, in);
	return r;
}

/* Writing back and committing frees the blocks the loans overwrote. */
static int loans_return(struct ponyfs *fs, struct ponyfs_inode *in)
{
	int r;

	in->opens++;            /* keeps in cached through the writeback */
	r = ponyfs_writeback_all_locked(fs, true);
	in->opens--;
	return r < 0 ? r : ponyfs_commit_locked(fs);
}

int ponyfs_loans_prepare_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t n)
{
	if (!fs->ow_reserve || ponyfs_reserve_fits(fs, n) ||
	    fs->ow_dirty + fs->ow_written + n <= fs->ow_reserve)
		return 0;
	return loans_return(fs, in);
}

/*
 * A full filesystem: an overwrite of a written block borrows its new block
 * from the overwrite reserve. When all of it is lent out, writing back and
 * committing frees the overwritten blocks and returns it; files held back
 * from commits (a rewrite in progress, rule 2) keep their loans, so only
 * when they hold the whole reserve does an overwrite see ENOSPC.
 */
static int overwrite_borrow(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t index,
			    enum ponyfs_page_kind *ret)
{
	uint64_t run;
	int flags, r;

	if (index >= trunc_cut(in) || !fs->ow_reserve)
		return -ENOSPC;
	r = ponyfs_ext_at(fs, in->ino, index, index + 1, &flags, &run, NULL, NULL, NULL);
	if (r < 0 || flags != 0)
		return r < 0 ? r : -ENOSPC;     /* a hole or unwritten: not an overwrite */
	if (fs->ow_dirty + fs->ow_written >= fs->ow_reserve) {
		r = loans_return(fs, in);
		if (r < 0)
			return r;
		if (fs->ow_dirty + fs->ow_written >= fs->ow_reserve)
			return -ENOSPC;
	}
	fs->ow_dirty++;
	fs->stats.overwrite_loans++;
	*ret = PONYFS_PAGE_OVERWRITE;
	return 0;
}

int ponyfs_page_kind_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t index,
			    enum ponyfs_page_kind *ret)
{
	int64_t any = 0;
	uint64_t run;
	int flags = -1, r;

	if (in->unwritten < 0) {
		r = ponyfs_sql_int(fs, &any, "SELECT 1 FROM extents WHERE ino = ?1 AND flags & 1 "
				   "LIMIT 1", 1, (int64_t)in->ino);
		if (r < 0 && r != -ENOENT)
			return r;
		in->unwritten = any != 0;
	}
	if ((in->unwritten || in->nfalloc) && index < trunc_cut(in)) {
		r = ponyfs_ext_at(fs, in->ino, index, index + 1, &flags, &run, NULL, NULL, NULL);
		if (r < 0)
			return r;
	}
	if (flags >= 0 && (flags & PONYFS_EXT_UNWRITTEN)) {
		*ret = PONYFS_PAGE_INPLACE;
		return 0;
	}
	if (flags < 0 && in->nprepaid < in->falloc_res && in_falloc(in, index)) {
		*ret = PONYFS_PAGE_PREPAID;
		return 0;
	}
	*ret = PONYFS_PAGE_NEW;
	r = ponyfs_reserve_locked(fs, 1);
	return r == -ENOSPC ? overwrite_borrow(fs, in, index, ret) : r;
}

/* Fills the holes of [first, end) with unwritten extents. */
static int falloc_fill(struct ponyfs *fs, uint64_t ino, uint64_t first, uint64_t end)
{
	int r = 0;

	for (uint64_t blk = first; r >= 0 && blk < end;) {
		uint64_t run, p, k;
		int flags;

		r = ponyfs_ext_at(fs, ino, blk, end, &flags, &run, NULL, NULL, NULL);
		if (r >= 0 && flags < 0) {
			r = ponyfs_alloc_locked(fs, run, &p, &k);
			if (r >= 0)
				r = ponyfs_ext_insert(fs, ino, blk, k, p, NULL, PONYFS_EXT_UNWRITTEN);
			run = k;
		}
		blk += run;
	}
	return r;
}

int ponyfs_falloc_apply_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	int r = 0;

	if (!in->nfalloc)
		return 0;
	/* The reservation and the NEW pages' own cover every hole (count_holes
	 * at fallocate time saw this truncation already), so the allocations
	 * below fit; NEW pages over a filled hole give theirs back below. */
	assert(fs->reserved >= in->falloc_res);
	fs->reserved -= in->falloc_res;
	in->falloc_res = 0;
	for (size_t i = 0; r >= 0 && i < in->nfalloc; i++)
		r = falloc_fill(fs, in->ino, in->falloc[i].first, in->falloc[i].end);
	in->unwritten = 1;
	/* Pages over what is now unwritten go there in place. */
	for (size_t i = 0; r >= 0 && i < in->npages; i++) {
		struct ponyfs_page *pg = &in->pages[i];
		uint64_t run;
		int flags;

		if (pg->kind == PONYFS_PAGE_INPLACE || !in_falloc(in, pg->index))
			continue;
		r = ponyfs_ext_at(fs, in->ino, pg->index, pg->index + 1, &flags, &run, NULL, NULL, NULL);
		if (r < 0 || flags < 0 || !(flags & PONYFS_EXT_UNWRITTEN)) {
			r = pg->kind == PONYFS_PAGE_PREPAID ? -EUCLEAN : r;
			continue;
		}
		if (pg->kind == PONYFS_PAGE_NEW) {
			fs->reserved--;
			in->nnew--;
		} else {
			in->nprepaid--;
		}
		pg->kind = PONYFS_PAGE_INPLACE;
	}
	in->nfalloc = 0;
	return r;
}

/* Replaces the unwritten extent at foff with its parts: [idx, idx+n) written. */
static int ext_convert(struct ponyfs *fs, uint64_t ino, uint64_t foff, uint64_t nb, uint64_t pblock,
		       uint64_t idx, uint64_t n, const uint8_t *csums, unsigned flags)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_DEL);
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)foff);
	r = ponyfs_step_done(fs, s);
	if (r >= 0 && idx > foff)
		r = ponyfs_ext_insert(fs, ino, foff, idx - foff, pblock, NULL, PONYFS_EXT_UNWRITTEN);
	if (r >= 0)
		r = ponyfs_ext_insert(fs, ino, idx, n, pblock + (idx - foff), csums, flags);
	if (r >= 0 && idx + n < foff + nb)
		r = ponyfs_ext_insert(fs, ino, idx + n, foff + nb - idx - n,
				      pblock + (idx + n - foff), NULL, PONYFS_EXT_UNWRITTEN);
	return r;
}

int ponyfs_write_inplace_locked(struct ponyfs *fs, struct ponyfs_inode *in,
				const struct ponyfs_page *pg, uint64_t k, uint8_t **buf)
{
	uint8_t csums[PONYFS_SEAL_BYTES * INPLACE_MAX];
	int r = 0;

	for (uint64_t i = 0; r >= 0 && i < k;) {
		uint64_t idx = pg[i].index, foff = 0, nb = 0, pblock = 0, n;
		sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_PREV);
		bool ok = false;

		sqlite3_bind_int64(s, 1, (int64_t)in->ino);
		sqlite3_bind_int64(s, 2, (int64_t)idx);
		r = ponyfs_step_row(fs, s);
		if (r > 0) {
			foff = (uint64_t)sqlite3_column_int64(s, 0);
			nb = (uint64_t)sqlite3_column_int64(s, 1);
			pblock = (uint64_t)sqlite3_column_int64(s, 2);
			ok = foff + nb > idx && (sqlite3_column_int64(s, 4) & PONYFS_EXT_UNWRITTEN);
		}
		sqlite3_reset(s);
		if (r < 0)
			return r;
		if (!ok)
			return -EUCLEAN;        /* an INPLACE page always has its unwritten block */
		n = MIN(MIN(k - i, foff + nb - idx), (uint64_t)INPLACE_MAX);
		r = ponyfs_pages_out(fs, in, pg + i, n, pblock + (idx - foff), buf, csums);
		if (r >= 0)
			r = ext_convert(fs, in->ino, foff, nb, pblock, idx, n, csums,
					ponyfs_ext_written_flags(in));
		fs->data_unflushed = true;
		fs->stats.data_blocks_written += n;
		i += n;
	}
	return r;
}

int ponyfs_punch_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off, uint64_t len)
{
	uint64_t end = MIN(off + len, in->size);
	uint64_t first = DIV_ROUND_UP(off, BS), last = end / BS;
	static const uint8_t zeros[BS];
	struct ponyfs_cost c;
	int64_t rows = 0;
	int r;

	if (off >= end)
		return 0;
	r = ponyfs_writeback_locked(fs, in);
	/* Partial blocks at either edge are zeroed by writing zeros (cached,
	 * outside the blocks removed below). */
	if (r >= 0 && off % BS)
		r = (int)ponyfs_write_locked(fs, in, zeros, (size_t)MIN(end - off, BS - off % BS), off);
	if (r >= 0 && end % BS && end / BS >= first && end > off)
		r = (int)ponyfs_write_locked(fs, in, zeros, (size_t)(end % BS), end - end % BS);
	/* The extents of whole blocks go now: their rows, each freeing a run;
	 * the inode's new times at its writeback. */
	if (r >= 0 && first < last)
		r = ponyfs_sql_int(fs, &rows, "SELECT count(*) FROM extents WHERE ino = ?1 AND "
				   "foff < ?3 AND foff + nblocks > ?2", 3, (int64_t)in->ino,
				   (int64_t)first, (int64_t)last);
	c = (struct ponyfs_cost){ .run_bytes = 2 * PONYFS_EXT_ROW_BYTES * (uint64_t)(rows + 1),
				  .free_cells = 3 * (uint64_t)rows, .frees = true };
	if (r >= 0)
		r = ponyfs_inode_reserve_locked(fs, in, 0, UINT64_MAX, 0);
	if (r >= 0 && first < last)
		r = ponyfs_meta_reserve_locked(fs, &c, in);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0 && first < last)
		r = ponyfs_extents_remove_locked(fs, in->ino, first, last);
	if (r >= 0)
		ponyfs_inode_touch(fs, in);
	return r < 0 ? r : 0;
}

uint64_t ponyfs_blocks_with_cached(struct ponyfs *fs, uint64_t ino, uint64_t extent_blocks)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);

	/* Pages bound for new blocks add them (copy-on-write), fallocated
	 * holes theirs; unwritten blocks are extents already. */
	if (in)
		extent_blocks += in->nnew + in->falloc_res;
	return extent_blocks * (BS / 512);
}
