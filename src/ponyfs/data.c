/*
 * data.c - file data: cached dirty blocks per inode (read.c merges them
 * with the extents on disk), and writeback,
 * which moves one file's cached state into the open transaction in one go:
 * a pending truncation, its fallocated ranges (falloc.c), its new blocks
 * (copy-on-write: freshly allocated, the old ones freed with the
 * transaction; only a never-written unwritten block is written in place),
 * its size and times.
 * Nothing about a file's data reaches the database any other way, so the
 * database never holds a size without the data under it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define IO_BLOCKS PONYFS_IO_BLOCKS

static unsigned hash_of(uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> 56);
}

struct ponyfs_inode *ponyfs_inode_find(struct ponyfs *fs, uint64_t ino)
{
	for (struct ponyfs_inode *in = fs->hash[hash_of(ino)]; in; in = in->hnext)
		if (in->ino == ino)
			return in;
	return NULL;
}

int ponyfs_inode_get_locked(struct ponyfs *fs, uint64_t ino, struct ponyfs_inode **ret)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);
	sqlite3_stmt *s;
	unsigned h;
	int r;

	if (in) {
		*ret = in;
		return 0;
	}
	s = ponyfs_stmt(fs, ST_INODE_GET);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	r = ponyfs_step_row(fs, s);
	if (r <= 0) {
		sqlite3_reset(s);
		return r < 0 ? r : -ENOENT;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		sqlite3_reset(s);
		return -ENOMEM;
	}
	in->ino = ino;
	in->size = (uint64_t)sqlite3_column_int64(s, 4);
	in->unwritten = -1;
	r = ponyfs_crypt_decode(sqlite3_column_blob(s, 10), (size_t)sqlite3_column_bytes(s, 10),
				&in->crypt);
	sqlite3_reset(s);
	if (r < 0) {
		free(in);
		return r;
	}
	h = hash_of(ino);
	in->hnext = fs->hash[h];
	fs->hash[h] = in;
	*ret = in;
	return 0;
}

void ponyfs_dirty_add(struct ponyfs *fs, struct ponyfs_inode *in)
{
	if (in->dprev)
		return;
	in->dirty_ns = util_now_ns();
	in->dnext = fs->dirty;
	if (fs->dirty)
		fs->dirty->dprev = &in->dnext;
	fs->dirty = in;
	in->dprev = &fs->dirty;
}

/* Off the dirty list: nothing left to write back, so nothing bound either. */
static void dirty_del(struct ponyfs *fs, struct ponyfs_inode *in)
{
	if (!in->dprev)
		return;
	if (in->bound) {
		in->bound = false;
		fs->nbound--;
	}
	*in->dprev = in->dnext;
	if (in->dnext)
		in->dnext->dprev = in->dprev;
	in->dprev = NULL;
	in->dnext = NULL;
}

/* Takes page i's block reservation off the books (its data stays). */
static void page_unreserve(struct ponyfs *fs, struct ponyfs_inode *in, size_t i)
{
	if (in->pages[i].kind == PONYFS_PAGE_NEW) {
		fs->reserved--;
		in->nnew--;
	} else if (in->pages[i].kind == PONYFS_PAGE_PREPAID) {
		in->nprepaid--;         /* the range's reservation stays until writeback */
	} else if (in->pages[i].kind == PONYFS_PAGE_OVERWRITE) {
		fs->ow_dirty--;
	}
}

/* Runs of consecutive indexes in in->pages: each is at least an extent row. */
static void page_runs_count(struct ponyfs_inode *in)
{
	in->page_runs = 0;
	for (size_t i = 0; i < in->npages; i++)
		in->page_runs += !i || in->pages[i].index != in->pages[i - 1].index + 1;
}

static void pages_free(struct ponyfs *fs, struct ponyfs_inode *in, size_t from)
{
	for (size_t i = from; i < in->npages; i++) {
		page_unreserve(fs, in, i);
		ponyfs_page_free(fs, in->pages[i].data);
	}
	fs->dirty_bytes -= (uint64_t)(in->npages - from) * BS;
	in->npages = from;
	page_runs_count(in);
}

