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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

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
	uint64_t resynced = 0;
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
			 "write-intent bitmap", volume_label(s->v), m, dev->name,
			 (unsigned long long)resynced);
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
