/*
 * remote.c - a layout got from another host (pony_layout_get_remote): the
 * mount's layout service over TCP (src/layoutd: TLS 1.3 with a pre-shared
 * key, or in the clear), the file named by its path from the mount's root
 * (GET_PATH, page by page as the ioctl pages), the lease asked and given
 * back by LEASE, the members by TOPOLOGY. The rest of the library cannot
 * tell: the pages arrive as the ioctl's structs, the members as its
 * member args. Members that are NBD URIs are read from their servers
 * (nbds:// with the caller's key file when the URI names none); a member
 * named by a path is the mount host's file, never opened here.
 *
 * One request is in flight at a time (a layout is used by one thread);
 * recalls the daemon pushes meanwhile are skipped: the lease's STATUS,
 * asked after every read, says RECALLED or EXPIRED all the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/layoutd.h"
#include "pony/util.h"
#include "internal.h"

#define REMOTE_TIMEOUT_MS 30000         /* an answer from the service */

_Static_assert(LAYOUTD_MAX_EXTENTS <= PONYFUSE_LAYOUT_EXTENTS &&
	       LAYOUTD_MAX_CSUMS <= PONYFUSE_LAYOUT_CSUMS &&
	       LAYOUTD_MAX_PIECES <= PONYFUSE_LAYOUT_PIECES &&
	       VFS_LAYOUT_MAX_MEMBERS <= 256,
	       "a LAYOUT page fits the ioctl's struct");

struct layout_remote {
	struct layoutd_client *c;
	char *path;                     /* from the mount's root */
	char *psk_file;                 /* NULL: in the clear; also nbds:// members' key */
	unsigned member_timeout_ms;
	uint32_t tag;                   /* the last request's */
	uint8_t req[LAYOUTD_MAX_REQUEST];
	uint8_t ans[LAYOUTD_MAX_PAYLOAD];
	struct vfs_layout_extent extents[LAYOUTD_MAX_EXTENTS];
	struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
};

void layout_remote_free(struct layout_remote *r)
{
	if (!r)
		return;
	layoutd_client_close(r->c);
	free(r->path);
	free(r->psk_file);
	free(r);
}

/*
 * One request and its answer of type want (its payload in r->ans, its
 * length in *ret_len): -errno when the daemon answered ERROR, -EPROTO for
 * any other type, -ECONNRESET or -ETIMEDOUT when it did not answer.
 */
static int call(struct layout_remote *r, enum layoutd_type type, size_t len,
		enum layoutd_type want, size_t *ret_len)
{
	uint32_t tag = ++r->tag ? r->tag : ++r->tag;    /* tag 0 is the daemon's own */
	int e = layoutd_client_send(r->c, type, tag, r->req, len, -1);

	while (e >= 0) {
		struct layoutd_hdr h;
		struct layoutd_error err;

		e = layoutd_client_recv(r->c, REMOTE_TIMEOUT_MS, &h, r->ans, sizeof(r->ans), ret_len);
		if (e < 0)
			break;
		if (le32_to_cpu(h.tag) != tag)
			continue;               /* a recall (tag 0) */
		if (le16_to_cpu(h.type) == LAYOUTD_ERROR && *ret_len == sizeof(err)) {
			memcpy(&err, r->ans, sizeof(err));
			return le32_to_cpu(err.err) ? -(int)le32_to_cpu(err.err) : -EPROTO;
		}
		return le16_to_cpu(h.type) == want ? 0 : -EPROTO;
	}
	return e == -EPIPE ? -ECONNRESET : e;
}

int layout_remote_page(struct pony_layout *l, struct ponyfuse_layout_arg *a)
{
	struct layout_remote *r = l->remote;
	size_t plen = strlen(r->path), len;
	struct layoutd_get_path g = {
		.get = { .offset = cpu_to_le64(a->offset), .length = cpu_to_le64(a->length),
			 .lease = cpu_to_le32(a->lease) },
		.path_len = cpu_to_le32((uint32_t)plen),
	};
	struct vfs_layout v = {
		.extents = r->extents, .max_extents = LAYOUTD_MAX_EXTENTS,
		.csums = a->csums, .max_csums = LAYOUTD_MAX_CSUMS,
		.pieces = r->pieces, .max_pieces = LAYOUTD_MAX_PIECES,
	};
	int e;

	memcpy(r->req, &g, sizeof(g));
	memcpy(r->req + sizeof(g), r->path, plen);
	e = call(r, LAYOUTD_GET_PATH, sizeof(g) + plen, LAYOUTD_LAYOUT, &len);
	if (e >= 0)
		e = layoutd_layout_decode(r->ans, len, &v);
	if (e >= 0)
		ponyfuse_layout_arg_from_vfs(&v, a);
	return e;
}