/* Forgets all cached state of in, written back or not, and frees it. */
void ponyfs_inode_drop_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	struct ponyfs_inode **pp = &fs->hash[hash_of(in->ino)];

	while (*pp != in)
		pp = &(*pp)->hnext;
	*pp = in->hnext;
	dirty_del(fs, in);
	ponyfs_space_release_locked(fs, in, false);
	pages_free(fs, in, 0);
	fs->reserved -= in->falloc_res;
	ponyfs_crypt_close(in);
	ponyfs_stream_stop_locked(fs, in);
	free(in->falloc);
	free(in->pages);
	free(in);
}

/* Frees in when nothing holds it: not open and nothing left to write back. */
void ponyfs_inode_put_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	if (!in->opens && !in->dprev)
		ponyfs_inode_drop_locked(fs, in);
}

size_t ponyfs_page_pos(const struct ponyfs_inode *in, uint64_t index)
{
	size_t lo = 0, hi = in->npages;

	if (hi && in->pages[hi - 1].index < index)
		return hi;              /* appending: the common case */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (in->pages[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The cached page for index, made (and filled from disk when fill) if
 * missing. The caller has reserved what writing it back costs the
 * metadata (ponyfs_inode_reserve_locked), before anything changed.
 */
static int page_get(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t index, bool fill,
		    uint8_t **ret)
{
	size_t pos = ponyfs_page_pos(in, index);
	enum ponyfs_page_kind kind = PONYFS_PAGE_NEW;
	uint8_t *data;
	void *grown;
	int r = 0;

	if (pos < in->npages && in->pages[pos].index == index) {
		*ret = in->pages[pos].data;
		return 0;
	}
	grown = util_array_grow(in->pages, &in->cap, in->npages, sizeof(*in->pages), 16);
	if (grown)
		in->pages = grown;
	data = grown ? ponyfs_page_alloc(fs) : NULL;    /* !fill: the caller writes it whole */
	if (!data) {
		ponyfs_inode_settle_locked(fs, in);
		return -ENOMEM;
	}
	if (fill && index * BS < in->size)
		r = ponyfs_disk_read_locked(fs, in, index, 1, data);
	else if (fill)
		memset(data, 0, BS);
	if (r >= 0)
		r = ponyfs_page_kind_locked(fs, in, index, &kind);
	if (r < 0) {
		ponyfs_page_free(fs, data);
		ponyfs_inode_settle_locked(fs, in);
		return r;
	}
	pos = ponyfs_page_pos(in, index);      /* the kind may have written the file back */
	in->page_runs += 1 - (pos > 0 && in->pages[pos - 1].index + 1 == index) -
			 (pos < in->npages && in->pages[pos].index == index + 1);
	memmove(in->pages + pos + 1, in->pages + pos, (in->npages - pos) * sizeof(*in->pages));
	in->pages[pos] = (struct ponyfs_page){ .index = index, .data = data, .kind = (uint8_t)kind };
	in->npages++;
	in->nnew += kind == PONYFS_PAGE_NEW;
	in->nprepaid += kind == PONYFS_PAGE_PREPAID;
	fs->dirty_bytes += BS;
	*ret = data;
	return 0;
}

void ponyfs_inode_touch(struct ponyfs *fs, struct ponyfs_inode *in)
{
	in->mtime = in->ctime = ponyfs_now();
	in->size_dirty = true;
	ponyfs_times_changed(fs, in->ino, in->mtime);
	ponyfs_dirty_add(fs, in);
}

/* Pages of [first, last] not cached yet. */
static uint64_t pages_missing(const struct ponyfs_inode *in, uint64_t first, uint64_t last)
{
	uint64_t n = last - first + 1;

	if (!in->npages || in->pages[in->npages - 1].index < first)
		return n;       /* an append */
	for (size_t pos = ponyfs_page_pos(in, first); pos < in->npages && in->pages[pos].index <= last;
	     pos++)
		n--;
	return n;
}

/*
 * Room for a whole write call, taken before it copies a byte. Making room
 * writes files back and commits; done now, that commits only what earlier
 * calls wrote. In the middle of the call the file being copied into stays
 * out of such writebacks (copying_in): a crash must never keep half a call
 * (the soak saw a new 57,967-byte file come back 4 KiB long).
 */
static int write_prepare(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t off, size_t size)
{
	uint64_t n = pages_missing(in, off / BS, (off + size - 1) / BS);
	int r;

	if (!n)
		return 0;
	r = ponyfs_loans_prepare_locked(fs, in, n);
	if (r >= 0)
		r = ponyfs_inode_reserve_locked(fs, in, n, UINT64_MAX, 0);
	return r;
}

ssize_t ponyfs_write_locked(struct ponyfs *fs, struct ponyfs_inode *in, const void *buf,
			    size_t size, uint64_t off)
{
	size_t done = 0;
	int r;

	if (fs->broken)
		return fs->broken;
	if (off + size < off || off + size > (1ull << 50))
		return -EFBIG;
	if (!size)
		return 0;
	/* Renamed in the open transaction: that state commits with the name,
	 * not part of this call's (bound.c). */
	r = ponyfs_inode_unbind_locked(fs, in);
	if (r < 0)
		return r;
	/* No room for all of it: for as much as there is (a short write). */
	while ((r = write_prepare(fs, in, off, size)) == -ENOSPC && size > BS - off % BS) {
		uint64_t pages = (off + size - 1) / BS - off / BS + 1;

		size = (size_t)((off / BS + pages / 2) * BS - off);
	}
	if (r < 0)
		return r;
	in->copying_in = true;
	while (done < size) {
		uint64_t pos = off + done;
		size_t skip = (size_t)(pos % BS), len = MIN((size_t)BS - skip, size - done);
		uint8_t *page;

		r = page_get(fs, in, pos / BS, len != BS, &page);
		if (r < 0)
			break;
		memcpy(page + skip, (const uint8_t *)buf + done, len);
		done += len;
		if (pos + len > in->size)
			in->size = pos + len;
	}
	in->copying_in = false;
	if (done)
		ponyfs_inode_touch(fs, in);
	if (done < size)        /* the room taken for what did not get in */
		ponyfs_inode_settle_locked(fs, in);
	/* Over the budget the writer pays, as balance_dirty_pages() makes it:
	 * other files' cached data stays cached, so their fsyncs stay cheap.
	 * So does a file with more than PONYFS_STREAM_MAX cached, unless it
	 * is being rewritten after a truncation: committed half-written, it
	 * would break rule 2 (all-old or all-new). */
	if (fs->dirty_bytes > fs->dirty_max ||
	    (in->npages * (uint64_t)BS > PONYFS_STREAM_MAX && !in->trunc_pending)) {
		int w = ponyfs_writeback_locked(fs, in);

		if (w < 0 && !done)
			return w;
	}
	return done ? (ssize_t)done : r;
}

/* Extent rows that a truncation to size will remove or cut. */
static int trunc_rows(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t size, uint64_t *ret)
{
	uint64_t cut = DIV_ROUND_UP(in->trunc_pending ? MIN(in->trunc_to, size) : size, BS);
	int64_t n = 0;
	int r = ponyfs_sql_int(fs, &n, "SELECT count(*) FROM extents WHERE ino = ?1 AND "
			       "foff + nblocks > ?2", 2, (int64_t)in->ino, (int64_t)cut);

	*ret = (uint64_t)n;
	return r;
}

int ponyfs_truncate_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t size)
{
	uint64_t keep = DIV_ROUND_UP(size, BS), rows = UINT64_MAX;
	uint8_t *page = NULL;
	int r = 0;

	if (size > (1ull << 50))
		return -EFBIG;
	/* Renamed in the open transaction: the name commits with the content
	 * it was given, not with the truncation's (bound.c). */
	r = ponyfs_inode_unbind_locked(fs, in);
	if (r < 0)
		return r;
	/* The new last block keeps zeros past the end, on disk too. Its
	 * page first, while the file is still whole: on a full filesystem
	 * getting it may write the file back. */
	if (size < in->size && size % BS)
		r = ponyfs_inode_reserve_locked(fs, in, 1, UINT64_MAX, 0);
	if (r >= 0 && size < in->size && size % BS)
		r = page_get(fs, in, size / BS, true, &page);
	if (r >= 0 && size < in->size)
		r = trunc_rows(fs, in, size, &rows);
	/* Its writeback's cost, the extents it removes with it, before anything changes. */
	if (r >= 0)
		r = ponyfs_inode_reserve_locked(fs, in, 0, rows, 0);
	if (r < 0)
		return r;
	if (size < in->size) {
		pages_free(fs, in, ponyfs_page_pos(in, keep));
		ponyfs_falloc_trim(in, keep);
		if (page)
			memset(page + size % BS, 0, BS - size % BS);
		in->trunc_to = in->trunc_pending ? MIN(in->trunc_to, size) : size;
		in->trunc_pending = true;
		in->trunc_ns = util_now_ns();
		in->trunc_rows = rows;
	}
	in->size = size;
	ponyfs_inode_touch(fs, in);
	ponyfs_inode_settle_locked(fs, in);
	return 0;
}

struct ext_row { uint64_t foff, nb, pblock; uint8_t *csums; unsigned flags; };

int ponyfs_ext_at(struct ponyfs *fs, uint64_t ino, uint64_t blk, uint64_t end, int *ret_flags,
		  uint64_t *ret_run, uint64_t *ret_pblock, uint32_t *ret_csums, uint8_t *ret_seals)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_PREV);
	uint64_t next = end;
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)blk);
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		uint64_t foff = (uint64_t)sqlite3_column_int64(s, 0);
		uint64_t nb = (uint64_t)sqlite3_column_int64(s, 1);

		if (foff + nb > blk) {
			const uint8_t *csums = sqlite3_column_blob(s, 3);

			*ret_flags = (int)sqlite3_column_int64(s, 4);
			*ret_run = MIN(end, foff + nb) - blk;
			if (ret_pblock)
				*ret_pblock = (uint64_t)sqlite3_column_int64(s, 2) + (blk - foff);
			r = 0;
			if (ret_csums && !(*ret_flags & PONYFS_EXT_UNWRITTEN)) {
				size_t stride = ponyfs_csum_stride((unsigned)*ret_flags);
				const uint8_t *at = csums + stride * (blk - foff);

				if (!csums || (uint64_t)sqlite3_column_bytes(s, 3) != stride * nb)
					r = -EUCLEAN;
				for (uint64_t i = 0; r == 0 && i < *ret_run; i++)
					ret_csums[i] = util_get_le32(at + stride * i);
				/* A sealed block's GCM nonce and tag follow its CRC. */
				for (uint64_t i = 0; r == 0 && ret_seals && stride > 4 && i < *ret_run; i++)
					memcpy(ret_seals + (PONYFS_SEAL_BYTES - 4) * i, at + stride * i + 4,
					       PONYFS_SEAL_BYTES - 4);
			}
			sqlite3_reset(s);
			return r;
		}
	}
	sqlite3_reset(s);
	if (r < 0)
		return r;
	s = ponyfs_stmt(fs, ST_EXT_RANGE);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)blk);
	sqlite3_bind_int64(s, 3, (int64_t)MIN(end, (uint64_t)INT64_MAX));
	r = ponyfs_step_row(fs, s);
	if (r > 0)
		next = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	*ret_flags = -1;
	*ret_run = next - blk;
	return r < 0 ? r : 0;
}

