/*
 * readd.c - a member that left and came back (md's --re-add): a server that
 * went away, a disk pulled and put back. Rebuilding it whole would be
 * right but slow; what it missed is exactly what was written while it was
 * away, and the write-intent bitmap records every write before it starts.
 * The bitmap is zeroed only at a clean close with every member working
 * (set.c), and sb.bitmap_events notes the commit after that zeroing. So a
 * member that carries its own member UUID (it was not replaced meanwhile)
 * and whose superblock is at least that recent missed nothing the bitmap
 * does not mark: only those ranges are rebuilt onto it. Anything else
 * gets a full rebuild (pony vol replace).
 *
 * With --auto-readd a thread does it by itself while the volume is open: a
 * failed member whose NBD server answers again (with the same member on
 * its export) is re-added online, writes going on meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "pony/bdev.h"
#include "pony/util.h"

#include "set.h"

/* The bitmap as it stands: loaded from the members at open, marked since. */
static void bitmap_copy(struct volume_set *s, uint8_t *out)
{
	pthread_mutex_lock(&s->bm_lock);
	memcpy(out, s->bitmap, VOLUME_SB_BITMAP_BYTES);
	pthread_mutex_unlock(&s->bm_lock);
}

/* Whether dev is member m as it left: this volume, its member UUID, a recent enough superblock. */
static int readd_check(struct volume_set *s, unsigned m, struct bdev *dev)
{
	struct volume_sb msb;
	int r;

	if (m >= s->n || !dev)
		return -EINVAL;
	if (set_member_state(s, m) == VOLUME_MEMBER_OK && s->dev[m])
		return -EBUSY;
	r = volume_sb_read(dev, &msb);
	if (r < 0)
		return r == -ENODATA ? -EINVAL : r;
	if (memcmp(msb.volume_uuid, s->sb.volume_uuid, 16) || msb.member_index != m)
		return -EINVAL;
	if (memcmp(msb.member_uuid, s->sb.member_uuids[m], 16))
		return -EXDEV;                  /* replaced since: not this member any more */
	if (!s->sb.bitmap_events || msb.events < s->sb.bitmap_events)
		return -ESTALE;                 /* gone since before the bitmap was last zeroed */
	if (dev->size < set_member_need(s))
		return -ENOSPC;
	return 0;
}

/* Puts dev in as member m, rebuilding: taken out of the refused devices if it was one. */
static void readd_place(struct volume_set *s, unsigned m, struct bdev *dev)
{
	for (unsigned i = 0; i < s->nextra; i++)
		if (s->extra[i] == dev)
			s->extra[i--] = s->extra[--s->nextra];
	set_member_put(s, m, dev);
}

/* The bitmap's marked ranges within segment g, merged: their count, *ret malloc'd. */
static size_t marked_ranges(const struct volume_set *s, const uint8_t *bm,
			    const struct volume_seg *g, struct volume_range **ret)
{
	uint64_t region = 1ull << s->sb.bitmap_shift;
	struct volume_range *r = NULL;
	size_t n = 0, cap = 0;

	for (uint64_t b = 0; b < (uint64_t)VOLUME_SB_BITMAP_BYTES * 8; b++) {
		uint64_t a = MAX(b * region, g->start), e = MIN((b + 1) * region, g->start + g->len);
		void *grown;

		if (!(bm[b / 8] & (1u << (b % 8))) || a >= e)
			continue;
		if (n && r[n - 1].off + r[n - 1].len == a - g->start) {
			r[n - 1].len += e - a;
			continue;
		}
		grown = util_array_grow(r, &cap, n, sizeof(*r), 8);
		if (!grown)
			break;
		r = grown;
		r[n++] = (struct volume_range){ a - g->start, e - a };
	}
	*ret = r;
	return n;
}

