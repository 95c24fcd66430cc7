/*
 * mirror_scrub_span.c - the passive scrub's walk over a mirror segment
 * (volume_scrub_span(); ponyfs's metadata region is a mirror over every
 * member): each unit's copies read at once, one read per member in one
 * batch, and compared without the segment's lock, instead of the copies'
 * vote (target_mirror.c), which reads them one after another under it. A
 * unit whose copies all agree was consistent as read and is handed to the
 * caller as it is; anything else (a read error, a member out, copies that
 * differ, perhaps only because a write landed between two reads) is done
 * again by the target's own scrub under the lock, which alone decides,
 * logs and repairs.
 */
#include <errno.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

/* [off, off+n), one unit at most: its copies at once, then compared. */
static int span_unit(struct volume_seg *s, uint64_t off, uint64_t n, struct volume_scrub *sc)
{
	struct volume_place c;
	struct volume_batch batch;
	uint8_t *mem;
	bool same = true;

	if (volume_seg_place(s, off, n, &c) < 0 || c.len != n || c.ncopies < 2 ||
	    c.ncopies > VOLUME_BATCH_MAX)
		return volume_scrub_span_locked(s, off, off + n, sc);
	mem = volume_scrub_span_buf(c.ncopies * n);
	if (!mem)
		return -ENOMEM;
	volume_batch_init(&batch, s);
	for (unsigned i = 0; i < c.ncopies; i++)
		volume_batch_add(&batch, c.disk[i], false, mem + i * n, n, c.dev_off[i]);
	volume_batch_run(&batch);
	for (unsigned i = 0; i < c.ncopies && same; i++)
		same = volume_batch_result(&batch, i) == 0 &&
		       (i == 0 || !memcmp(mem, mem + i * n, n));
	volume_batch_done(&batch);
	if (!same)
		return volume_scrub_span_locked(s, off, off + n, sc);
	volume_scrub_consistent(sc, off, mem, n);
	return 0;
}

int mirror_scrub_span(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc)
{
	uint64_t unit = s->ops->unit(s), end = MIN(off + len, s->len);
	int r = 0;

	/* A resync writes whatever it finds; a member out is the vote's to weigh. */
	if (sc->mode == VOLUME_SCRUB_RESYNC || volume_seg_degraded(s))
		return volume_scrub_span_locked(s, off, end, sc);
	for (; off < end && r >= 0; off += unit)
		r = span_unit(s, off, MIN(unit, end - off), sc);
	return r;
}