int ponyfs_ext_insert(struct ponyfs *fs, uint64_t ino, uint64_t foff, uint64_t nb,
		      uint64_t pblock, const uint8_t *csums, unsigned flags)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_INS);

	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)foff);
	sqlite3_bind_int64(s, 3, (int64_t)nb);
	sqlite3_bind_int64(s, 4, (int64_t)pblock);
	if (csums)
		sqlite3_bind_blob(s, 5, csums, (int)(ponyfs_csum_stride(flags) * nb), SQLITE_TRANSIENT);
	else
		sqlite3_bind_zeroblob(s, 5, 0);  /* unwritten: no checksums */
	sqlite3_bind_int64(s, 6, flags);
	return ponyfs_step_done(fs, s);
}

static int ext_collect(struct ponyfs *fs, sqlite3_stmt *s, struct ext_row **rows, size_t *n,
		       uint64_t min_end)
{
	int r;

	while ((r = ponyfs_step_row(fs, s)) > 0) {
		struct ext_row e = {
			.foff = (uint64_t)sqlite3_column_int64(s, 0),
			.nb = (uint64_t)sqlite3_column_int64(s, 1),
			.pblock = (uint64_t)sqlite3_column_int64(s, 2),
			.flags = (unsigned)sqlite3_column_int64(s, 4),
		};
		uint64_t ncsums = e.flags & PONYFS_EXT_UNWRITTEN ? 0 :
				  ponyfs_csum_stride(e.flags) * e.nb;
		void *p;

		if (e.foff + e.nb <= min_end || (uint64_t)sqlite3_column_bytes(s, 3) != ncsums)
			continue;
		e.csums = malloc(ncsums + 1);
		p = realloc(*rows, (*n + 1) * sizeof(**rows));
		if (!e.csums || !p) {
			free(e.csums);
			if (p)
				*rows = p;
			sqlite3_reset(s);
			return -ENOMEM;
		}
		if (ncsums)
			memcpy(e.csums, sqlite3_column_blob(s, 3), ncsums);
		*rows = p;
		(*rows)[(*n)++] = e;
	}
	sqlite3_reset(s);
	return r;
}

