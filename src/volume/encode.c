/*
 * encode.c - the parity of a whole stripe for a writer outside the volume:
 * a direct writer (libpony-layout, docs/layout.md "Direct writes") puts
 * data and parity on the members itself, and takes the parity from here,
 * so it never carries P and Q math of its own: the same md geometry
 * (layout_raid456_stripe: which block is which, Q's syndrome slots) and
 * the same parity engine the volume's own full-stripe writes use.
 */
#include <errno.h>

#include "pony/util.h"
#include "internal.h"

int volume_encode_stripe(const struct volume *v, uint64_t off, const void *data, void *p, void *q)
{
	const struct volume_seg *s = NULL;
	uint8_t *blk[PARITY_MAX_DATA];
	struct layout_stripe st;
	uint64_t width, in;

	for (unsigned i = 0; i < volume_segment_count(v); i++) {
		const struct volume_seg *g = volume_seg_get(v, i);

		if (off >= g->start && off < g->start + g->len)
			s = g;
	}
	if (!s || (s->type != VOLUME_RAID4 && s->type != VOLUME_RAID5 && s->type != VOLUME_RAID6))
		return -EOPNOTSUPP;
	width = s->geom.chunk * layout_ndata(&s->geom);
	in = off - s->start;
	if (in % width || s->len - in < width || !p || (s->type == VOLUME_RAID6) != !!q ||
	    (uintptr_t)data % PARITY_ALIGN || (uintptr_t)p % PARITY_ALIGN ||
	    (uintptr_t)q % PARITY_ALIGN)
		return -EINVAL;
	layout_raid456_stripe(&s->geom, in / width, &st);
	for (unsigned b = 0; b < st.ndata; b++)
		blk[b] = (uint8_t *)data + (size_t)b * s->geom.chunk;
	s->parity->gen(&(struct parity_stripe){
		.ndata = st.ndata, .len = s->geom.chunk, .data = blk, .p = p,
		.q = st.qd >= 0 ? q : NULL, .qexp = st.qd >= 0 ? st.qexp : NULL,
	});
	return 0;
}