static int readd_locked(struct volume_set *s, unsigned m, struct bdev *dev, uint64_t rate,
			uint64_t *ret_resynced)
{
	uint8_t *bm = malloc(VOLUME_SB_BITMAP_BYTES);
	uint64_t resynced = 0, t0 = util_now_ns();
	int r = bm ? readd_check(s, m, dev) : -ENOMEM;

	if (r < 0 || s->rdonly) {
		free(bm);
		return r < 0 ? r : -EROFS;
	}
	bitmap_copy(s, bm);
	readd_place(s, m, dev);
	/* Saved as a rebuild from the start: a crash in the resync ends in a
	 * full rebuild (`pony vol rebuild`), never a member called working. */
	s->sb.rebuild_seg = 0;
	s->sb.rebuild_off = 0;
	r = set_commit_locked(s);
	for (unsigned i = 0; r >= 0 && i < volume_segment_count(s->v); i++) {
		struct volume_range *ranges = NULL;
		size_t n = marked_ranges(s, bm, set_seg(s, i), &ranges);

		r = volume_rebuild_ranges(s->v, i, ranges, n, rate);
		for (size_t k = 0; k < n; k++)
			resynced += ranges[k].len;
		free(ranges);
		if (r == -EOPNOTSUPP)
			r = 0;          /* no redundancy there: nothing to resync */
	}
	free(bm);
	if (r >= 0) {
		s->sb.rebuild_off = VOLUME_SB_NO_REBUILD;
		r = set_commit_locked(s);
	}
	if (r >= 0)
		util_log(LOG_NOTICE, "%s: member %u (%s) re-added: %llu bytes resynced from the "
			 "write-intent bitmap in %.3f s", volume_label(s->v), m, dev->name,
			 (unsigned long long)resynced, (double)(util_now_ns() - t0) / 1e9);
	if (ret_resynced)
		*ret_resynced = resynced;
	return r;
}

int volume_set_readd(struct volume_set *s, unsigned m, struct bdev *dev, uint64_t rate,
		     uint64_t *ret_resynced)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = readd_locked(s, m, dev, rate, ret_resynced);
	pthread_mutex_unlock(&s->lock);
	return r;
}

struct bdev *volume_set_refused_device(const struct volume_set *s, unsigned m)
{
	return m < s->n && s->stale[m] ? s->refused[m] : NULL;
}

/* -- automatic re-add (--auto-readd) ------------------------------------------- */

#define AUTO_FIRST_MS 500u              /* the first retry after a member failed */
#define AUTO_MAX_MS 8000u               /* backoff stops doubling here */

struct volume_autoreadd {
	struct volume_set *s;
	char **names;                   /* NBD URIs the set was opened from */
	unsigned n, timeout_ms;
	uint64_t rate;
	int *last_err;                  /* per name: the last refusal logged (no repeats) */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
};

/* Whether a working (or rebuilding) member is the device this URI names. */
static bool name_in_use(struct volume_set *s, const char *uri)
{
	char name[sizeof(((struct bdev *)0)->name)];

	bdev_nbd_name(uri, name, sizeof(name));
	for (unsigned m = 0; m < s->n; m++) {
		const char *dev = volume_member_device(s->v, 0, m);

		if (set_member_state(s, m) != VOLUME_MEMBER_FAILED && dev && !strcmp(dev, name))
			return true;
	}
	return false;
}

