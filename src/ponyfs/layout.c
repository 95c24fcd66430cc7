/*
 * layout.c - where a file's bytes live (pNFS-style layouts, docs/layout.md):
 * for a file range, its extents in file order with their state (written,
 * unwritten, hole, or dirty in the daemon's cache), their blocks'
 * checksums as stored, whether the file is encrypted, and on a pony volume
 * the member pieces of each extent, as the volume engine maps them
 * (volume_map(): clients never copy its math). The answer is a snapshot
 * under the filesystem lock; asked with a lease, the blocks it names stay
 * as they are until the lease ends (lease.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/volume.h"

_Static_assert((int)VFS_PIECE_DATA == (int)VOLUME_PIECE_DATA &&
	       (int)VFS_PIECE_COPY == (int)VOLUME_PIECE_COPY &&
	       (int)VFS_PIECE_P == (int)VOLUME_PIECE_P && (int)VFS_PIECE_Q == (int)VOLUME_PIECE_Q,
	       "vfs piece roles are the volume's");

/* One run of blocks in the same state, from the cache or the database. */
struct layout_run {
	enum vfs_layout_state state;
	uint64_t nblocks;
	uint64_t pblock;                /* DATA, UNWRITTEN: first block on the data region */
	uint32_t csums[PONYFS_IO_BLOCKS];       /* DATA */
};

/* The first cached page of in at or after blk: its index (UINT64_MAX: none). */
static uint64_t next_dirty(const struct ponyfs_inode *in, uint64_t blk)
{
	size_t pos = in ? ponyfs_page_pos(in, blk) : 0;

	return in && pos < in->npages ? in->pages[pos].index : UINT64_MAX;
}

/*
 * The run starting at blk, at most up to end. Cached pages are newer than
 * the disk; blocks a pending truncation cut off are gone, whatever the
 * database still says.
 */
static int layout_run_at(struct ponyfs *fs, uint64_t ino, const struct ponyfs_inode *in,
			 uint64_t blk, uint64_t end, struct layout_run *ret)
{
	uint64_t dirty = next_dirty(in, blk), cut = in && in->trunc_pending ? in->trunc_to : UINT64_MAX;
	int flags, r;

	if (dirty == blk) {
		size_t pos = ponyfs_page_pos(in, blk), k = pos;

		while (k < in->npages && in->pages[k].index == blk + (k - pos) && blk + (k - pos) < end)
			k++;
		ret->state = VFS_LAYOUT_DIRTY;
		ret->nblocks = k - pos;
		return 0;
	}
	end = MIN(end, dirty);
	if (blk >= cut) {
		ret->state = VFS_LAYOUT_HOLE;
		ret->nblocks = end - blk;
		return 0;
	}
	end = MIN(MIN(end, cut), blk + PONYFS_IO_BLOCKS);
	r = ponyfs_ext_at(fs, ino, blk, end, &flags, &ret->nblocks, &ret->pblock, ret->csums, NULL);
	if (r < 0)
		return r;
	ret->state = flags < 0 ? VFS_LAYOUT_HOLE :
		     flags & PONYFS_EXT_UNWRITTEN ? VFS_LAYOUT_UNWRITTEN : VFS_LAYOUT_DATA;
	return 0;
}

int ponyfs_region_segment(const struct ponyfs *fs, int cls, unsigned *ret_seg,
			  struct volume_segment_info *ret_info)
{
	for (unsigned i = 0; fs->volume && i < volume_segment_count(fs->volume); i++)
		if (volume_segment_info(fs->volume, i, ret_info) == 0 && ret_info->cls == cls) {
			*ret_seg = i;
			return 0;
		}
	return -ENODEV;
}

/*
 * The states of the data region's members as one number (two bits each,
 * mixed): a lease given under other states is recalled, since a member
 * that failed or is being rebuilt answers differently from the layout.
 * 0: not on a volume.
 */
uint64_t ponyfs_layout_members_sig(const struct ponyfs *fs)
{
	struct volume_segment_info seg;
	uint64_t sig = 0;
	unsigned segno;

	if (ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg) < 0)
		return 0;
	for (unsigned m = 0; m < seg.nmembers; m++)
		sig = sig * 0x100000001b3ull ^ ((uint64_t)volume_member_state(fs->volume, segno, m) + 1);
	return sig;
}

int64_t ponyfs_layout_pieces_locked(struct ponyfs *fs, uint64_t region, uint64_t pblock,
				    uint64_t nblocks, uint64_t file_offset,
				    struct vfs_layout_piece *out, size_t max)
{
	uint64_t off = region + pblock * BS;
	int64_t n = volume_map(fs->volume, off, nblocks * BS, NULL, 0);
	struct volume_piece *vp;

	if (n < 0 || (uint64_t)n > max)
		return n;
	vp = malloc((size_t)MAX(n, 1) * sizeof(*vp));
	if (!vp)
		return -ENOMEM;
	n = volume_map(fs->volume, off, nblocks * BS, vp, (size_t)n);
	for (int64_t i = 0; i < n; i++)
		out[i] = (struct vfs_layout_piece){
			.file_offset = file_offset + (vp[i].vol_off - off),
			.length = vp[i].len,
			.member_offset = vp[i].dev_start + vp[i].dev_off,
			.member = vp[i].member,
			.role = vp[i].role,
		};
	free(vp);
	return n;
}

/*
 * Adds the pieces of extent e (its run r) to l, *nblocks halved until they
 * fit in the room l has left: 0, 1 when not one block's fit, or -errno.
 */