/* Cuts one extent to what lies outside [first, end) and frees the rest. */
static int ext_cut(struct ponyfs *fs, uint64_t ino, const struct ext_row *e,
		   uint64_t first, uint64_t end)
{
	uint64_t lo = MAX(e->foff, first), hi = MIN(e->foff + e->nb, end);
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_DEL);
	bool unwritten = e->flags & PONYFS_EXT_UNWRITTEN;
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)e->foff);
	r = ponyfs_step_done(fs, s);
	if (r >= 0 && e->foff < first)
		r = ponyfs_ext_insert(fs, ino, e->foff, first - e->foff, e->pblock,
				      unwritten ? NULL : e->csums, e->flags);
	if (r >= 0 && e->foff + e->nb > end)
		r = ponyfs_ext_insert(fs, ino, end, e->foff + e->nb - end, e->pblock + (end - e->foff),
				      unwritten ? NULL :
				      e->csums + ponyfs_csum_stride(e->flags) * (end - e->foff), e->flags);
	if (r >= 0)
		r = ponyfs_free_locked(fs, e->pblock + (lo - e->foff), hi - lo);
	return r;
}

int ponyfs_extents_remove_locked(struct ponyfs *fs, uint64_t ino, uint64_t first, uint64_t end)
{
	struct ext_row *rows = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	int r = 0;

	if (first >= end)
		return 0;
	if (first > 0) {
		s = ponyfs_stmt(fs, ST_EXT_PREV);
		sqlite3_bind_int64(s, 1, (int64_t)ino);
		sqlite3_bind_int64(s, 2, (int64_t)first - 1);
		r = ext_collect(fs, s, &rows, &n, first);
	}
	if (r >= 0) {
		s = ponyfs_stmt(fs, ST_EXT_RANGE);
		sqlite3_bind_int64(s, 1, (int64_t)ino);
		sqlite3_bind_int64(s, 2, (int64_t)first);
		sqlite3_bind_int64(s, 3, (int64_t)MIN(end, (uint64_t)INT64_MAX));
		r = ext_collect(fs, s, &rows, &n, first);
	}
	for (size_t i = 0; i < n; i++) {
		if (r >= 0)
			r = ext_cut(fs, ino, &rows[i], first, end);
		free(rows[i].csums);
	}
	free(rows);
	return r;
}

