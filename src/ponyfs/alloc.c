/*
 * alloc.c - free space of the data region: runs of blocks in the `free`
 * table. Blocks freed in the open transaction are kept aside and enter the
 * table only just before it commits, so nothing allocated in the same
 * transaction can overwrite a block the committed state still points at:
 * that is what makes copy-on-write safe across a crash. Writes reserve a
 * block per dirty page up front, so ENOSPC comes from write(), never from a
 * writeback that could no longer report it.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* The free table's rows, counted as they come and go (space.c's cost of a free-table cell). */
static int free_row_del(struct ponyfs *fs, uint64_t p)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_FREE_DEL);
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)p);
	r = ponyfs_step_done(fs, s);
	if (r >= 0 && fs->space.free_runs)
		fs->space.free_runs--;
	return r;
}

static int free_row_ins(struct ponyfs *fs, uint64_t p, uint64_t n)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_FREE_INS);
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)p);
	sqlite3_bind_int64(s, 2, (int64_t)n);
	r = ponyfs_step_done(fs, s);
	fs->space.free_runs += r >= 0;
	return r;
}

/* The first free run at or after block from: 1 with *p, *n, 0 for none, or -errno. */
static int free_run_from(struct ponyfs *fs, uint64_t from, uint64_t *p, uint64_t *n)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_FREE_FROM);
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)from);
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		*p = (uint64_t)sqlite3_column_int64(s, 0);
		*n = (uint64_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return r;
}

/* Takes [a, a + k) out of the free run (p, n), keeping what is left either side. */
static int free_run_take(struct ponyfs *fs, uint64_t p, uint64_t n, uint64_t a, uint64_t k)
{
	int r = free_row_del(fs, p);

	if (r >= 0 && a > p)
		r = free_row_ins(fs, p, a - p);
	if (r >= 0 && a + k < p + n)
		r = free_row_ins(fs, a + k, p + n - (a + k));
	if (r >= 0)
		fs->free_blocks -= k;
	return r;
}

/*
 * Up to want blocks from the lowest free run, past blocks a layout lease
 * holds (lease.c). When only held blocks are left, the leases are revoked
 * rather than the allocation failing.
 */
int ponyfs_alloc_locked(struct ponyfs *fs, uint64_t want, uint64_t *ret_start, uint64_t *ret_n)
{
	uint64_t from = 0, p = 0, n = 0, a, end;
	int r;

	for (;;) {
		r = free_run_from(fs, from, &p, &n);
		if (r < 0)
			return r;
		if (!r && fs->leases.nheld) {
			ponyfs_lease_expire_locked(fs, true);
			from = 0;
			continue;
		}
		if (!r)
			return -ENOSPC;
		a = p;
		end = p + n;
		ponyfs_lease_unheld(fs, &a, &end);
		if (a < end)
			break;
		from = p + n;
	}
	*ret_start = a;
	*ret_n = MIN(want, end - a);
	return free_run_take(fs, p, n, a, *ret_n);
}

int ponyfs_free_locked(struct ponyfs *fs, uint64_t pblock, uint64_t n)
{
	void *grown = util_array_grow(fs->pending, &fs->cap_pending, fs->npending,
				      sizeof(*fs->pending), 64);

	if (!grown)
		return -ENOMEM;
	fs->pending = grown;
	ponyfs_lease_freed_locked(fs, pblock, n);
	fs->pending[fs->npending].pblock = pblock;
	fs->pending[fs->npending++].n = n;
	fs->pending_free_blocks += n;
	return 0;
}

/* Inserts one run, merged with the runs it touches, so runs never touch. */
static int free_insert(struct ponyfs *fs, uint64_t p, uint64_t n)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_FREE_PREV);
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)p);
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		uint64_t pp = (uint64_t)sqlite3_column_int64(s, 0);
		uint64_t pn = (uint64_t)sqlite3_column_int64(s, 1);

		sqlite3_reset(s);
		if (pp + pn == p) {
			r = free_row_del(fs, pp);
			p = pp;
			n += pn;
		}
	}
	sqlite3_reset(s);
	if (r < 0)
		return r;
	s = ponyfs_stmt(fs, ST_FREE_AT);
	sqlite3_bind_int64(s, 1, (int64_t)(p + n));
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		uint64_t nn = (uint64_t)sqlite3_column_int64(s, 0);

		sqlite3_reset(s);
		r = free_row_del(fs, p + n);
		n += nn;
	} else {
		sqlite3_reset(s);
	}
	return r < 0 ? r : free_row_ins(fs, p, n);
}