int layout_remote_lease(struct pony_layout *l, uint32_t lease, uint32_t op, uint32_t *ret_state)
{
	struct layout_remote *r = l->remote;
	struct layoutd_lease q = { .lease = cpu_to_le32(lease), .op = cpu_to_le32(op) };
	struct layoutd_lease_state a;
	size_t len;
	int e;

	memcpy(r->req, &q, sizeof(q));
	e = call(r, LAYOUTD_LEASE, sizeof(q), LAYOUTD_LEASE_STATE, &len);
	if (e >= 0 && len != sizeof(a))
		e = -EPROTO;
	if (e < 0)
		return e;
	memcpy(&a, r->ans, sizeof(a));
	*ret_state = le32_to_cpu(a.state);
	return 0;
}

int layout_remote_members(struct pony_layout *l, struct ponyfuse_layout_member_arg **ret,
			  unsigned *ret_n)
{
	struct layout_remote *r = l->remote;
	struct layoutd_topology_head head;
	struct ponyfuse_layout_member_arg *m;
	size_t len;
	uint32_t n;
	int e = call(r, LAYOUTD_TOPOLOGY, 0, LAYOUTD_TOPOLOGY_IS, &len);

	if (e < 0)
		return e;
	if (len < sizeof(head))
		return -EPROTO;
	memcpy(&head, r->ans, sizeof(head));
	n = le32_to_cpu(head.nmembers);
	if (n > VFS_LAYOUT_MAX_MEMBERS || len != sizeof(head) + n * sizeof(struct layoutd_member))
		return -EPROTO;
	m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct layoutd_member w;

		memcpy(&w, r->ans + sizeof(head) + i * sizeof(w), sizeof(w));
		m[i] = (struct ponyfuse_layout_member_arg){
			.version = PONYFUSE_LAYOUT_VERSION, .index = i, .nmembers = n,
			.state = le32_to_cpu(w.state), .chunk = le64_to_cpu(head.chunk),
			.full_stripe = le64_to_cpu(head.full_stripe),
			.region_offset = le64_to_cpu(head.region_offset),
			.has_uuid = le32_to_cpu(w.has_uuid),
		};
		/* NUL-padded on the wire; each arg's last byte stays NUL. */
		memcpy(m[i].level, head.level, sizeof(m[i].level) - 1);
		memcpy(m[i].layout, head.layout, sizeof(m[i].layout) - 1);
		memcpy(m[i].uuid, w.uuid, sizeof(w.uuid));
		memcpy(m[i].device, w.device, sizeof(m[i].device) - 1);
	}
	*ret = m;
	*ret_n = n;
	return 0;
}

int layout_remote_member_uri(const struct pony_layout *l, const char *device, char **ret)
{
	const struct layout_remote *r = l->remote;
	bool tls = !strncmp(device, "nbds", 4);

	/* The mount names a member without its query (docs/nbd.md): a TLS
	 * member gets this host's key file, the service's own. */
	if (tls && r->psk_file && !strchr(device, '?'))
		return asprintf(ret, "%s?tls-psk-file=%s", device, r->psk_file) < 0 ? -ENOMEM : 0;
	*ret = strdup(device);
	return *ret ? 0 : -ENOMEM;
}

unsigned layout_remote_member_timeout(const struct pony_layout *l)
{
	return l->remote->member_timeout_ms;
}

static int remote_open(const struct pony_layout_server *s, const char *path,
		       struct layout_remote **ret)
{
	struct layout_remote *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	while (*path == '/')
		path++;                 /* the service's paths are from the mount's root */
	r->member_timeout_ms = s->member_timeout_ms;
	r->path = strdup(path);
	r->psk_file = s->psk_file ? strdup(s->psk_file) : NULL;
	e = !r->path || (s->psk_file && !r->psk_file) ? -ENOMEM :
	    !path[0] || strlen(path) > LAYOUTD_PATH_MAX ? -EINVAL :
	    layoutd_client_tcp(s->addr, s->psk_file, &r->c);
	if (e < 0) {
		layout_remote_free(r);
		return e;
	}
	*ret = r;
	return 0;
}

int pony_layout_get_remote(const struct pony_layout_server *s, const char *path, uint64_t off,
			   uint64_t len, struct pony_layout **ret)
{
	struct pony_layout *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	l->fd = -1;
	l->off = off;
	l->end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	r = remote_open(s, path, &l->remote);
	if (!r)
		r = layout_get_members(l);
	/* One image: its blocks are read through the mount, which is not here. */
	if (!r && !(l->flags & PONYFUSE_LAYOUT_ON_VOLUME))
		r = -ENXIO;
	if (r) {
		pony_layout_return(l);
		return r;
	}
	*ret = l;
	return 0;
}
