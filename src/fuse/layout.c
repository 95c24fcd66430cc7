/*
 * layout.c - the layout ioctls (docs/layout.md): PONYFUSE_IOC_LAYOUT on a
 * file answers where its bytes live (the vfs layout_map hook, extents,
 * checksums and member pieces) a page at a time, and
 * PONYFUSE_IOC_LAYOUT_MEMBER names the volume's members that pieces point
 * at (layout_topology); PONYFUSE_IOC_LAYOUT_LEASE answers or returns a
 * layout lease (layout_lease). FUSE's restricted ioctls carry only a fixed-size
 * struct each way, so both are fixed arrays the caller pages through.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

_Static_assert((int)PONYFUSE_LAYOUT_DIRTY == (int)VFS_LAYOUT_DIRTY &&
	       (int)PONYFUSE_PIECE_Q == (int)VFS_PIECE_Q &&
	       (int)PONYFUSE_LAYOUT_ENCRYPTED == (int)VFS_LAYOUT_ENCRYPTED &&
	       (int)PONYFUSE_LAYOUT_ON_VOLUME == (int)VFS_LAYOUT_ON_VOLUME &&
	       (int)PONYFUSE_LAYOUT_COMPLETE == (int)VFS_LAYOUT_COMPLETE &&
	       PONYFUSE_LEASE_NEW == VFS_LEASE_NEW &&
	       (int)PONYFUSE_LEASE_RETURN == (int)VFS_LEASE_RETURN &&
	       (int)PONYFUSE_LEASE_EXPIRED == (int)VFS_LEASE_EXPIRED &&
	       (int)PONYFUSE_LEASE_RECALLED == (int)VFS_LEASE_RECALLED,
	       "the ioctl's values are the vfs's");

void ponyfuse_layout_arg_from_vfs(const struct vfs_layout *l, struct ponyfuse_layout_arg *a)
{
	a->flags = l->flags;
	a->size = l->size;
	a->next = l->next;
	a->block_size = l->block_size;
	a->nextents = l->nextents;
	a->ncsums = l->ncsums;
	a->npieces = l->npieces;
	a->lease = l->lease;
	a->lease_ms = (uint32_t)MIN(l->lease_ms, (uint64_t)UINT32_MAX);
	for (uint32_t i = 0; i < l->nextents; i++)
		a->extents[i] = (struct ponyfuse_layout_extent){
			.file_offset = l->extents[i].file_offset, .length = l->extents[i].length,
			.volume_offset = l->extents[i].volume_offset, .state = l->extents[i].state,
			.first_csum = l->extents[i].first_csum,
			.first_piece = l->extents[i].first_piece, .npieces = l->extents[i].npieces,
		};
	for (uint32_t i = 0; i < l->npieces; i++)
		a->pieces[i] = (struct ponyfuse_layout_piece){
			.file_offset = l->pieces[i].file_offset, .length = l->pieces[i].length,
			.member_offset = l->pieces[i].member_offset, .member = l->pieces[i].member,
			.role = l->pieces[i].role,
		};
}

/* One page of ino's layout into a (in: version, offset, length). */
static int layout_page(struct vfs *fs, uint64_t ino, struct ponyfuse_layout_arg *a)
{
	struct vfs_layout_extent ext[PONYFUSE_LAYOUT_EXTENTS];
	struct vfs_layout_piece *pieces = calloc(PONYFUSE_LAYOUT_PIECES, sizeof(*pieces));
	struct vfs_layout l = {
		.offset = a->offset, .length = a->length,
		.extents = ext, .max_extents = PONYFUSE_LAYOUT_EXTENTS,
		.csums = a->csums, .max_csums = PONYFUSE_LAYOUT_CSUMS,
		.pieces = pieces, .max_pieces = PONYFUSE_LAYOUT_PIECES,
		.lease = a->lease,
	};
	int r = pieces ? VFS_CALL(fs, layout_map, ino, &l) : -ENOMEM;

	if (r >= 0)
		ponyfuse_layout_arg_from_vfs(&l, a);
	free(pieces);
	return r;
}