int ponyfs_free_apply_locked(struct ponyfs *fs)
{
	for (size_t i = 0; i < fs->npending; i++) {
		int r = free_insert(fs, fs->pending[i].pblock, fs->pending[i].n);

		if (r < 0)
			return r;
	}
	return 0;
}

void ponyfs_free_committed_locked(struct ponyfs *fs)
{
	/* Reads planned before the commit may still be reading those blocks
	 * (read.c): they finish first. None can start meanwhile, since a
	 * read takes the reuse lock only while it holds fs->lock. */
	if (fs->npending) {
		/* Nor may a stream's buffer read before now answer (stream.c). */
		ponyfs_stream_gen_bump_locked(fs);
		pthread_rwlock_wrlock(&fs->reuse_lock);
		pthread_rwlock_unlock(&fs->reuse_lock);
	}
	fs->free_blocks += fs->pending_free_blocks;
	fs->pending_free_blocks = 0;
	fs->npending = 0;
	/* The commit freed the blocks the loans overwrote: the reserve is whole. */
	fs->ow_written = 0;
}

/* Free blocks that reservations may take: not those the overwrite reserve
 * keeps (what it lent out and was allocated is gone from free_blocks). */
bool ponyfs_reserve_fits(const struct ponyfs *fs, uint64_t n)
{
	return fs->reserved + n + (fs->ow_reserve - fs->ow_written) + fs->leases.held_blocks <=
	       fs->free_blocks;
}

int ponyfs_reserve_locked(struct ponyfs *fs, uint64_t n)
{
	if (!ponyfs_reserve_fits(fs, n)) {
		/* Blocks freed by the open transaction come back once it commits;
		 * a commit that fails says why itself. */
		int r = fs->pending_free_blocks ? ponyfs_commit_locked(fs) : 0;

		if (r < 0)
			return r;
		/* Blocks only layout leases hold: revoked, not a write refused. */
		if (!ponyfs_reserve_fits(fs, n) && fs->leases.nheld)
			ponyfs_lease_expire_locked(fs, true);
		if (!ponyfs_reserve_fits(fs, n))
			return -ENOSPC;
	}
	fs->reserved += n;
	return 0;
}

/*
 * Direct writes (dwrite.c): the first run of up to want whole stripes of
 * sblk blocks (aligned to sblk from the region's start, so no stripe is
 * shared with a block in use) that are free and held by no lease. Found,
 * not taken: the caller holds them under a write lease. -ENOSPC: none.
 */
int ponyfs_alloc_stripes_find_locked(struct ponyfs *fs, uint64_t sblk, uint64_t want,
				     uint64_t *ret_start, uint64_t *ret_n)
{
	uint64_t from = 0, p, n;
	int r;

	while ((r = free_run_from(fs, from, &p, &n)) > 0) {
		for (uint64_t a = p; a < p + n;) {
			uint64_t end = p + n, s;

			ponyfs_lease_unheld(fs, &a, &end);
			s = DIV_ROUND_UP(a, sblk) * sblk;
			if (a >= end)
				break;
			if (s < end && (end - s) / sblk) {
				*ret_start = s;
				*ret_n = MIN(want, (end - s) / sblk) * sblk;
				return 0;
			}
			a = end;
		}
		from = p + n;
	}
	return r < 0 ? r : -ENOSPC;
}

/* Takes exactly [p, p + n) out of the free table: -ESTALE when not all of it is free. */
int ponyfs_alloc_at_locked(struct ponyfs *fs, uint64_t p, uint64_t n)
{
	sqlite3_stmt *s = ponyfs_stmt(fs, ST_FREE_PREV);
	uint64_t rp = 0, rn = 0;
	int r;

	sqlite3_bind_int64(s, 1, (int64_t)(p + 1));
	r = ponyfs_step_row(fs, s);
	if (r > 0) {
		rp = (uint64_t)sqlite3_column_int64(s, 0);
		rn = (uint64_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	if (r < 0)
		return r;
	if (!r || p < rp || p + n > rp + rn)
		return -ESTALE;
	return free_run_take(fs, rp, rn, p, n);
}
