/*
 * dwrite.c - the direct-write ioctls (docs/layout.md "Direct writes"):
 * PONYFUSE_IOC_LAYOUT_WRITE hands a writer fresh whole stripes under a
 * write lease (the vfs layout_write hook), PONYFUSE_IOC_LAYOUT_COMMIT
 * takes the writer's extents and checksums a page at a time and, on the
 * last page, makes them the file's content (layout_commit). Both need
 * the file open for writing: the handle's, which the instance checks.
 * After a commit the kernel's cached pages and attributes of the file
 * are dropped: its bytes changed behind the page cache's back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

_Static_assert((int)PONYFUSE_COMMIT_LAST == (int)VFS_COMMIT_LAST, "the ioctl's values are the vfs's");

static void ioctl_write(fuse_req_t req, struct vfs *fs, fuse_ino_t ino, uint64_t fh,
			const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse_layout_write_arg *a;
	struct vfs_layout_write w;
	int r;

	a = ponyfuse_ioctl_arg(req, in_buf, in_bufsz, out_bufsz, sizeof(*a), true);
	if (!a)
		return;
	w = (struct vfs_layout_write){ .offset = a->offset, .length = a->length, .lease = a->lease,
				       .max_pieces = PONYFUSE_LAYOUT_PIECES };
	w.pieces = calloc(PONYFUSE_LAYOUT_PIECES, sizeof(*w.pieces));
	r = a->version != PONYFUSE_LAYOUT_VERSION ? -EPROTONOSUPPORT :
	    !w.pieces ? -ENOMEM : VFS_CALL(fs, layout_write, ino, fh, &w);
	if (r >= 0) {
		a->version = PONYFUSE_LAYOUT_VERSION;
		a->npieces = w.npieces;
		a->volume_offset = w.volume_offset;
		a->granted = w.granted;
		a->stripe = w.stripe;
		a->lease = w.lease;
		a->lease_ms = (uint32_t)MIN(w.lease_ms, (uint64_t)UINT32_MAX);
		a->block_size = w.block_size;
		for (uint32_t i = 0; i < w.npieces; i++)
			a->pieces[i] = (struct ponyfuse_layout_piece){
				.file_offset = w.pieces[i].file_offset, .length = w.pieces[i].length,
				.member_offset = w.pieces[i].member_offset,
				.member = w.pieces[i].member, .role = w.pieces[i].role,
			};
		fuse_reply_ioctl(req, 0, a, sizeof(*a));
	} else {
		fuse_reply_err(req, -r);
	}
	free(w.pieces);
	free(a);
}

static void ioctl_commit(fuse_req_t req, struct ponyfuse *pf, fuse_ino_t ino, uint64_t fh,
			 const void *in_buf, size_t in_bufsz)
{
	struct ponyfuse_layout_commit_arg *a;
	struct vfs_layout_commit_extent ext[PONYFUSE_COMMIT_EXTENTS];
	int r;

	a = ponyfuse_ioctl_arg(req, in_buf, in_bufsz, 0, sizeof(*a), false);
	if (!a)
		return;
	if (a->version != PONYFUSE_LAYOUT_VERSION)
		r = -EPROTONOSUPPORT;
	else if (a->nextents > PONYFUSE_COMMIT_EXTENTS || a->ncsums > PONYFUSE_COMMIT_CSUMS)
		r = -EINVAL;
	else
		r = 0;
	for (uint32_t i = 0; r >= 0 && i < a->nextents; i++)
		ext[i] = (struct vfs_layout_commit_extent){
			.file_offset = a->extents[i].file_offset, .length = a->extents[i].length,
			.volume_offset = a->extents[i].volume_offset,
		};
	if (r >= 0)
		r = VFS_CALL(pf->fs, layout_commit, ino, fh, &(struct vfs_layout_commit){
			.lease = a->lease, .flags = a->flags, .size = a->size, .extents = ext,
			.nextents = a->nextents, .csums = a->csums, .ncsums = a->ncsums,
		});
	/* Offset 0, length 0: every cached page, and the attributes (size). */
	if (r >= 0 && (a->flags & PONYFUSE_COMMIT_LAST))
		fuse_lowlevel_notify_inval_inode(pf->se, ino, 0, 0);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
	free(a);
}

bool ponyfuse_dwrite_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, struct fuse_file_info *fi,
			   unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse *pf = fuse_req_userdata(req);
	uint64_t fh = fi ? fi->fh : VFS_NO_FH;

	if (cmd != PONYFUSE_IOC_LAYOUT_WRITE && cmd != PONYFUSE_IOC_LAYOUT_COMMIT)
		return false;
	if (flags & FUSE_IOCTL_DIR)
		fuse_reply_err(req, EISDIR);
	else if (cmd == PONYFUSE_IOC_LAYOUT_WRITE)
		ioctl_write(req, pf->fs, ino, fh, in_buf, in_bufsz, out_bufsz);
	else
		ioctl_commit(req, pf, ino, fh, in_buf, in_bufsz);
	return true;
}