static void ioctl_layout(fuse_req_t req, struct vfs *fs, fuse_ino_t ino, unsigned flags,
			 const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse_layout_arg *a;
	int r;

	if (flags & FUSE_IOCTL_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	a = ponyfuse_ioctl_arg(req, in_buf, in_bufsz, out_bufsz, sizeof(*a), true);
	if (!a)
		return;
	r = a->version == PONYFUSE_LAYOUT_VERSION ? layout_page(fs, ino, a) : -EPROTONOSUPPORT;
	if (r < 0) {
		fuse_reply_err(req, -r);
	} else {
		a->version = PONYFUSE_LAYOUT_VERSION;
		fuse_reply_ioctl(req, 0, a, sizeof(*a));
	}
	free(a);
}

/* Member a->index of the volume under the data region into a. */
static int layout_member(struct vfs *fs, struct ponyfuse_layout_member_arg *a)
{
	struct vfs_layout_topology *t = malloc(sizeof(*t));
	const struct vfs_layout_member *m;
	int r = t ? VFS_CALL(fs, layout_topology, t) : -ENOMEM;

	if (r >= 0 && a->index >= t->nmembers)
		r = -ENOENT;
	if (r >= 0) {
		m = &t->members[a->index];
		a->nmembers = t->nmembers;
		a->state = m->state;
		a->chunk = t->chunk;
		a->full_stripe = t->full_stripe;
		a->region_offset = t->region_offset;
		snprintf(a->level, sizeof(a->level), "%s", t->level ? t->level : "");
		snprintf(a->layout, sizeof(a->layout), "%s", t->layout);
		a->has_uuid = m->has_uuid;
		memcpy(a->uuid, m->uuid, sizeof(a->uuid));
		snprintf(a->device, sizeof(a->device), "%s", m->device ? m->device : "");
	}
	free(t);
	return r;
}

static void ioctl_layout_member(fuse_req_t req, struct vfs *fs, const void *in_buf,
				size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse_layout_member_arg a;
	int r;

	if (in_bufsz < sizeof(a) || out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&a, in_buf, sizeof(a));
	r = a.version == PONYFUSE_LAYOUT_VERSION ? layout_member(fs, &a) : -EPROTONOSUPPORT;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	a.version = PONYFUSE_LAYOUT_VERSION;
	fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

/* A lease's status, or its return (PONYFUSE_IOC_LAYOUT_LEASE). */
static void ioctl_layout_lease(fuse_req_t req, struct vfs *fs, const void *in_buf,
			       size_t in_bufsz, size_t out_bufsz)
{
	struct ponyfuse_layout_lease_arg a;
	int r;

	if (in_bufsz < sizeof(a) || out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&a, in_buf, sizeof(a));
	r = a.version == PONYFUSE_LAYOUT_VERSION ?
	    VFS_CALL(fs, layout_lease, a.lease, a.op, &a.state, &a.lease_ms) : -EPROTONOSUPPORT;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	a.version = PONYFUSE_LAYOUT_VERSION;
	fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

bool ponyfuse_layout_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, unsigned flags,
			   const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct vfs *fs = ((struct ponyfuse *)fuse_req_userdata(req))->fs;

	switch (cmd) {
	case PONYFUSE_IOC_LAYOUT:
		ioctl_layout(req, fs, ino, flags, in_buf, in_bufsz, out_bufsz);
		return true;
	case PONYFUSE_IOC_LAYOUT_MEMBER:
		ioctl_layout_member(req, fs, in_buf, in_bufsz, out_bufsz);
		return true;
	case PONYFUSE_IOC_LAYOUT_LEASE:
		ioctl_layout_lease(req, fs, in_buf, in_bufsz, out_bufsz);
		return true;
	default:
		return false;
	}
}
