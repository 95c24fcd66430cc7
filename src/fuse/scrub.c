/*
 * scrub.c - the bad-block and scrub ioctls (docs/scrub.md):
 * PONYFUSE_IOC_RESOLVE says what lives at one address, PONYFUSE_IOC_BADBLOCK
 * pages through the known bad regions, PONYFUSE_IOC_SCRUB starts, stops and
 * reports the passive scrub; each is the vfs hook of the same name with its
 * struct copied field for field (FUSE's restricted ioctls: fixed sizes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Static_assert(sizeof(((struct ponyfuse_resolve_arg *)0)->paths) == VFS_RESOLVE_PATHS &&
	       (int)PONYFUSE_RESOLVE_BY_MEMBER == (int)VFS_RESOLVE_BY_MEMBER,
	       "the ioctl's values are the vfs's");

static void resolve_to_vfs(const struct ponyfuse_resolve_arg *a, struct vfs_resolve *r)
{
	memset(r, 0, sizeof(*r));
	r->flags = a->flags;
	r->member = a->member;
	r->member_offset = a->member_offset;
	r->volume_offset = a->volume_offset;
}

static void resolve_to_arg(const struct vfs_resolve *r, struct ponyfuse_resolve_arg *a)
{
	a->version = PONYFUSE_SCRUB_VERSION;
	a->member = r->member;
	a->what = r->what;
	a->member_offset = r->member_offset;
	a->volume_offset = r->volume_offset;
	a->role = r->role;
	a->meta = r->meta;
	a->npaths = r->npaths;
	a->page = r->page;
	a->row_length = r->row_length;
	a->ino = r->ino;
	a->file_offset = r->file_offset;
	a->block = r->block;
	memcpy(a->paths, r->paths, sizeof(a->paths));
}

static int do_resolve(struct vfs *fs, struct ponyfuse_resolve_arg *a)
{
	struct vfs_resolve *r = malloc(sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	resolve_to_vfs(a, r);
	e = VFS_CALL(fs, resolve, r);
	if (e >= 0)
		resolve_to_arg(r, a);
	free(r);
	return e;
}

static int do_badblock(struct vfs *fs, struct ponyfuse_badblock_arg *a)
{
	struct vfs_badblock *b = malloc(sizeof(*b));
	int e;

	if (!b)
		return -ENOMEM;
	e = VFS_CALL(fs, badblock, a->index, b);
	if (e >= 0) {
		a->source = b->source;
		a->repaired = b->repaired;
		a->length = b->length;
		resolve_to_arg(&b->where, &a->where);
	}
	free(b);
	return e;
}

static int do_scrub(struct vfs *fs, struct ponyfuse_scrub_arg *a)
{
	struct vfs_scrub s = { .op = a->op, .rate = a->rate };
	int e = VFS_CALL(fs, scrub, &s);

	if (e >= 0)
		*a = (struct ponyfuse_scrub_arg){
			.version = PONYFUSE_SCRUB_VERSION, .op = a->op, .state = s.state,
			.error = s.error, .rate = s.rate, .position = s.position, .total = s.total,
			.checked = s.checked, .repaired = s.repaired, .lost = s.lost,
			.elapsed_ms = s.elapsed_ms, .yielded_ms = s.yielded_ms,
		};
	return e;
}

/* The argument in, the hook run, the argument out: size checked, version too. */
static void scrub_reply(fuse_req_t req, struct vfs *fs, unsigned cmd, const void *in_buf,
			size_t in_bufsz, size_t out_bufsz, size_t size)
{
	void *a = malloc(size);
	int e = a ? 0 : -ENOMEM;

	if (e >= 0 && (in_bufsz < size || out_bufsz < size))
		e = -EINVAL;
	if (e >= 0) {
		memcpy(a, in_buf, size);
		if (*(const uint32_t *)a != PONYFUSE_SCRUB_VERSION)
			e = -EPROTONOSUPPORT;
	}
	if (e >= 0)
		e = cmd == PONYFUSE_IOC_RESOLVE ? do_resolve(fs, a) :
		    cmd == PONYFUSE_IOC_BADBLOCK ? do_badblock(fs, a) : do_scrub(fs, a);
	if (e < 0)
		fuse_reply_err(req, -e);
	else
		fuse_reply_ioctl(req, 0, a, size);
	free(a);
}

bool ponyfuse_scrub_ioctl(fuse_req_t req, unsigned cmd, const void *in_buf, size_t in_bufsz,
			  size_t out_bufsz)
{
	struct vfs *fs = ((struct ponyfuse *)fuse_req_userdata(req))->fs;

	switch (cmd) {
	case PONYFUSE_IOC_RESOLVE:
		scrub_reply(req, fs, cmd, in_buf, in_bufsz, out_bufsz, sizeof(struct ponyfuse_resolve_arg));
		return true;
	case PONYFUSE_IOC_BADBLOCK:
		scrub_reply(req, fs, cmd, in_buf, in_bufsz, out_bufsz,
			    sizeof(struct ponyfuse_badblock_arg));
		return true;
	case PONYFUSE_IOC_SCRUB:
		scrub_reply(req, fs, cmd, in_buf, in_bufsz, out_bufsz, sizeof(struct ponyfuse_scrub_arg));
		return true;
	default:
		return false;
	}
}