static int add_pieces(struct ponyfs *fs, uint64_t region, struct vfs_layout *l,
		      struct vfs_layout_extent *e, const struct layout_run *r, uint64_t *nblocks)
{
	uint64_t room = l->max_pieces - l->npieces;
	int64_t n;

	for (;;) {
		n = ponyfs_layout_pieces_locked(fs, region, r->pblock, *nblocks, e->file_offset,
						l->pieces + l->npieces, room);
		if (n < 0)
			return (int)n;
		if ((uint64_t)n <= room)
			break;
		if (*nblocks == 1)
			return 1;       /* not even one block's pieces fit */
		*nblocks /= 2;
	}
	e->first_piece = l->npieces;
	e->npieces = (uint32_t)n;
	l->npieces += (uint32_t)n;
	return 0;
}

/*
 * Appends the extent of run r at block blk, cut to what l has room for:
 * the blocks taken (0: l is full), or -errno.
 */
static int64_t add_extent(struct ponyfs *fs, struct vfs_layout *l, uint64_t blk,
		      const struct layout_run *r, bool on_volume, uint64_t region)
{
	struct vfs_layout_extent *e = &l->extents[l->nextents];
	uint64_t n = r->nblocks;
	bool placed = r->state == VFS_LAYOUT_DATA || r->state == VFS_LAYOUT_UNWRITTEN;
	int ret;

	if (r->state == VFS_LAYOUT_DATA)
		n = MIN(n, (uint64_t)(l->max_csums - l->ncsums));
	if (!n)
		return 0;
	*e = (struct vfs_layout_extent){
		.file_offset = blk * BS, .state = r->state,
		.volume_offset = placed ? r->pblock * BS : VFS_LAYOUT_NO_OFFSET,
	};
	if (placed && on_volume) {
		ret = add_pieces(fs, region, l, e, r, &n);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	e->length = n * BS;
	if (r->state == VFS_LAYOUT_DATA) {
		e->first_csum = l->ncsums;
		memcpy(l->csums + l->ncsums, r->csums, n * sizeof(r->csums[0]));
		l->ncsums += (uint32_t)n;
	}
	l->nextents++;
	return (int64_t)n;
}

static int layout_map_locked(struct ponyfs *fs, uint64_t ino, struct vfs_layout *l)
{
	struct ponyfs_inode *in = ponyfs_inode_find(fs, ino);
	struct volume_segment_info seg = { 0 };
	struct ponyfs_crypt crypt;
	struct layout_run *run;
	struct statx stx;
	unsigned segno;
	uint64_t blk, end;
	bool on_volume;
	int64_t r = ponyfs_fill_attr_locked(fs, ino, STATX_TYPE | STATX_SIZE, &stx);

	if (r < 0)
		return (int)r;
	if (!S_ISREG(stx.stx_mode))
		return S_ISDIR(stx.stx_mode) ? -EISDIR : -EINVAL;
	r = ponyfs_inode_crypt_locked(fs, ino, &crypt);
	if (r < 0)
		return (int)r;
	on_volume = ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg) == 0;
	l->nextents = l->ncsums = l->npieces = 0;
	l->block_size = BS;
	l->size = stx.stx_size;
	l->flags = (crypt.on ? VFS_LAYOUT_ENCRYPTED : 0) |
		   (on_volume ? VFS_LAYOUT_ON_VOLUME : 0);
	blk = l->offset / BS;
	end = DIV_ROUND_UP(MIN(l->size, l->length > UINT64_MAX - l->offset ? UINT64_MAX :
						  l->offset + l->length), BS);
	run = malloc(sizeof(*run));
	if (!run)
		return -ENOMEM;
	while (blk < end && l->nextents < l->max_extents) {
		r = layout_run_at(fs, ino, in, blk, end, run);
		if (r >= 0)
			r = add_extent(fs, l, blk, run, on_volume, seg.start);
		if (r <= 0)
			break;
		blk += (uint64_t)r;
	}
	free(run);
	if (r < 0)
		return (int)r;
	if (!l->nextents && blk < end)
		return -ENOBUFS;
	l->next = blk * BS;
	if (blk >= end)
		l->flags |= VFS_LAYOUT_COMPLETE;
	return l->lease ? ponyfs_lease_grant_locked(fs, l) : 0;
}

int ponyfs_layout_map(struct vfs *v, uint64_t ino, struct vfs_layout *l)
{
	return PONYFS_LOCKED(ponyfs_of(v), layout_map_locked(ponyfs_of(v), ino, l));
}

int ponyfs_layout_topology(struct vfs *v, struct vfs_layout_topology *ret)
{
	struct ponyfs *fs = ponyfs_of(v);
	struct volume_segment_info seg;
	unsigned segno;
	int r = ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg);

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	ret->level = volume_target_name(seg.type);
	snprintf(ret->layout, sizeof(ret->layout), "%s", seg.layout_name);
	ret->chunk = seg.chunk;
	ret->full_stripe = volume_full_stripe(fs->volume, segno);
	ret->region_offset = seg.start;
	ret->nmembers = MIN(seg.nmembers, VFS_LAYOUT_MAX_MEMBERS);
	for (unsigned m = 0; m < ret->nmembers; m++) {
		struct vfs_layout_member *mb = &ret->members[m];

		mb->device = volume_member_device(fs->volume, segno, m);
		mb->has_uuid = volume_member_uuid(fs->volume, segno, m, mb->uuid) == 0;
		mb->state = (uint32_t)volume_member_state(fs->volume, segno, m);
	}
	return 0;
}