int ponyfs_extents_last(struct ponyfs *fs, uint64_t ino, struct ponyfs_ext_span *ret, size_t max)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_LAST);
	size_t n = 0;
	int r = 0;

	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)max);
	while (n < max && (r = ponyfs_step_row(fs, s)) > 0)
		ret[n++] = (struct ponyfs_ext_span){
			.foff = (uint64_t)sqlite3_column_int64(s, 0),
			.nb = (uint64_t)sqlite3_column_int64(s, 1),
			.pblock = (uint64_t)sqlite3_column_int64(s, 2),
		};
	sqlite3_reset(s);
	return r < 0 ? r : (int)n;
}

/* Whole extents only: nothing is cut short, so no checksum is read or
 * written again (ext_cut()'s work for a truncation). */
int ponyfs_extents_drop_locked(struct ponyfs *fs, uint64_t ino, const struct ponyfs_ext_span *v,
			       size_t n)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_EXT_DEL);
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		sqlite3_bind_int64(s, 1, (int64_t)ino);
		sqlite3_bind_int64(s, 2, (int64_t)v[i].foff);
		r = ponyfs_step_done(fs, s);
		if (r >= 0)
			r = ponyfs_free_locked(fs, v[i].pblock, v[i].nb);
	}
	return r;
}

int ponyfs_pages_out(struct ponyfs *fs, struct ponyfs_inode *in, const struct ponyfs_page *pg,
		     uint64_t k, uint64_t p, uint8_t **buf, uint8_t *csums)
{
	if (!in->crypt.on) {
		for (uint64_t i = 0; i < k; i++) {
			le32 c = cpu_to_le32(util_crc32c(0, pg[i].data, BS));

			memcpy(csums + 4 * i, &c, 4);
		}
		return ponyfs_pages_write(fs, pg, k, p, buf);
	}
	return ponyfs_crypt_out_locked(fs, in, pg, k, p, csums);
}

