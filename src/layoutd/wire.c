/*
 * wire.c - the layout control socket's messages (docs/layout.md "Control
 * socket"): headers, and a layout page to and from its little-endian
 * payload. The daemon and clients share these, so both ends read the
 * format from one place; a decoded page is checked whole (counts within
 * the payload and the maximums, indexes within the arrays) before a
 * client follows an index.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pony/layoutd.h"

struct layoutd_hdr layoutd_hdr_make(enum layoutd_type type, uint32_t length, uint32_t tag)
{
	return (struct layoutd_hdr){
		.magic = cpu_to_le32(LAYOUTD_MAGIC), .version = cpu_to_le16(LAYOUTD_VERSION),
		.type = cpu_to_le16((uint16_t)type), .length = cpu_to_le32(length),
		.tag = cpu_to_le32(tag),
	};
}

int layoutd_hdr_check(const struct layoutd_hdr *h, size_t length)
{
	if (le32_to_cpu(h->magic) != LAYOUTD_MAGIC || le16_to_cpu(h->version) != LAYOUTD_VERSION ||
	    le32_to_cpu(h->length) != length)
		return -EPROTO;
	return 0;
}

size_t layoutd_layout_encode(const struct vfs_layout *l, uint8_t *buf)
{
	struct layoutd_layout_head head = {
		.flags = cpu_to_le32(l->flags), .block_size = cpu_to_le32(l->block_size),
		.size = cpu_to_le64(l->size), .next = cpu_to_le64(l->next),
		.lease = cpu_to_le32(l->lease), .nextents = cpu_to_le32(l->nextents),
		.ncsums = cpu_to_le32(l->ncsums), .npieces = cpu_to_le32(l->npieces),
		.lease_ms = cpu_to_le64(l->lease_ms),
	};
	size_t at = sizeof(head);

	memcpy(buf, &head, sizeof(head));
	for (uint32_t i = 0; i < l->nextents; i++, at += sizeof(struct layoutd_extent)) {
		const struct vfs_layout_extent *e = &l->extents[i];
		struct layoutd_extent w = {
			.file_offset = cpu_to_le64(e->file_offset), .length = cpu_to_le64(e->length),
			.volume_offset = cpu_to_le64(e->volume_offset), .state = cpu_to_le32(e->state),
			.first_csum = cpu_to_le32(e->first_csum),
			.first_piece = cpu_to_le32(e->first_piece), .npieces = cpu_to_le32(e->npieces),
		};

		memcpy(buf + at, &w, sizeof(w));
	}
	for (uint32_t i = 0; i < l->ncsums; i++, at += 4) {
		le32 c = cpu_to_le32(l->csums[i]);

		memcpy(buf + at, &c, 4);
	}
	for (uint32_t i = 0; i < l->npieces; i++, at += sizeof(struct layoutd_piece)) {
		const struct vfs_layout_piece *p = &l->pieces[i];
		struct layoutd_piece w = {
			.file_offset = cpu_to_le64(p->file_offset), .length = cpu_to_le64(p->length),
			.member_offset = cpu_to_le64(p->member_offset),
			.member = cpu_to_le32(p->member), .role = cpu_to_le32(p->role),
		};

		memcpy(buf + at, &w, sizeof(w));
	}
	return at;
}

/* Whether extent e's indexes stay inside what l holds. */
static bool extent_fits(const struct vfs_layout_extent *e, const struct vfs_layout *l)
{
	uint64_t blocks = l->block_size ? e->length / l->block_size : 0;

	if ((uint64_t)e->first_piece + e->npieces > l->npieces)
		return false;
	return e->state != VFS_LAYOUT_DATA || (uint64_t)e->first_csum + blocks <= l->ncsums;
}

