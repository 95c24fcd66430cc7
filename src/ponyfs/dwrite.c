/*
 * dwrite.c - direct writes (docs/layout.md "Direct writes"): a client
 * writes a file's new data and parity straight to the volume's members,
 * beyond pNFS block layouts, which cannot do parity RAID.
 *
 * layout_write hands the writer fresh WHOLE stripes: every block of each
 * is free and held by no lease, so writing the stripe's parity disturbs
 * no block any file uses. The stripes are held by a write lease in memory
 * only (lease.c's rules: the allocator steps over them, expiry or
 * revocation frees them); nothing is recorded, so a crash leaks nothing.
 *
 * layout_commit takes the writer's extents (file range -> granted bytes,
 * with every block's CRC32C) a page at a time onto the lease, each checked
 * against the stripes this lease was given; the LAST page applies them all
 * in the open transaction and commits it: the new extents, the old ones
 * freed as an overwrite frees them, and the size, together. After a crash
 * the file is all old or all new (SQLite's commit is the one switch).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/volume.h"

/* Most stripes one grant hands out (whatever the pieces array holds). */
#define GRANT_MAX_BYTES (64ull << 20)

/* The file fh is open on, for writing: its cached inode, or -errno. */
static int writer_inode(struct ponyfs *fs, uint64_t ino, uint64_t fh, struct ponyfs_inode **ret)
{
	struct ponyfs_handle *h = (struct ponyfs_handle *)(uintptr_t)fh;
	struct ponyfs_crypt crypt;
	int r;

	if (fh == VFS_NO_FH || !h || h->inode->ino != ino || (h->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (fs->read_only)
		return -EROFS;
	r = ponyfs_inode_crypt_locked(fs, ino, &crypt);
	if (r < 0)
		return r;
	if (crypt.on)
		return -EACCES;         /* keys never leave the mount */
	*ret = h->inode;
	return 0;
}

/* The stripe of the data region in blocks (a mirror's: one block). */
static int region_stripe(struct ponyfs *fs, uint64_t *ret_region, uint64_t *ret_sblk)
{
	struct volume_segment_info seg;
	unsigned segno;
	uint64_t stripe;

	if (ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg) < 0)
		return -EOPNOTSUPP;     /* one image: no members to write to */
	stripe = MAX(volume_full_stripe(fs->volume, segno), (uint64_t)BS);
	if (stripe % BS || seg.start % BS)
		return -EOPNOTSUPP;
	*ret_region = seg.start;
	*ret_sblk = stripe / BS;
	return 0;
}

static int write_locked(struct ponyfs *fs, uint64_t ino, uint64_t fh, struct vfs_layout_write *w)
{
	struct ponyfs_inode *in;
	struct ponyfs_lease *e;
	uint64_t region, sblk, want, p, n;
	int64_t per = 0;
	int r = writer_inode(fs, ino, fh, &in);

	if (r >= 0)
		r = region_stripe(fs, &region, &sblk);
	if (r < 0)
		return r;
	if (w->offset % BS || !w->length || w->length > (1ull << 50) ||
	    w->offset > (1ull << 50) - w->length)
		return -EINVAL;
	want = MIN(DIV_ROUND_UP(w->length, sblk * BS), MAX(GRANT_MAX_BYTES / (sblk * BS), 1u));
	r = ponyfs_alloc_stripes_find_locked(fs, sblk, want, &p, &n);
	/* As many stripes as the answer's pieces can describe (a parity
	 * stripe takes a few pieces per chunk, a mirror two for any length). */
	while (r >= 0 && (per = ponyfs_layout_pieces_locked(fs, region, p, n, 0, NULL, 0)) >= 0 &&
	       (uint64_t)per > w->max_pieces && n > sblk)
		n = MAX(n / sblk / 2, 1u) * sblk;
	if (r >= 0 && (per < 0 || (uint64_t)per > w->max_pieces))
		r = per < 0 ? (int)per : -ENOBUFS;
	/* Blocks promised to cached data stay theirs. */
	if (r >= 0 && !ponyfs_reserve_fits(fs, n))
		r = -ENOSPC;
	if (r < 0)
		return r;
	if (w->lease == VFS_LEASE_NEW) {
		e = ponyfs_lease_new_locked(fs);
		if (!e)
			return -ENOMEM;
		e->write_ino = ino;
	} else {
		e = ponyfs_lease_find_locked(fs, w->lease);
		if (!e || e->write_ino != ino)
			return -ESTALE;
	}
	r = ponyfs_lease_hold_locked(fs, e, p, n);
	per = r < 0 ? r : ponyfs_layout_pieces_locked(fs, region, p, n, w->offset, w->pieces,
						      w->max_pieces);
	if (per < 0) {
		ponyfs_lease_end_locked(fs, e);
		return (int)per;
	}
	w->npieces = (uint32_t)per;
	w->block_size = BS;
	w->volume_offset = p * BS;
	w->granted = n * BS;
	w->stripe = sblk * BS;
	w->lease = e->id;
	w->lease_ms = ponyfs_lease_renew(fs, e);
	return 0;
}

int ponyfs_layout_write(struct vfs *v, uint64_t ino, uint64_t fh, struct vfs_layout_write *w)
{
	struct ponyfs *fs = ponyfs_of(v);

	return PONYFS_CHANGE(fs, write_locked(fs, ino, fh, w));
}

/* [p, p + n) lies in one run the lease was given. */
static bool granted(const struct ponyfs_lease *e, uint64_t p, uint64_t n)
{
	for (size_t i = 0; i < e->nwruns; i++)
		if (p >= e->wruns[i].pblock && p + n <= e->wruns[i].pblock + e->wruns[i].n)
			return true;
	return false;
}

/* Neither its file blocks nor its data blocks meet an extent staged before. */
static bool overlaps_staged(const struct ponyfs_lease *e, uint64_t fblk, uint64_t p, uint64_t n)
{
	for (size_t i = 0; i < e->nstaged; i++) {
		const struct ponyfs_staged *s = &e->staged[i];

		if ((fblk < s->fblk + s->n && s->fblk < fblk + n) ||
		    (p < s->pblock + s->n && s->pblock < p + n))
			return true;
	}
	return false;
}

/* A page of extents onto lease e, all checked before any is kept. */
static int stage_page(struct ponyfs_lease *e, const struct vfs_layout_commit *c)
{
	uint64_t blocks = 0;
	size_t at = 0;
	void *grown;

	for (uint32_t i = 0; i < c->nextents; i++) {
		const struct vfs_layout_commit_extent *x = &c->extents[i];

		if (x->file_offset % BS || x->length % BS || x->volume_offset % BS || !x->length ||
		    x->file_offset > (1ull << 50) || x->length > (1ull << 50))
			return -EINVAL;
		if (!granted(e, x->volume_offset / BS, x->length / BS))
			return -EPERM;
		if (overlaps_staged(e, x->file_offset / BS, x->volume_offset / BS, x->length / BS))
			return -EINVAL;
		for (uint32_t j = 0; j < i; j++)
			if (x->file_offset < c->extents[j].file_offset + c->extents[j].length &&
			    c->extents[j].file_offset < x->file_offset + x->length)
				return -EINVAL;
		blocks += x->length / BS;
	}
	if (blocks != c->ncsums)
		return -EINVAL;
	grown = util_array_grow(e->staged, &e->cap_staged, e->nstaged + c->nextents,
				sizeof(*e->staged), 16);
	if (!grown)
		return -ENOMEM;
	e->staged = grown;
	for (uint32_t i = 0; i < c->nextents; i++) {
		const struct vfs_layout_commit_extent *x = &c->extents[i];
		struct ponyfs_staged *s = &e->staged[e->nstaged];

		*s = (struct ponyfs_staged){ .fblk = x->file_offset / BS, .n = x->length / BS,
					     .pblock = x->volume_offset / BS };
		s->csums = malloc(s->n * sizeof(*s->csums));
		if (!s->csums)
			return -ENOMEM;         /* what was kept stays; the lease frees it */
		memcpy(s->csums, c->csums + at, s->n * sizeof(*s->csums));
		at += s->n;
		e->nstaged++;
	}
	return 0;
}

/* The staged extents' rows: their number, each at most PONYFS_IO_BLOCKS. */
static uint64_t staged_rows(const struct ponyfs_staged *st, size_t n)
{
	uint64_t rows = 0;

	for (size_t i = 0; i < n; i++)
		rows += DIV_ROUND_UP(st[i].n, PONYFS_IO_BLOCKS);
	return rows;
}

/* What applying them may cost the metadata, reserved before anything changes. */
static int apply_reserve(struct ponyfs *fs, struct ponyfs_inode *in, const struct ponyfs_staged *st,
			 size_t n)
{
	uint64_t rows = staged_rows(st, n), blocks = 0;
	struct ponyfs_cost c;
	int64_t old = 0;
	int r = ponyfs_sql_int(fs, &old, "SELECT count(*) FROM extents WHERE ino = ?1", 1,
			       (int64_t)in->ino);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		blocks += st[i].n;
	c = (struct ponyfs_cost){
		.rows = 3,      /* the inode's row takes the set-ID bits too */
		.run_bytes = (rows + 2 * (uint64_t)old) * PONYFS_EXT_ROW_BYTES + blocks * 4,
		.free_cells = 2 * rows + 3 * (uint64_t)old + 2,
	};
	return ponyfs_meta_reserve_locked(fs, &c, in);
}

/* The staged extents become in's (its old blocks there freed) and size its size. */
static int apply_extents(struct ponyfs *fs, struct ponyfs_inode *in, const struct ponyfs_staged *st,
			 size_t n, uint64_t size)
{
	uint8_t csums[4 * PONYFS_IO_BLOCKS];
	int64_t now = ponyfs_now();
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = ponyfs_extents_remove_locked(fs, in->ino, st[i].fblk, st[i].fblk + st[i].n);
	if (r >= 0 && size < in->size)
		r = ponyfs_extents_remove_locked(fs, in->ino, DIV_ROUND_UP(size, BS), UINT64_MAX);
	for (size_t i = 0; r >= 0 && i < n; i++)
		for (uint64_t k = 0; r >= 0 && k < st[i].n; k += PONYFS_IO_BLOCKS) {
			uint64_t m = MIN(st[i].n - k, (uint64_t)PONYFS_IO_BLOCKS);

			for (uint64_t j = 0; j < m; j++) {
				le32 v = cpu_to_le32(st[i].csums[k + j]);

				memcpy(csums + 4 * j, &v, 4);
			}
			r = ponyfs_ext_insert(fs, in->ino, st[i].fblk + k, m, st[i].pblock + k, csums, 0);
		}
	if (r >= 0)
		r = ponyfs_sql(fs, "UPDATE inodes SET size = ?2, mtime = ?3, ctime = ?3 WHERE ino = ?1",
			       3, (int64_t)in->ino, (int64_t)size, now);
	if (r >= 0) {
		in->size = size;
		in->mtime = in->ctime = now;
		ponyfs_times_changed(fs, in->ino, now);
		in->unwritten = -1;
	}
	return r;
}

/*
 * The LAST page: everything staged on lease id becomes the file's in one
 * transaction, committed. Checked and reserved first; from the first
 * change on, a failure leaves half a file in the transaction: the
 * filesystem stops there (as a failed writeback does).
 */
static int apply_locked(struct ponyfs *fs, struct ponyfs_inode *in, const struct vfs_ctx *writer,
			uint32_t id, uint64_t size)
{
	struct ponyfs_lease *e = ponyfs_lease_find_locked(fs, id);
	struct ponyfs_staged *st;
	size_t n;
	int r;

	if (!e)
		return -ESTALE;
	/* No extent past the end: the size covers what is committed. */
	for (size_t i = 0; i < e->nstaged; i++)
		if (e->staged[i].fblk + e->staged[i].n > DIV_ROUND_UP(size, BS))
			return -EINVAL;
	/* The file's own cached writes go first: the direct write is newer. */
	r = ponyfs_writeback_locked(fs, in);
	if (r >= 0) {
		e = ponyfs_lease_find_locked(fs, id);
		r = e ? apply_reserve(fs, in, e->staged, e->nstaged) : -ESTALE;
	}
	/* Making room may have revoked the lease: then nothing changes. */
	e = r >= 0 ? ponyfs_lease_find_locked(fs, id) : NULL;
	if (r >= 0 && !e)
		r = -ESTALE;
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r < 0)
		return r;
	st = e->staged;
	n = e->nstaged;
	e->staged = NULL;
	e->nstaged = e->cap_staged = 0;
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = ponyfs_alloc_at_locked(fs, st[i].pblock, st[i].n);
	/* Taken: the lease's other stripes go back to free space. */
	ponyfs_lease_end_locked(fs, e);
	/* New content drops the set-ID bits as a write(2) through the mount
	 * does, by the same rule (attr.c), in the same transaction: no moment
	 * shows the new bytes under the old setuid bit. */
	if (r >= 0)
		r = ponyfs_setid_kill_locked(fs, writer, in->ino, false, false);
	if (r >= 0)
		r = apply_extents(fs, in, st, n, size);
	for (size_t i = 0; i < n; i++) {
		fs->stats.data_blocks_written += st[i].n;
		free(st[i].csums);
	}
	free(st);
	if (r < 0) {
		ponyfs_fail_locked(fs, r, "a direct write's commit failed half applied");
		return r;
	}
	/* The writer flushed its members; the commit flushes the data region
	 * again before the metadata that points at it (rule 1). */
	fs->data_unflushed = true;
	return ponyfs_commit_locked(fs);
}

static int commit_locked(struct ponyfs *fs, uint64_t ino, uint64_t fh,
			 const struct vfs_layout_commit *c)
{
	struct ponyfs_inode *in;
	struct ponyfs_lease *e;
	int r = writer_inode(fs, ino, fh, &in);

	if (r < 0)
		return r;
	e = ponyfs_lease_find_locked(fs, c->lease);
	if (!e || e->write_ino != ino)
		return -ESTALE;
	if ((c->flags & ~(uint32_t)VFS_COMMIT_LAST) || c->size > (1ull << 50))
		return -EINVAL;
	r = stage_page(e, c);
	/* The writer is whoever opened fh, as for a write(2) on it (ops.c). */
	if (r >= 0 && (c->flags & VFS_COMMIT_LAST))
		r = apply_locked(fs, in, &((const struct ponyfs_handle *)(uintptr_t)fh)->opener,
				 c->lease, c->size);
	return r;
}

int ponyfs_layout_commit(struct vfs *v, uint64_t ino, uint64_t fh,
			 const struct vfs_layout_commit *c)
{
	struct ponyfs *fs = ponyfs_of(v);

	return PONYFS_CHANGE(fs, commit_locked(fs, ino, fh, c));
}
