/*
 * assemble.c - a pony volume from its members: each device placed at its
 * index by its superblock, the newest superblock taken as the volume's
 * state, stale members (older events, or replaced) refused, and what the
 * set knows of each member told to callers. After an unclean close the
 * write-intent bitmap's ranges are resynced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"
#include "sb.h"
#include "set.h"

/* Reads every superblock and places each device at its index. */
static int set_gather(struct volume_set *s, struct bdev **devs, unsigned ndevs,
		      struct volume_sb *sbs, unsigned *ret_member)
{
	int newest = -1;

	for (unsigned i = 0; i < ndevs; i++) {
		int r = volume_sb_read(devs[i], &sbs[i]);

		if (r < 0) {
			*ret_member = i;
			return r == -ENODATA ? -ENODATA : r;
		}
		if (newest < 0 || sbs[i].events > sbs[newest].events)
			newest = (int)i;
	}
	s->sb = sbs[newest];
	s->n = s->sb.nmembers;
	for (unsigned i = 0; i < ndevs; i++) {
		unsigned m = sbs[i].member_index;

		*ret_member = i;
		if (memcmp(sbs[i].volume_uuid, s->sb.volume_uuid, 16) || sbs[i].nsegs != s->sb.nsegs)
			return -EXDEV;
		if (set_spare_gather(s, devs[i], &sbs[i]) == 0)
			continue;
		if (memcmp(sbs[i].member_uuid, s->sb.member_uuids[m], 16) || sbs[i].events < s->sb.events) {
			/* Replaced or left behind: older than the volume. */
			s->stale[m] = true;
			if (!s->dev[m])
				s->events[m] = sbs[i].events;
			s->refused[m] = devs[i];
			s->extra[s->nextra++] = devs[i];
			continue;
		}
		if (s->dev[m])
			return -EEXIST;
		s->dev[m] = devs[i];
		s->events[m] = sbs[i].events;
	}
	/* Stale only where no current device took the place. */
	for (unsigned m = 0; m < s->n; m++) {
		if (!s->dev[m] || !s->refused[m])
			continue;
		s->stale[m] = false;
	}
	return 0;
}

static int set_load_state(struct volume_set *s, struct volume_sb *sbs, struct bdev **devs,
			  unsigned ndevs)
{
	for (unsigned m = 0; m < s->n; m++) {
		int st = s->dev[m] ? s->sb.member_state[m] : VOLUME_MEMBER_FAILED;

		set_member_force(s, m, st);
	}
	/* A rebuild checkpoint: segments before it are done. */
	for (unsigned m = 0; m < s->n; m++)
		if (s->sb.member_state[m] == VOLUME_MEMBER_REBUILDING &&
		    s->sb.rebuild_off != VOLUME_SB_NO_REBUILD)
			for (unsigned i = 0; i < s->sb.rebuild_seg; i++)
				__atomic_store_n(&set_seg(s, i)->m[m].state, VOLUME_MEMBER_OK,
						 __ATOMIC_RELEASE);
	for (unsigned i = 0; i < ndevs; i++) {
		unsigned m = sbs[i].member_index;

		if (m >= s->n || s->dev[m] != devs[i])
			continue;
		for (unsigned j = 0; j < sbs[i].nbad; j++)
			for (unsigned k = 0; k < volume_segment_count(s->v); k++) {
				struct volume_seg *g = set_seg(s, k);
				uint64_t o = g->m[m].offset, end = o + g->geom.dev_size;

				if (sbs[i].bad[j].off >= o && sbs[i].bad[j].off < end)
					volume_member_add_badblock(s->v, k, m, sbs[i].bad[j].off - o,
								   sbs[i].bad[j].len);
			}
	}
	return 0;
}

