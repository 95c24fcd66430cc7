/*
 * idmap.c - the union's id mapping, as fuse-overlayfs's uidmapping=,
 * gidmapping=, squash_to_root and squash_to_uid/gid: owners on disk are
 * shown through the maps (or all as one id), and the ids a caller brings
 * (the owner of a new file, a chown) are mapped back before they reach the
 * upper. Rootless podman shares one image store between user namespaces
 * this way instead of chowning every layer. Permission checks stay the
 * kernel's (default_permissions), on the ids as shown.
 */
#include "internal.h"

/* direct: on-disk id -> shown; else shown -> on-disk. */
static uint32_t map_id(const struct union_idmap *map, unsigned n, uint32_t id, bool direct)
{
	if (n == 0)
		return id;
	for (unsigned i = 0; i < n; i++) {
		uint32_t from = direct ? map[i].host : map[i].to;
		uint32_t to = direct ? map[i].to : map[i].host;

		if (id >= from && id - from < map[i].count)
			return to + (id - from);
	}
	return UNION_ID_OVERFLOW;
}

void union_idmap_show(const struct union_fs *u, struct statx *x)
{
	if (u->flags & UNION_SQUASH_UID)
		x->stx_uid = u->squash_uid;
	else
		x->stx_uid = map_id(u->uidmap, u->nuidmap, x->stx_uid, true);
	if (u->flags & UNION_SQUASH_GID)
		x->stx_gid = u->squash_gid;
	else
		x->stx_gid = map_id(u->gidmap, u->ngidmap, x->stx_gid, true);
}

const struct vfs_ctx *union_idmap_ctx(const struct union_fs *u, const struct vfs_ctx *ctx,
				      struct vfs_ctx *buf)
{
	if (!u->nuidmap && !u->ngidmap)
		return ctx;
	*buf = *ctx;
	buf->uid = map_id(u->uidmap, u->nuidmap, ctx->uid, false);
	buf->gid = map_id(u->gidmap, u->ngidmap, ctx->gid, false);
	return buf;
}

const struct vfs_setattr *union_idmap_setattr(const struct union_fs *u,
					      const struct vfs_setattr *a,
					      struct vfs_setattr *buf)
{
	if (!(a->valid & (VFS_SET_UID | VFS_SET_GID)) || (!u->nuidmap && !u->ngidmap))
		return a;
	*buf = *a;
	/* -1 is chown's "unchanged", never an id to map. */
	if ((a->valid & VFS_SET_UID) && a->uid != (uid_t)-1)
		buf->uid = map_id(u->uidmap, u->nuidmap, a->uid, false);
	if ((a->valid & VFS_SET_GID) && a->gid != (gid_t)-1)
		buf->gid = map_id(u->gidmap, u->ngidmap, a->gid, false);
	return buf;
}