/* Writes pages [from, to) of in, consecutive indexes, to new blocks. */
static int write_new(struct ponyfs *fs, struct ponyfs_inode *in, size_t from, size_t to,
		     uint8_t **buf, uint8_t *csums)
{
	int r = ponyfs_extents_remove_locked(fs, in->ino, in->pages[from].index,
					     in->pages[to - 1].index + 1);

	while (r >= 0 && from < to) {
		const struct ponyfs_page *pg = in->pages + from;
		uint64_t p, k;

		r = ponyfs_alloc_locked(fs, MIN((uint64_t)(to - from), (uint64_t)IO_BLOCKS), &p, &k);
		if (r < 0)
			break;
		r = ponyfs_pages_out(fs, in, pg, k, p, buf, csums);
		if (r >= 0)
			r = ponyfs_ext_insert(fs, in->ino, pg[0].index, k, p, csums,
					      ponyfs_ext_written_flags(in));
		/* The pages' reservations (or loans) became blocks. */
		for (uint64_t i = 0; i < k; i++) {
			if (pg[i].kind == PONYFS_PAGE_OVERWRITE) {
				fs->ow_dirty--;
				fs->ow_written++;
			} else {
				fs->reserved--;
				in->nnew--;
			}
		}
		fs->data_unflushed = true;
		fs->stats.data_blocks_written += k;
		from += k;
	}
	return r;
}

/* Pages [from, to), consecutive indexes: unwritten blocks in place, the rest new. */
static int write_run(struct ponyfs *fs, struct ponyfs_inode *in, size_t from, size_t to,
		     uint8_t **buf, uint8_t *csums)
{
	int r = 0;

	while (r >= 0 && from < to) {
		bool inplace = in->pages[from].kind == PONYFS_PAGE_INPLACE;
		size_t end = from + 1;

		while (end < to && (in->pages[end].kind == PONYFS_PAGE_INPLACE) == inplace)
			end++;
		r = inplace ? ponyfs_write_inplace_locked(fs, in, in->pages + from, end - from, buf)
			    : write_new(fs, in, from, end, buf, csums);
		from = end;
	}
	return r;
}

