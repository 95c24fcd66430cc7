/*
 * map.c - where a segment's bytes live on its members: the one home of
 * every target's placement. The targets' I/O, rebuild and scrub ask
 * volume_seg_place() for the piece they work on next, and volume_map()
 * hands the same answer to clients that read members directly (pNFS-style
 * layouts, docs/layout.md), so the two can never disagree. md's own
 * arithmetic (stripes, raid10 copies) stays in layout.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

/* linear: the member's bytes at the segment's offsets. */
static void place_linear(uint64_t off, uint64_t len, struct volume_place *ret)
{
	ret->len = len;
	ret->ncopies = 1;
	ret->disk[0] = 0;
	ret->dev_off[0] = off;
}

/* striped (md raid0): chunks round-robin over the members. */
static void place_striped(const struct layout_geom *g, uint64_t off, uint64_t len,
			  struct volume_place *ret)
{
	uint64_t c = off / g->chunk, in = off % g->chunk;

	ret->len = MIN(len, g->chunk - in);
	ret->ncopies = 1;
	ret->disk[0] = (unsigned)(c % g->ndisks);
	ret->dev_off[0] = c / g->ndisks * g->chunk + in;
}

/* mirror: every member holds every byte at the same offset. */
static void place_mirror(const struct layout_geom *g, uint64_t off, uint64_t len,
			 struct volume_place *ret)
{
	ret->len = len;
	ret->ncopies = g->ndisks;
	for (unsigned i = 0; i < g->ndisks; i++) {
		ret->disk[i] = i;
		ret->dev_off[i] = off;
	}
}

/* raid10: md's near/far/offset copies of the chunk, at the same offset inside it. */
static void place_raid10(const struct layout_geom *g, uint64_t off, uint64_t len,
			 struct volume_place *ret)
{
	uint64_t in = off % g->chunk;

	ret->len = MIN(len, g->chunk - in);
	ret->ncopies = layout_raid10_copies(g, off / g->chunk, ret->disk, ret->dev_off);
	for (unsigned i = 0; i < ret->ncopies; i++)
		ret->dev_off[i] += in;
}

/* raid4/5/6: the data block of its stripe row, whose P and Q sit beside it. */
static void place_raid456(const struct layout_geom *g, uint64_t off, uint64_t len,
			  struct volume_place *ret)
{
	uint64_t width = g->chunk * layout_ndata(g), within = off % width;

	ret->stripe = off / width;
	ret->in = within % g->chunk;
	ret->block = (unsigned)(within / g->chunk);
	ret->len = MIN(len, g->chunk - ret->in);
	layout_raid456_stripe(g, ret->stripe, &ret->st);
	ret->ncopies = 1;
	ret->disk[0] = ret->st.disk[ret->block];
	ret->dev_off[0] = ret->stripe * g->chunk + ret->in;
}

int volume_seg_place(const struct volume_seg *s, uint64_t off, uint64_t len,
		     struct volume_place *ret)
{
	ret->stripe = UINT64_MAX;
	ret->in = 0;
	ret->block = 0;
	switch (s->type) {
	case VOLUME_LINEAR:
		place_linear(off, len, ret);
		return 0;
	case VOLUME_STRIPED:
		place_striped(&s->geom, off, len, ret);
		return 0;
	case VOLUME_MIRROR:
		place_mirror(&s->geom, off, len, ret);
		return 0;
	case VOLUME_RAID10:
		place_raid10(&s->geom, off, len, ret);
		return 0;
	case VOLUME_RAID4:
	case VOLUME_RAID5:
	case VOLUME_RAID6:
		place_raid456(&s->geom, off, len, ret);
		return 0;
	default:
		ret->len = len;
		ret->ncopies = 0;
		return -EINVAL;
	}
}

/* Pieces of one place: data, then copies or parity. */
struct map_out {
	struct volume_piece *ret;
	size_t n;
	int64_t count;
};

static void map_emit(struct map_out *o, const struct volume_piece *p)
{
	if ((uint64_t)o->count < o->n)
		o->ret[o->count] = *p;
	o->count++;
}

static void map_place(const struct volume_seg *s, const struct volume_place *pl, uint64_t vol_off,
		      struct map_out *o)
{
	struct volume_piece p = {
		.vol_off = vol_off, .len = pl->len, .seg = s->index, .stripe = pl->stripe, .q_slot = -1,
	};

	if (!pl->ncopies) {
		p.role = VOLUME_PIECE_NONE;
		p.member = VOLUME_NO_MEMBER;
		map_emit(o, &p);
		return;
	}
	for (unsigned i = 0; i < pl->ncopies; i++) {
		p.role = i ? VOLUME_PIECE_COPY : VOLUME_PIECE_DATA;
		p.member = pl->disk[i];
		p.dev_off = pl->dev_off[i];
		p.dev_start = s->m[p.member].offset;
		if (pl->stripe != UINT64_MAX && pl->st.qd >= 0)
			p.q_slot = pl->st.qexp[pl->block];
		map_emit(o, &p);
	}
	if (pl->stripe == UINT64_MAX)
		return;
	p.q_slot = -1;
	for (int parity = 0; parity < (pl->st.qd >= 0 ? 2 : 1); parity++) {
		p.role = parity ? VOLUME_PIECE_Q : VOLUME_PIECE_P;
		p.member = (unsigned)(parity ? pl->st.qd : pl->st.pd);
		p.dev_start = s->m[p.member].offset;
		map_emit(o, &p);
	}
}