int layoutd_layout_decode(const uint8_t *buf, size_t len, struct vfs_layout *l)
{
	struct layoutd_layout_head head;
	size_t at = sizeof(head);

	if (len < sizeof(head))
		return -EPROTO;
	memcpy(&head, buf, sizeof(head));
	l->flags = le32_to_cpu(head.flags);
	l->block_size = le32_to_cpu(head.block_size);
	l->size = le64_to_cpu(head.size);
	l->next = le64_to_cpu(head.next);
	l->lease = le32_to_cpu(head.lease);
	l->lease_ms = le64_to_cpu(head.lease_ms);
	l->nextents = le32_to_cpu(head.nextents);
	l->ncsums = le32_to_cpu(head.ncsums);
	l->npieces = le32_to_cpu(head.npieces);
	if (l->nextents > l->max_extents || l->ncsums > l->max_csums ||
	    l->npieces > l->max_pieces ||
	    len != at + l->nextents * sizeof(struct layoutd_extent) + l->ncsums * 4ull +
		   l->npieces * sizeof(struct layoutd_piece))
		return -EPROTO;
	for (uint32_t i = 0; i < l->nextents; i++, at += sizeof(struct layoutd_extent)) {
		struct layoutd_extent w;

		memcpy(&w, buf + at, sizeof(w));
		l->extents[i] = (struct vfs_layout_extent){
			.file_offset = le64_to_cpu(w.file_offset), .length = le64_to_cpu(w.length),
			.volume_offset = le64_to_cpu(w.volume_offset), .state = le32_to_cpu(w.state),
			.first_csum = le32_to_cpu(w.first_csum),
			.first_piece = le32_to_cpu(w.first_piece), .npieces = le32_to_cpu(w.npieces),
		};
	}
	for (uint32_t i = 0; i < l->ncsums; i++, at += 4) {
		le32 c;

		memcpy(&c, buf + at, 4);
		l->csums[i] = le32_to_cpu(c);
	}
	for (uint32_t i = 0; i < l->npieces; i++, at += sizeof(struct layoutd_piece)) {
		struct layoutd_piece w;

		memcpy(&w, buf + at, sizeof(w));
		l->pieces[i] = (struct vfs_layout_piece){
			.file_offset = le64_to_cpu(w.file_offset), .length = le64_to_cpu(w.length),
			.member_offset = le64_to_cpu(w.member_offset),
			.member = le32_to_cpu(w.member), .role = le32_to_cpu(w.role),
		};
	}
	for (uint32_t i = 0; i < l->nextents; i++)
		if (!extent_fits(&l->extents[i], l))
			return -EPROTO;
	return 0;
}

size_t layoutd_topology_encode(const struct vfs_layout_topology *t, uint8_t *buf)
{
	struct layoutd_topology_head head = {
		.chunk = cpu_to_le64(t->chunk), .full_stripe = cpu_to_le64(t->full_stripe),
		.region_offset = cpu_to_le64(t->region_offset),
		.nmembers = cpu_to_le32(MIN(t->nmembers, (uint32_t)VFS_LAYOUT_MAX_MEMBERS)),
	};
	size_t at = sizeof(head);

	/* The rest of each field stays zero (NUL padding, no stale bytes on the wire). */
	snprintf(head.level, sizeof(head.level), "%s", t->level ? t->level : "");
	snprintf(head.layout, sizeof(head.layout), "%s", t->layout);
	memcpy(buf, &head, sizeof(head));
	for (uint32_t i = 0; i < le32_to_cpu(head.nmembers); i++, at += sizeof(struct layoutd_member)) {
		const struct vfs_layout_member *m = &t->members[i];
		struct layoutd_member w = {
			.state = cpu_to_le32(m->state), .has_uuid = cpu_to_le32(m->has_uuid),
		};

		memcpy(w.uuid, m->uuid, sizeof(w.uuid));
		snprintf(w.device, sizeof(w.device), "%s", m->device ? m->device : "");
		memcpy(buf + at, &w, sizeof(w));
	}
	return at;
}

int layoutd_addr_split(const char *addr, char *host, size_t cap, const char **ret_port)
{
	const char *port = strrchr(addr, ':');
	size_t hl;

	if (!port || !port[1])
		return -EINVAL;
	hl = (size_t)(port - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl >= cap)
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	*ret_port = port + 1;
	return 0;
}
