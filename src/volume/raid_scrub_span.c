/*
 * raid_scrub_span.c - the passive scrub's walk over a parity segment
 * (volume_scrub_span(), the mounted filesystem's scrub): a span of stripes
 * read with one large read per member (each member's share of consecutive
 * stripes is contiguous on it), checked against P (and Q) without the
 * segment's lock, so two scrub threads read and check at once and
 * foreground writes are not held up meanwhile. A row that agrees is handed
 * to the caller as it is: it was consistent as read, whatever wrote around
 * it. Anything else (a read error, a member out, a row that disagrees,
 * perhaps only because a write landed between two members' reads) is done
 * again by the target's own scrub under the lock, which alone decides, logs
 * and repairs. Buffers are kept per thread (scrub_span_buf.c), as a pass
 * reuses them for every span.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

/* Bytes of one member read at once: large reads, a bounded buffer. */
#define SPAN_MEMBER_BYTES (1u << 20)

/* Stripes [a, b) the locked way: the target's scrub, which re-reads them. */
static int span_locked(struct volume_seg *s, uint64_t a, uint64_t b, struct volume_scrub *sc)
{
	uint64_t width = s->ops->unit(s);

	return volume_scrub_span_locked(s, a * width, b * width, sc);
}

/*
 * Whether stripe st, its blocks at mem + member x stride + at, agrees with
 * its parity; if so its data blocks go to the caller.
 */
static bool span_row_agrees(struct volume_seg *s, uint64_t st, uint8_t *mem, size_t stride,
			    size_t at, uint8_t *calc, struct volume_scrub *sc)
{
	size_t chunk = s->geom.chunk;
	struct layout_stripe ls;
	uint8_t *data[PARITY_MAX_DATA];
	struct parity_stripe ps;

	layout_raid456_stripe(&s->geom, st, &ls);
	for (unsigned i = 0; i < ls.ndata; i++)
		data[i] = mem + (size_t)ls.disk[i] * stride + at;
	ps = (struct parity_stripe){ .ndata = ls.ndata, .len = chunk, .data = data, .p = calc,
				     .q = ls.qd >= 0 ? calc + chunk : NULL,
				     .qexp = ls.qd >= 0 ? ls.qexp : NULL };
	s->parity->gen(&ps);
	if (memcmp(calc, mem + (size_t)ls.pd * stride + at, chunk) ||
	    (ls.qd >= 0 && memcmp(calc + chunk, mem + (size_t)ls.qd * stride + at, chunk)))
		return false;
	for (unsigned i = 0; i < ls.ndata; i++)
		volume_scrub_consistent(sc, st * chunk * ls.ndata + i * chunk, data[i], chunk);
	return true;
}

/* Stripes [a, b): every member's share in one read, then row by row. */
static int span_part(struct volume_seg *s, uint64_t a, uint64_t b, struct volume_scrub *sc)
{
	size_t chunk = s->geom.chunk, stride = (size_t)(b - a) * chunk;
	uint8_t *mem = volume_scrub_span_buf(s->nmembers * stride + 2 * chunk), *calc;
	struct volume_batch batch;
	bool read_ok = true;
	int r = 0;

	if (!mem)
		return -ENOMEM;
	calc = mem + s->nmembers * stride;
	volume_batch_init(&batch, s);
	for (unsigned m = 0; m < s->nmembers; m++)
		volume_batch_add(&batch, m, false, mem + m * stride, stride, a * chunk);
	volume_batch_run(&batch);
	for (unsigned m = 0; m < s->nmembers; m++)
		read_ok &= volume_batch_result(&batch, m) == 0;
	volume_batch_done(&batch);
	if (!read_ok)
		return span_locked(s, a, b, sc);
	for (uint64_t st = a; st < b && r >= 0; st++)
		if (!span_row_agrees(s, st, mem, stride, (size_t)(st - a) * chunk, calc, sc))
			r = span_locked(s, st, st + 1, sc);
	return r;
}

int raid_scrub_span(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc)
{
	uint64_t width = s->ops->unit(s), end = MIN(off + len, s->len);
	uint64_t per = MAX((uint64_t)1, SPAN_MEMBER_BYTES / s->geom.chunk);
	uint64_t a = off / width, last = DIV_ROUND_UP(end, width);
	int r = 0;

	if (off >= end)
		return 0;
	/* A resync writes whatever it finds; a member out leaves rows to solve. */
	if (sc->mode == VOLUME_SCRUB_RESYNC || volume_seg_degraded(s) ||
	    s->nmembers > VOLUME_BATCH_MAX)
		return span_locked(s, a, last, sc);
	for (; a < last && r >= 0; a += per)
		r = span_part(s, a, MIN(a + per, last), sc);
	return r;
}