int64_t volume_map(const struct volume *v, uint64_t off, uint64_t len, struct volume_piece *ret,
		   size_t n)
{
	struct map_out o = { .ret = ret, .n = n };

	if (off > volume_size(v) || len > volume_size(v) - off)
		return -EINVAL;
	for (unsigned i = 0; i < volume_segment_count(v) && len; i++) {
		const struct volume_seg *s = volume_seg_get(v, i);

		while (len && off >= s->start && off < s->start + s->len) {
			struct volume_place pl;

			volume_seg_place(s, off - s->start, MIN(len, s->start + s->len - off), &pl);
			map_place(s, &pl, off, &o);
			off += pl.len;
			len -= pl.len;
		}
	}
	return o.count;
}

int volume_segment_info(const struct volume *v, unsigned seg, struct volume_segment_info *ret)
{
	const struct volume_seg *s = volume_seg_get(v, seg);
	bool md = s && (s->geom.level >= 4 || s->type == VOLUME_RAID10);

	if (!s)
		return -EINVAL;
	*ret = (struct volume_segment_info){
		.start = s->start, .len = s->len, .type = s->type, .layout = s->geom.layout,
		.chunk = s->type == VOLUME_LINEAR || s->type == VOLUME_MIRROR ? 0 : s->geom.chunk,
		.nmembers = s->nmembers, .cls = s->cls,
	};
	if (md)
		snprintf(ret->layout_name, sizeof(ret->layout_name), "%s",
			 layout_name(s->geom.level, s->geom.layout));
	return 0;
}

/*
 * The reverse of volume_seg_place() for member m's byte dev_off of s (past
 * its data offset): the segment byte it holds, as *ret (DATA, COPY) or the
 * stripe row it protects (P, Q: ret->vol_off is the row's first byte, len
 * its data width). -ENOENT past the member's part of s.
 */
static int unplace(const struct volume_seg *s, unsigned m, uint64_t dev_off,
		   struct volume_piece *ret)
{
	const struct layout_geom *g = &s->geom;
	uint64_t seg_off = dev_off, len = 1;
	struct layout_stripe st;

	ret->role = VOLUME_PIECE_DATA;
	switch (s->type) {
	case VOLUME_LINEAR:
		break;
	case VOLUME_MIRROR:
		ret->role = m ? VOLUME_PIECE_COPY : VOLUME_PIECE_DATA;
		break;
	case VOLUME_STRIPED:
		seg_off = (dev_off / g->chunk * g->ndisks + m) * g->chunk + dev_off % g->chunk;
		break;
	case VOLUME_RAID4:
	case VOLUME_RAID5:
	case VOLUME_RAID6:
		ret->stripe = dev_off / g->chunk;
		layout_raid456_stripe(g, ret->stripe, &st);
		seg_off = ret->stripe * g->chunk * st.ndata;
		if ((int)m == st.pd || (int)m == st.qd) {
			ret->role = (int)m == st.pd ? VOLUME_PIECE_P : VOLUME_PIECE_Q;
			len = g->chunk * st.ndata;
			break;
		}
		for (unsigned b = 0; b < st.ndata; b++)
			if (st.disk[b] == m) {
				seg_off += b * g->chunk + dev_off % g->chunk;
				ret->q_slot = st.qd >= 0 ? st.qexp[b] : -1;
			}
		break;
	case VOLUME_RAID10: {
		uint64_t c;
		unsigned copy;

		if (layout_raid10_chunk_at(g, m, dev_off, &c, &copy) < 0)
			return -ENOENT;
		seg_off = c * g->chunk + dev_off % g->chunk;
		ret->role = copy ? VOLUME_PIECE_COPY : VOLUME_PIECE_DATA;
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	if (seg_off >= s->len)
		return -ENOENT;
	ret->vol_off = s->start + seg_off;
	ret->len = MIN(len, s->len - seg_off);
	return 0;
}

int volume_unmap(const struct volume *v, unsigned m, uint64_t dev_byte, struct volume_piece *ret)
{
	for (unsigned i = 0; i < volume_segment_count(v); i++) {
		const struct volume_seg *s = volume_seg_get(v, i);
		struct volume_piece p = { .seg = i, .member = m, .stripe = UINT64_MAX, .q_slot = -1 };
		int r;

		if (m >= s->nmembers || dev_byte < s->m[m].offset)
			continue;
		p.dev_start = s->m[m].offset;
		p.dev_off = dev_byte - p.dev_start;
		r = unplace(s, m, p.dev_off, &p);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		*ret = p;
		return 0;
	}
	return -ENOENT;
}

uint64_t volume_member_start(const struct volume *v, unsigned seg, unsigned m)
{
	const struct volume_seg *s = volume_seg_get(v, seg);

	return s && m < s->nmembers ? s->m[m].offset : 0;
}
