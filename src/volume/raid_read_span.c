/*
 * raid_read_span.c - a healthy read of many chunks of a parity segment
 * (raid4/5/6) as one batch: every data piece of the range, on whichever
 * member holds it, is submitted at once and waited for once, so the
 * members work in parallel. Read piece by piece, a member on another host
 * (an NBD export) costs a round trip per chunk while the others sit idle;
 * in one batch the round trips overlap.
 *
 * Only the easy case is taken here: stripes whose data members are all in
 * and pieces that read without error. The span stops before the first
 * degraded stripe, and its result is the bytes read in order up to the
 * first piece that failed; the target's own piece path then reads that
 * piece (reconstructing it from parity, recording a bad block) and the
 * span goes on after it.
 */
#include "pony/util.h"
#include "internal.h"

ssize_t raid_read_span(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	struct volume_batch batch;
	size_t queued = 0, done = 0;

	volume_batch_init(&batch, s);
	while (queued < len && batch.n < VOLUME_BATCH_MAX) {
		struct volume_place p;

		if (volume_seg_place(s, off + queued, len - queued, &p) < 0 ||
		    raid_stripe_degraded(s, p.stripe))
			break;
		volume_batch_add(&batch, p.disk[0], false, buf + queued, (size_t)p.len, p.dev_off[0]);
		queued += (size_t)p.len;
	}
	if (batch.n > 1) {
		volume_batch_run(&batch);
		for (unsigned i = 0; i < batch.n && volume_batch_result(&batch, i) >= 0; i++)
			done += batch.e[i].io.len;
	}
	volume_batch_done(&batch);
	return (ssize_t)done;
}
