/*
 * pass.c - the passes over a segment: rebuild (whole or by ranges), scrub
 * (check or repair, unit by unit or span by span where the target reads
 * spans itself), resync; rate-limited, with progress, each unit under the
 * segment's lock. Also where a scrub's findings are logged and reported.
 */
#include <errno.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "pony/util.h"
#include "internal.h"

/* Sleeps as needed so that done bytes since t0 stay under rate per second. */
static void volume_throttle(uint64_t t0, uint64_t done, uint64_t rate)
{
	uint64_t due, now;

	if (!rate)
		return;
	due = t0 + done * 1000000000ull / rate;
	now = util_now_ns();
	if (due > now)
		usleep((useconds_t)((due - now) / 1000));
}

/* What a rebuild or scrub pass does to one unit, under the segment's lock; scrub's state. */
struct seg_pass {
	int (*step)(struct volume_seg *s, uint64_t off, uint64_t n, struct seg_pass *p);
	struct volume_scrub sc;
};

static int scrub_step(struct volume_seg *s, uint64_t off, uint64_t n, struct seg_pass *p);

/* A scrub's span (a target with scrub_span): whole units, about this much. */
#define SCRUB_SPAN_BYTES (4ull << 20)

/*
 * Walks [from_off, to_off) of segment s unit by unit under the lock, or a
 * scrub span by span where the target walks spans itself (it locks what
 * it must): rate-limited, with progress.
 */
static int seg_pass_run(struct volume_seg *s, uint64_t from_off, uint64_t to_off, uint64_t rate,
			volume_progress_fn progress, void *arg, struct seg_pass *p)
{
	uint64_t unit = s->ops->unit(s), t0 = util_now_ns(), start = from_off / unit * unit;
	uint64_t end = MIN(to_off, s->len);
	bool span = p->step == scrub_step && s->ops->scrub_span;
	uint64_t stride = span ? MAX(unit, SCRUB_SPAN_BYTES / unit * unit) : unit;
	int r = 0;

	for (uint64_t off = start; off < end && r >= 0; off += stride) {
		uint64_t n = MIN(stride, s->len - off);

		if (span) {
			n = MIN(n, ROUND_UP(end - off, unit));  /* whole units, up to end */
			r = s->ops->scrub_span(s, off, n, &p->sc);
		} else {
			pthread_mutex_lock(&s->lock);
			r = p->step(s, off, n, p);
			pthread_mutex_unlock(&s->lock);
		}
		if (r >= 0 && progress && progress(off + n, s->len, arg))
			r = -ECANCELED;
		volume_throttle(t0, off + n - start, rate);
	}
	return r;
}

static int rebuild_step(struct volume_seg *s, uint64_t off, uint64_t n, struct seg_pass *p)
{
	int r = 0;

	for (unsigned m = 0; m < s->nmembers && r >= 0; m++)
		r = volume_mstate(s, m) == VOLUME_MEMBER_REBUILDING ? s->ops->rebuild(s, m, off, n) : 0;
	return r;
}

static int scrub_step(struct volume_seg *s, uint64_t off, uint64_t n, struct seg_pass *p)
{
	return s->ops->scrub(s, off, n, &p->sc);
}

/* Marks seg's rebuilding members working: their rebuild is done. */
static void rebuilt_members_ok(struct volume_seg *s)
{
	for (unsigned m = 0; m < s->nmembers; m++)
		if (volume_mstate(s, m) == VOLUME_MEMBER_REBUILDING)
			__atomic_store_n(&s->m[m].state, VOLUME_MEMBER_OK, __ATOMIC_RELEASE);
}

int volume_rebuild(struct volume *v, unsigned seg, uint64_t from_off, uint64_t rate,
		   volume_progress_fn progress, void *arg)
{
	struct seg_pass p = { .step = rebuild_step };
	struct volume_seg *s;
	int r;

	if (seg >= v->nsegs)
		return -EINVAL;
	s = v->segs[seg];
	if (!s->ops->rebuild || !s->ops->unit)
		return -EOPNOTSUPP;
	r = seg_pass_run(s, from_off, UINT64_MAX, rate, progress, arg, &p);
	if (r < 0)
		return r;
	rebuilt_members_ok(s);
	return 0;
}

int volume_rebuild_ranges(struct volume *v, unsigned seg, const struct volume_range *ranges,
			  size_t n, uint64_t rate)
{
	struct seg_pass p = { .step = rebuild_step };
	struct volume_seg *s;
	int r = 0;

	if (seg >= v->nsegs)
		return -EINVAL;
	s = v->segs[seg];
	if (!s->ops->rebuild || !s->ops->unit)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < n && r >= 0; i++)
		r = seg_pass_run(s, ranges[i].off, ranges[i].off + ranges[i].len, rate, NULL, NULL,
				 &p);
	if (r < 0)
		return r;
	rebuilt_members_ok(s);
	return 0;
}

