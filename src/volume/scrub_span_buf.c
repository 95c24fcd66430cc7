/*
 * scrub_span_buf.c - what the targets' lock-free scrub walks
 * (volume_scrub_span(): raid_scrub_span.c, mirror_scrub_span.c) share: a
 * buffer per thread that holds every member's share of a span, kept from
 * span to span (a pass reuses it for each, so no large allocation and its
 * page faults per span), and the locked way back for a part the walk could
 * not decide on its own (a read error, a member out, copies or parity that
 * disagree): the target's own scrub, unit by unit under the segment's lock,
 * which alone decides, logs and repairs.
 */
#include "pony/util.h"
#include "internal.h"

uint8_t *volume_scrub_span_buf(size_t len)
{
	static struct util_thread_buf span_buf;

	return util_thread_buf(&span_buf, len);
}

int volume_scrub_span_locked(struct volume_seg *s, uint64_t off, uint64_t end,
			     struct volume_scrub *sc)
{
	uint64_t unit = s->ops->unit(s);
	int r = 0;

	for (; off < end && r >= 0; off += unit) {
		pthread_mutex_lock(&s->lock);
		r = s->ops->scrub(s, off, MIN(unit, end - off), sc);
		pthread_mutex_unlock(&s->lock);
	}
	return r;
}