static int write_pages(struct ponyfs *fs, struct ponyfs_inode *in)
{
	_cleanup_(freep) uint8_t *buf = NULL;
	uint8_t csums[PONYFS_SEAL_BYTES * IO_BLOCKS];
	size_t from = 0, done = 0;
	int r = 0, w;

	while (r >= 0 && from < in->npages) {
		size_t to = from + 1;

		while (to < in->npages && in->pages[to].index == in->pages[to - 1].index + 1)
			to++;
		r = write_run(fs, in, from, to, &buf, csums);
		done = to;
		from = to;
	}
	/* An encrypted run's write may still be under way (crypt_data.c). */
	w = ponyfs_crypt_out_drain_locked(fs);
	r = r < 0 ? r : w;
	/* The written pages' reservations were spent in write_run. */
	for (size_t i = 0; i < done; i++)
		ponyfs_page_free(fs, in->pages[i].data);
	fs->dirty_bytes -= (uint64_t)done * BS;
	if (in->npages > done)  /* what a failed run left behind */
		memmove(in->pages, in->pages + done, (in->npages - done) * sizeof(*in->pages));
	in->npages -= done;
	page_runs_count(in);
	return r;
}

int ponyfs_writeback_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	sqlite3_stmt *s;
	int r;

	if (!in->dprev)
		return 0;
	r = ponyfs_txn_begin_locked(fs);
	if (r >= 0 && in->trunc_pending)
		r = ponyfs_extents_remove_locked(fs, in->ino, DIV_ROUND_UP(in->trunc_to, BS), UINT64_MAX);
	if (r >= 0)
		r = ponyfs_falloc_apply_locked(fs, in);
	if (r >= 0) {
		in->trunc_pending = false;
		r = write_pages(fs, in);
	}
	if (r >= 0 && in->size_dirty) {
		s = ponyfs_stmt(fs, ST_INODE_SIZE_TIMES);
		sqlite3_bind_int64(s, 1, (int64_t)in->ino);
		sqlite3_bind_int64(s, 2, (int64_t)in->size);
		sqlite3_bind_int64(s, 3, in->mtime);
		sqlite3_bind_int64(s, 4, in->ctime);
		r = ponyfs_step_done(fs, s);
	}
	if (r >= 0 && in->atime_dirty)
		r = ponyfs_sql(fs, "UPDATE inodes SET atime = ?2 WHERE ino = ?1", 2, (int64_t)in->ino,
			       in->atime);
	if (r < 0) {
		char what[64];

		/* The transaction holds half a file now: it must not commit. */
		snprintf(what, sizeof(what), "writeback of inode %llu failed",
			 (unsigned long long)in->ino);
		ponyfs_fail_locked(fs, r, what);
		return r;
	}
	in->size_dirty = false;
	in->atime_dirty = false;
	in->trunc_rows = 0;
	dirty_del(fs, in);
	/* What it held is the open transaction's now, until the commit. */
	ponyfs_space_release_locked(fs, in, true);
	fs->stats.writebacks++;
	return 0;
}

/*
 * Files the timer leaves out of its commit: one replaced in place and
 * still being rewritten (committing it half-written is what rule 2
 * forbids), and one being streamed (open for writing, much cached, not
 * yet expired), whose data would make every commit, and so every other
 * file's fsync, wait for it to reach the disk. Nor does a reservation
 * made in the middle of a write call write that call's file back.
 */
static bool inode_held(const struct ponyfs_inode *in, uint64_t now)
{
	if (in->copying_in)
		return true;
	if (in->trunc_pending && (in->writers || now - in->trunc_ns < PONYFS_HOLD_NS))
		return true;
	return in->writers && in->npages * (uint64_t)BS > PONYFS_FILE_DIRTY_MAX &&
	       now - in->dirty_ns < PONYFS_EXPIRE_NS;
}

int ponyfs_writeback_all_locked(struct ponyfs *fs, bool skip_held)
{
	uint64_t now = util_now_ns();
	struct ponyfs_inode *in = fs->dirty, *next;
	int r = 0, g;

	/* Small files' blocks, side by side, go out in a few writes (gather.c). */
	ponyfs_gather_begin(fs);
	for (; in && r >= 0; in = next) {
		next = in->dnext;
		if (skip_held && inode_held(in, now))
			continue;
		r = ponyfs_writeback_locked(fs, in);
		if (r >= 0)
			ponyfs_inode_put_locked(fs, in);
	}
	g = ponyfs_gather_end(fs);
	return r < 0 ? r : g;
}