int volume_scrub(struct volume *v, unsigned seg, bool repair, uint64_t rate,
		 volume_mismatch_fn report, void *report_arg,
		 volume_progress_fn progress, void *arg, uint64_t *ret_count)
{
	return volume_scrub_from(v, seg, 0, repair, rate, report, report_arg, progress, arg,
				 ret_count);
}

int volume_scrub_from(struct volume *v, unsigned seg, uint64_t from_off, bool repair,
		      uint64_t rate, volume_mismatch_fn report, void *report_arg,
		      volume_progress_fn progress, void *arg, uint64_t *ret_count)
{
	struct seg_pass p = { .step = scrub_step,
			      .sc = { .mode = repair ? VOLUME_SCRUB_REPAIR : VOLUME_SCRUB_CHECK,
				      .report = report, .arg = report_arg } };
	struct volume_seg *s;
	int r;

	if (seg >= v->nsegs)
		return -EINVAL;
	s = v->segs[seg];
	if (!s->ops->scrub || !s->ops->unit)
		return -EOPNOTSUPP;
	r = seg_pass_run(s, from_off, UINT64_MAX, rate, progress, arg, &p);
	if (ret_count)
		*ret_count = p.sc.count;
	return r;
}

int volume_scrub_span(struct volume *v, unsigned seg, uint64_t off, uint64_t len, bool repair,
		      volume_mismatch_fn report, void *report_arg, volume_scrub_data_fn data,
		      void *data_arg)
{
	struct seg_pass p = { .step = scrub_step,
			      .sc = { .mode = repair ? VOLUME_SCRUB_REPAIR : VOLUME_SCRUB_CHECK,
				      .report = report, .arg = report_arg, .data = data,
				      .data_arg = data_arg } };
	struct volume_seg *s;

	if (seg >= v->nsegs)
		return -EINVAL;
	s = v->segs[seg];
	if (!s->ops->scrub || !s->ops->unit)
		return -EOPNOTSUPP;
	return seg_pass_run(s, off, off + len, 0, NULL, NULL, &p);
}

void volume_scrub_consistent(struct volume_scrub *sc, uint64_t seg_off, const uint8_t *data,
			     size_t len)
{
	if (sc->data)
		sc->data(seg_off, data, len, sc->data_arg);
}

int volume_resync(struct volume *v, unsigned i, volume_progress_fn progress, void *arg)
{
	struct seg_pass p = { .step = scrub_step, .sc = { .mode = VOLUME_SCRUB_RESYNC } };
	struct volume_seg *s = v->segs[i];

	if (!s->ops->scrub || !s->ops->unit)
		return 0;       /* nothing to make agree */
	return seg_pass_run(s, 0, UINT64_MAX, 0, progress, arg, &p);
}

/* "stripe 12" or "offset 4096" (copies) in a log line. */
static const char *mismatch_where(const struct volume_mismatch *mm, char *buf, size_t size)
{
	if (mm->stripe != UINT64_MAX)
		snprintf(buf, size, "stripe %llu", (unsigned long long)mm->stripe);
	else
		snprintf(buf, size, "offset %llu", (unsigned long long)mm->seg_off);
	return buf;
}

void volume_scrub_found(const struct volume_seg *s, struct volume_scrub *sc,
			const struct volume_mismatch *mm)
{
	const struct bdev *dev = mm->located ? s->m[mm->member].dev : NULL;
	struct volume_mismatch found = *mm;
	char where[48];

	if (sc->mode == VOLUME_SCRUB_RESYNC)
		return;
	sc->count++;
	found.device = dev ? dev->name : NULL;
	mismatch_where(mm, where, sizeof(where));
	if (mm->located)
		util_log(mm->repaired ? LOG_WARNING : LOG_ERR,
			 "%s region %u %s: member %u (%s) bytes %llu+%llu disagree with the rest: %s",
			 s->label, s->index, where, mm->member, dev ? dev->name : "-",
			 (unsigned long long)mm->dev_off, (unsigned long long)mm->len,
			 mm->repaired ? "rewritten" : sc->mode == VOLUME_SCRUB_REPAIR ?
			 "rewrite failed" : "not repaired (check only)");
	else
		util_log(LOG_ERR, "%s region %u %s: copies or parity disagree at region bytes "
			 "%llu+%llu and no member can be blamed: left for the filesystem's checksums",
			 s->label, s->index, where, (unsigned long long)mm->seg_off,
			 (unsigned long long)mm->seg_len);
	if (sc->report)
		sc->report(&found, sc->arg);
}

int volume_scrub_range(struct volume *v, unsigned i, uint64_t off, uint64_t len)
{
	struct volume_seg *s = v->segs[i];
	struct volume_scrub sc = { .mode = VOLUME_SCRUB_RESYNC };
	uint64_t unit = s->ops->unit(s);
	uint64_t a = off / unit * unit, e = MIN(s->len, DIV_ROUND_UP(off + len, unit) * unit);
	int r;

	pthread_mutex_lock(&s->lock);
	r = s->ops->scrub(s, a, e - a, &sc);
	pthread_mutex_unlock(&s->lock);
	return r;
}