/* One try of name i: 1 re-added, 0 not (yet), logging a new refusal once. */
static int auto_try(struct volume_autoreadd *a, unsigned i)
{
	struct bdev_open_params p = { .flags = O_RDWR, .timeout_ms = a->timeout_ms };
	struct volume_set *s = a->s;
	struct volume_sb sb;
	struct bdev *dev;
	uint64_t resynced = 0;
	int r = bdev_open(a->names[i], &p, &dev);

	if (r < 0)
		return 0;               /* not back yet: said when it failed */
	r = volume_sb_read(dev, &sb);
	if (r >= 0 && (memcmp(sb.volume_uuid, s->sb.volume_uuid, 16) || sb.member_index >= s->n))
		r = -EINVAL;
	if (r >= 0 && set_member_state(s, sb.member_index) != VOLUME_MEMBER_FAILED)
		r = -EBUSY;
	if (r >= 0)
		r = volume_set_readd(s, sb.member_index, dev, a->rate, &resynced);
	if (r >= 0) {
		a->last_err[i] = 0;
		return 1;               /* dev is the set's now; readd logged it */
	}
	if (r != a->last_err[i] && r != -EBUSY)
		util_log(LOG_WARNING, "%s: %s is back but not re-added: %s", volume_label(s->v),
			 dev->name, r == -EXDEV ? "its member was replaced meanwhile" :
			 r == -ESTALE ? "it left before the bitmap was last cleared (pony vol "
					"replace rebuilds it in full)" :
			 r == -EINVAL ? "it holds no member of this volume" : strerror(-r));
	a->last_err[i] = r;
	bdev_free(dev);
	return 0;
}

static bool any_failed(struct volume_set *s)
{
	for (unsigned m = 0; m < s->n; m++)
		if (set_member_state(s, m) == VOLUME_MEMBER_FAILED)
			return true;
	return false;
}

/* Sleeps ms unless stopped: false when stopping. */
static bool auto_sleep(struct volume_autoreadd *a, unsigned ms)
{
	struct timespec ts;
	bool go;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&a->lock);
	while (!a->stopping && pthread_cond_timedwait(&a->cond, &a->lock, &ts) == 0)
		;
	go = !a->stopping;
	pthread_mutex_unlock(&a->lock);
	return go;
}

/*
 * Every member that failed is tried again, with backoff: the first retry
 * half a second after the failure was seen, then twice as long each time
 * up to 8 s; a member back and re-added starts the count over.
 */
static void *auto_main(void *arg)
{
	struct volume_autoreadd *a = arg;
	unsigned delay = AUTO_FIRST_MS;

	while (auto_sleep(a, any_failed(a->s) ? delay : AUTO_FIRST_MS)) {
		bool back = false;

		if (!any_failed(a->s)) {
			delay = AUTO_FIRST_MS;
			continue;
		}
		for (unsigned i = 0; i < a->n; i++)
			if (!name_in_use(a->s, a->names[i]))
				back |= auto_try(a, i) > 0;
		delay = back ? AUTO_FIRST_MS : MIN(delay * 2, AUTO_MAX_MS);
	}
	return NULL;
}

/* Frees a (its thread ended or never started). */
static void auto_free(struct volume_autoreadd *a)
{
	for (unsigned i = 0; a->names && i < a->n; i++)
		free(a->names[i]);
	free(a->names);
	free(a->last_err);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void volume_autoreadd_stop(struct volume_autoreadd *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	auto_free(a);
}

int volume_autoreadd_start(struct volume_set *s, const char *const *names, unsigned n,
			   unsigned timeout_ms, uint64_t rate, struct volume_autoreadd **ret)
{
	struct volume_autoreadd *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	int r = 0;

	if (!a)
		return -ENOMEM;
	if (s->rdonly) {
		free(a);
		return -EROFS;
	}
	a->s = s;
	a->timeout_ms = timeout_ms;
	a->rate = rate;
	a->names = calloc(n ? n : 1, sizeof(*a->names));
	a->last_err = calloc(n ? n : 1, sizeof(*a->last_err));
	for (unsigned i = 0; a->names && a->last_err && i < n; i++) {
		if (!bdev_name_is_nbd(names[i]))
			continue;       /* a local device does not come back by itself */
		a->names[a->n] = strdup(names[i]);
		if (!a->names[a->n++])
			r = -ENOMEM;
	}
	if (!a->names || !a->last_err)
		r = -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (r >= 0)
		r = -pthread_create(&a->thread, NULL, auto_main, a);
	if (r < 0) {
		auto_free(a);
		return r;
	}
	*ret = a;
	return 0;
}
