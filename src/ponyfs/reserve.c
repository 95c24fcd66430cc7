/*
 * reserve.c - what changes of files and names reserve of the metadata
 * space (space.c) before they are acknowledged, at the level that knows
 * files: the cost of a dirty file's writeback, held from the write,
 * truncation or fallocate that made it (a write(2) that returned must
 * always be committable), and reservations that, when they do not fit,
 * first write dirty files back (so those hold what they really wrote, not
 * their bound) before space.c commits, checkpoints and grows.
 */
#include <errno.h>

#include "internal.h"

/*
 * Metadata costs of writeback, taken when the change it will write is
 * acknowledged (space.c): the inode's row, then for each cached page its
 * new extent row, the row it cuts, and for a page written in place the
 * unwritten row split around it; the free-table cells of its new block and
 * of the one it frees; extent rows a pending truncation removes (each
 * freeing a run), and the unwritten rows a fallocate fills its holes with
 * (at most one per free run, or per block).
 */
#define RUN_ROWS 4u                     /* rows a run of pages changes: new, cut, split twice */
#define RUN_FREE_CELLS 5u               /* its block's free run, and the run it frees */

/*
 * A writeback writes an extent row per run of consecutive cached pages,
 * per IO_BLOCKS of a run, and per free run its blocks come from: at most
 * one per page, and no more runs than free space has (twice, and some:
 * frees can split it further before the writeback).
 */
static void inode_cost(const struct ponyfs *fs, const struct ponyfs_inode *in, uint64_t pages,
		       uint64_t trunc_rows, uint64_t falloc, struct ponyfs_cost *ret)
{
	uint64_t np = in->npages + pages, tr = trunc_rows == UINT64_MAX ? in->trunc_rows : trunc_rows;
	uint64_t fb = in->falloc_res + falloc, fr = MIN(fb, 2 * (fs->space.free_runs + 1));
	uint64_t runs = MIN(np, in->page_runs + pages + np / PONYFS_IO_BLOCKS +
				2 * fs->space.free_runs + 16);

	*ret = (struct ponyfs_cost){
		.rows = 3,      /* the inode's row, where its extents go, the first free run */
		.run_bytes = runs * RUN_ROWS * PONYFS_EXT_ROW_BYTES + np * 8 + (tr + fr) * PONYFS_EXT_ROW_BYTES,
		.free_cells = runs * RUN_FREE_CELLS + 3 * tr + 2 * fr,
		/* Cutting a file short frees space: it works on a full filesystem. */
		.frees = tr > in->trunc_rows && !pages && !falloc,
	};
}

/*
 * Writes back the dirty files (not those held out of commits), when their
 * reservations are what keeps a change from fitting: written back, they
 * hold only what they really wrote. pin stays cached throughout.
 */
static int room_by_writeback(struct ponyfs *fs, struct ponyfs_inode *pin)
{
	int r;

	if (!fs->space.wal_deferred && !fs->space.db_deferred)
		return 0;
	if (pin)
		pin->opens++;
	r = ponyfs_writeback_all_locked(fs, true);
	if (pin)
		pin->opens--;
	return r < 0 ? r : 1;
}

int ponyfs_meta_reserve_locked(struct ponyfs *fs, const struct ponyfs_cost *c,
			       struct ponyfs_inode *pin)
{
	int r = ponyfs_space_reserve_locked(fs, c, SPACE_MEASURE);

	if (r == -ENOSPC) {
		r = room_by_writeback(fs, pin);
		r = r < 0 ? r : ponyfs_space_reserve_locked(fs, c, r ? SPACE_MEASURE : SPACE_GROW);
	}
	return r == -ENOSPC ? ponyfs_space_reserve_locked(fs, c, SPACE_GROW) : r;
}

int ponyfs_inode_reserve_locked(struct ponyfs *fs, struct ponyfs_inode *in, uint64_t pages,
				uint64_t trunc_rows, uint64_t falloc)
{
	struct ponyfs_cost c;
	int r;

	inode_cost(fs, in, pages, trunc_rows, falloc, &c);
	r = ponyfs_space_defer_locked(fs, in, &c, SPACE_MEASURE);
	if (r == -ENOSPC) {
		r = room_by_writeback(fs, in);
		/* in may have been written back: its cost is taken again. */
		inode_cost(fs, in, pages, trunc_rows, falloc, &c);
		r = r < 0 ? r : ponyfs_space_defer_locked(fs, in, &c, r ? SPACE_MEASURE : SPACE_GROW);
	}
	if (r == -ENOSPC)
		r = ponyfs_space_defer_locked(fs, in, &c, SPACE_GROW);
	return r;
}

void ponyfs_inode_settle_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	struct ponyfs_cost c;

	if (!in->dprev && !in->npages) {
		ponyfs_space_release_locked(fs, in, false);
		return;
	}
	/* Less than held, or a depth bound that moved: nothing to make room for. */
	inode_cost(fs, in, 0, UINT64_MAX, 0, &c);
	if (ponyfs_space_defer_locked(fs, in, &c, SPACE_MEASURE) < 0)
		fs->space.stale = true;
}