/* After an unclean close: every region the bitmap marks gets its parity rebuilt. */
static int set_resync(struct volume_set *s)
{
	uint8_t *page = util_aligned_alloc(VOLUME_SB_BITMAP_BYTES);
	uint64_t region = 1ull << s->sb.bitmap_shift;
	int r = page ? 0 : -ENOMEM;

	memset(s->bitmap, 0, VOLUME_SB_BITMAP_BYTES);
	for (unsigned m = 0; r >= 0 && m < s->n; m++) {
		if (!s->dev[m] || set_member_state(s, m) == VOLUME_MEMBER_FAILED)
			continue;
		if (bdev_pread(s->dev[m], page, VOLUME_SB_BITMAP_BYTES, s->sb.bitmap_offset) < 0)
			continue;
		for (unsigned i = 0; i < VOLUME_SB_BITMAP_BYTES; i++)
			s->bitmap[i] |= page[i];
	}
	free(page);
	for (uint64_t b = 0; r >= 0 && b < (uint64_t)VOLUME_SB_BITMAP_BYTES * 8; b++) {
		uint64_t off = b * region;

		if (!(s->bitmap[b / 8] & (1u << (b % 8))))
			continue;
		for (unsigned i = 0; r >= 0 && i < volume_segment_count(s->v); i++) {
			struct volume_seg *g = set_seg(s, i);
			uint64_t a = MAX(off, g->start), e = MIN(off + region, g->start + g->len);

			if (a >= e || !g->ops->scrub)
				continue;
			r = volume_scrub_range(s->v, i, a - g->start, e - a);
			s->resynced += e - a;
		}
	}
	return r;
}

int volume_set_open(struct bdev **devs, unsigned ndevs, unsigned flags,
		    struct volume_set **ret, unsigned *ret_member)
{
	struct volume_sb *sbs = calloc(ndevs ? ndevs : 1, sizeof(*sbs));
	struct volume_set *s = set_new();
	unsigned dummy;
	int r = sbs && s ? 0 : -ENOMEM;

	if (!ret_member)
		ret_member = &dummy;
	if (r >= 0 && (!ndevs || ndevs > VOLUME_SB_MAX_MEMBERS))
		r = -EINVAL;
	if (r >= 0)
		r = set_gather(s, devs, ndevs, sbs, ret_member);
	if (r >= 0) {
		r = set_build(s);
		if (r == -ENODEV)
			for (unsigned m = 0; m < s->n; m++)
				if (!s->dev[m]) {
					*ret_member = m;
					break;
				}
	}
	if (r >= 0)
		r = set_load_state(s, sbs, devs, ndevs);
	if (s)
		s->rdonly = flags & VOLUME_SET_RDONLY;
	if (r >= 0) {
		s->was_clean = s->sb.flags & VOLUME_SB_CLEAN;
		if (!s->rdonly && !s->was_clean)
			r = set_resync(s);
	}
	if (r >= 0 && !s->rdonly) {
		s->sb.flags &= ~VOLUME_SB_CLEAN;
		r = volume_set_commit(s);
	}
	free(sbs);
	if (r < 0) {
		/* The caller keeps its devices: take them back out of the set
		 * (once a spare worker a failing commit may have kicked is gone). */
		if (s)
			set_spare_stop(s);
		if (s && s->v)
			volume_detach_members(s->v);
		if (s) {
			s->nextra = 0;
			memset(s->spare, 0, sizeof(s->spare));
		}
		set_free(s);
		return r;
	}
	set_spare_kick(s);      /* members missing at assembly: spares take their places */
	*ret = s;
	return 0;
}

void volume_set_info(const struct volume_set *s, struct volume_set_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->name, s->sb.name, sizeof(ret->name));
	memcpy(ret->uuid, s->sb.volume_uuid, 16);
	ret->events = s->sb.events;
	ret->nmembers = s->n;
	ret->was_clean = s->was_clean;
	ret->resynced = s->resynced;
	ret->rebuild_seg = s->sb.rebuild_seg;
	ret->rebuild_off = s->sb.rebuild_off;
	ret->scrub_seg = s->sb.scrub_seg;
	ret->scrub_off = s->sb.scrub_off;
	ret->nspares = s->sb.nspares;
}

int volume_set_member(const struct volume_set *s, unsigned m, struct volume_set_member *ret)
{
	struct volume_set *ms = (struct volume_set *)s;

	if (m >= s->n)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->device = s->stale[m] && s->refused[m] ? s->refused[m]->name :
		      s->dev[m] ? s->dev[m]->name : NULL;
	ret->state = (enum volume_member_state)set_member_state(ms, m);
	ret->events = s->events[m];
	ret->stale = s->stale[m];
	for (unsigned i = 0; i < volume_segment_count(s->v); i++)
		ret->badblocks += set_seg(ms, i)->m[m].nbad;
	return 0;
}

