/*
 * assemble.c - a pony volume from its members: each device placed at its
 * index by its superblock, the newest superblock taken as the volume's
 * state, and members that cannot serve refused by name: stale ones (older
 * events, or replaced: md's "kicking non-fresh member"), truncated ones
 * (smaller than the data they held). A volume with members absent runs
 * only when the caller allows it to run degraded (VOLUME_SET_DEGRADED, as
 * btrfs's -o degraded), never with fewer than every region needs. After
 * an unclean close the write-intent bitmap's ranges are resynced. What the
 * set knows of each member is told to callers here too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pony/util.h"
#include "internal.h"
#include "sb.h"
#include "set.h"

void volume_uuid_format(const uint8_t *uuid, char *buf)
{
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*buf++ = '-';
		buf += sprintf(buf, "%02x", uuid[i]);
	}
}

/*
 * Whether a superblock at events is as current as the newest one (s->sb)
 * for member m. A crash can stop a commit after any prefix of its
 * superblock writes (set.c), so members in sync may be one event apart:
 * those written carry the new count, the rest the one before. As md's
 * kernel and mdadm allow (an event margin of one), a member one behind is
 * in sync unless the newest superblock records it failed: a commit that
 * leaves a working member out always records it failed, so one behind and
 * not failed can only be a commit cut short. Two behind is stale.
 */
static bool set_events_current(const struct volume_set *s, unsigned m, uint64_t events)
{
	if (events >= s->sb.events)
		return true;
	return events + 1 == s->sb.events && s->sb.member_state[m] != VOLUME_MEMBER_FAILED;
}

/*
 * Places dev at its member index, or refuses it there as stale or
 * truncated. VOLUME_SET_CURRENT: an older event count is no refusal.
 */
static int set_place(struct volume_set *s, struct bdev *dev, const struct volume_sb *sb,
		     unsigned flags)
{
	unsigned m = sb->member_index;
	bool stale = memcmp(sb->member_uuid, s->sb.member_uuids[m], 16) ||
		     (!set_events_current(s, m, sb->events) && !(flags & VOLUME_SET_CURRENT));

	if (stale || dev->size < set_member_need(s)) {
		/* Replaced, left behind, or cut short: it cannot serve as member m. */
		s->stale[m] = stale;
		s->truncated[m] = !stale;
		if (!s->dev[m])
			s->events[m] = sb->events;
		s->refused[m] = dev;
		s->extra[s->nextra++] = dev;
		return 0;
	}
	if (s->dev[m])
		return -EEXIST;
	s->dev[m] = dev;
	s->events[m] = sb->events;
	return 0;
}

/* Whether a superblock read failed for the device's I/O, not for what it holds. */
static bool sb_read_failed(int r)
{
	return r < 0 && r != -ENODATA && r != -EBADMSG && r != -ENOMEM && r != -EINVAL;
}

/*
 * Reads every superblock and places each device at its index. A device
 * whose superblock copies cannot be read at all (an I/O error on both: a
 * dying disk, a server failing requests) is left out, as mdadm leaves out a
 * device it cannot read, and logged: its member is then absent, which the
 * volume runs without only when allowed to run degraded. A device that
 * reads but holds no superblock, or a corrupt one, is still an error: it
 * was named as a member and is not one.
 */
static int set_gather(struct volume_set *s, struct bdev **devs, unsigned ndevs,
		      struct volume_sb *sbs, unsigned flags, unsigned *ret_device)
{
	bool unreadable[VOLUME_SB_MAX_MEMBERS] = { false };
	int newest = -1, first_err = 0;

	for (unsigned i = 0; i < ndevs; i++) {
		int r = volume_sb_read(devs[i], &sbs[i]);

		if (sb_read_failed(r)) {
			util_log(LOG_WARNING, "device %s: its superblock cannot be read (%s): left out",
				 devs[i]->name, strerror(-r));
			unreadable[i] = true;
			if (!first_err) {
				first_err = r;
				*ret_device = i;
			}
			continue;
		}
		if (r < 0) {
			*ret_device = i;
			return r;
		}
		if (newest < 0 || sbs[i].events > sbs[newest].events)
			newest = (int)i;
	}
	if (newest < 0)
		return first_err;       /* not one device could be read */
	s->sb = sbs[newest];
	s->n = s->sb.nmembers;
	for (unsigned i = 0; i < ndevs; i++) {
		int r;

		if (unreadable[i]) {
			s->extra[s->nextra++] = devs[i];        /* freed with the set */
			continue;
		}
		*ret_device = i;
		if (memcmp(sbs[i].volume_uuid, s->sb.volume_uuid, 16) || sbs[i].nsegs != s->sb.nsegs)
			return -EXDEV;
		if (set_spare_gather(s, devs[i], &sbs[i], sbs[i].events + 1 >= s->sb.events) == 0)
			continue;
		r = set_place(s, devs[i], &sbs[i], flags);
		if (r < 0)
			return r;
	}
	/* Refused only where no current device took the place. */
	for (unsigned m = 0; m < s->n; m++)
		if (s->dev[m])
			s->stale[m] = s->truncated[m] = false;
	return 0;
}

/*
 * The state member m starts in, in region seg: failed without a current
 * device; else as the superblock says, but a member being rebuilt is done
 * in the regions before the rebuild checkpoint.
 */
static int set_initial_state(const struct volume_set *s, unsigned m, unsigned seg)
{
	int st = s->dev[m] ? s->sb.member_state[m] : VOLUME_MEMBER_FAILED;

	if (st == VOLUME_MEMBER_REBUILDING && s->sb.rebuild_off != VOLUME_SB_NO_REBUILD &&
	    seg < s->sb.rebuild_seg)
		st = VOLUME_MEMBER_OK;
	return st;
}

/*
 * Whether the volume can run on the members it has. Counts the present
 * members and the fewest every region needs into a, and returns -ENODEV
 * when a region has lost more members than its redundancy, -ENXIO when
 * members are absent and the caller did not allow a degraded start.
 */
static int set_assess(const struct volume_set *s, unsigned flags, struct volume_set_assembly *a)
{
	bool too_few = false;

	a->present = 0;
	for (unsigned m = 0; m < s->n; m++)
		a->present += s->dev[m] && s->sb.member_state[m] != VOLUME_MEMBER_FAILED;
	a->needed = 0;
	for (unsigned i = 0; i < s->sb.nsegs; i++) {
		const struct volume_sb_seg *g = &s->sb.segs[i];
		unsigned red = volume_type_redundancy(g->type, g->layout, s->n), out = 0;

		for (unsigned m = 0; m < s->n; m++)
			out += set_initial_state(s, m, i) != VOLUME_MEMBER_OK;
		too_few |= out > red;
		if (s->n - red > a->needed) {
			a->needed = s->n - red;
			a->needed_type = g->type;
		}
	}
	if (too_few)
		return -ENODEV;
	return a->present < s->n && !(flags & VOLUME_SET_DEGRADED) ? -ENXIO : 0;
}

static void set_load_state(struct volume_set *s, struct volume_sb *sbs, struct bdev **devs,
			   unsigned ndevs)
{
	for (unsigned m = 0; m < s->n; m++)
		for (unsigned i = 0; i < volume_segment_count(s->v); i++)
			__atomic_store_n(&set_seg(s, i)->m[m].state, set_initial_state(s, m, i),
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
}

/*
 * The bitmap in memory: the union of every working member's copy. Bits
 * outlive a clean close while a member is away (set.c), and a write
 * rewrites whole bitmap pages from memory, so they must be in memory
 * before the first write, or that write would clear them on disk.
 */
static int set_bitmap_load(struct volume_set *s)
{
	uint8_t *page = util_aligned_alloc(VOLUME_SB_BITMAP_BYTES);

	if (!page)
		return -ENOMEM;
	memset(s->bitmap, 0, VOLUME_SB_BITMAP_BYTES);
	for (unsigned m = 0; m < s->n; m++) {
		if (!s->dev[m] || set_member_state(s, m) == VOLUME_MEMBER_FAILED)
			continue;
		if (bdev_pread(s->dev[m], page, VOLUME_SB_BITMAP_BYTES, s->sb.bitmap_offset) < 0)
			continue;
		for (unsigned i = 0; i < VOLUME_SB_BITMAP_BYTES; i++)
			s->bitmap[i] |= page[i];
	}
	free(page);
	return 0;
}

/* After an unclean close: every region the bitmap marks gets its parity rebuilt. */
static int set_resync(struct volume_set *s)
{
	uint64_t region = 1ull << s->sb.bitmap_shift;
	int r = 0;

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


bool volume_set_unsynced(const struct volume_set *s, uint64_t off, uint64_t len)
{
	uint64_t first, last;

	/* A writable open resynced them (set_resync) before it returned. */
	if (!s || s->was_clean || !s->rdonly || !len)
		return false;
	first = off >> s->sb.bitmap_shift;
	last = (off + len - 1) >> s->sb.bitmap_shift;
	for (uint64_t b = first; b <= last && b / 8 < VOLUME_SB_BITMAP_BYTES; b++)
		if (s->bitmap[b / 8] & (1u << (b % 8)))
			return true;
	return false;
}

/* What the set knows of member m; works before the volume is built too. */
static void set_member_fill(const struct volume_set *s, unsigned m, struct volume_set_member *ret)
{
	struct volume_set *ms = (struct volume_set *)s;

	memset(ret, 0, sizeof(*ret));
	ret->device = s->dev[m] ? s->dev[m]->name : s->refused[m] ? s->refused[m]->name : NULL;
	ret->state = (enum volume_member_state)(s->v ? set_member_state(ms, m) :
						set_initial_state(s, m, 0));
	ret->events = s->events[m];
	ret->stale = s->stale[m];
	ret->truncated = s->truncated[m];
	if (ret->truncated) {
		ret->size = s->refused[m]->size;
		ret->need = set_member_need(s);
	}
	memcpy(ret->uuid, s->sb.member_uuids[m], 16);
	for (unsigned i = 0; s->v && i < volume_segment_count(s->v); i++)
		ret->badblocks += set_seg(ms, i)->m[m].nbad;
}

static void set_describe(const struct volume_set *s, struct volume_set_assembly *a)
{
	a->known = true;
	memcpy(a->uuid, s->sb.volume_uuid, 16);
	memcpy(a->name, s->sb.name, sizeof(a->name));
	a->events = s->sb.events;
	a->nmembers = s->n;
	for (unsigned m = 0; m < s->n; m++)
		set_member_fill(s, m, &a->members[m]);
}

/* A started volume's events: each member left out, by name, and that it runs degraded. */
static void set_log_assembly(const struct volume_set *s, const struct volume_set_assembly *a)
{
	const char *label = volume_label(s->v);
	char uuid[VOLUME_UUID_STRLEN];

	for (unsigned m = 0; m < s->n; m++) {
		const struct volume_set_member *sm = &a->members[m];

		volume_uuid_format(sm->uuid, uuid);
		if (sm->stale)
			util_log(LOG_WARNING, "%s: member %u (%s) is stale: events %llu, the volume is "
				 "at %llu; left out", label, m, sm->device,
				 (unsigned long long)sm->events, (unsigned long long)a->events);
		else if (sm->truncated)
			util_log(LOG_WARNING, "%s: member %u (%s) is truncated: %llu bytes, it needs %llu; "
				 "left out", label, m, sm->device, (unsigned long long)sm->size,
				 (unsigned long long)sm->need);
		else if (!sm->device)
			util_log(LOG_WARNING, "%s: member %u (UUID %s) is missing", label, m, uuid);
		else if (sm->state == VOLUME_MEMBER_FAILED)
			util_log(LOG_WARNING, "%s: member %u (%s) is failed", label, m, sm->device);
	}
	if (a->present < a->nmembers)
		util_log(LOG_WARNING, "%s: running degraded%s: %u of %u members", label,
			 s->rdonly ? " (read-only)" : "", a->present, a->nmembers);
}

/* On failure: the caller keeps its devices, so take them back out of the set. */
static void set_give_back(struct volume_set *s)
{
	if (!s)
		return;
	set_spare_stop(s);      /* a spare worker a failing commit may have kicked */
	if (s->v)
		volume_detach_members(s->v);
	s->nextra = 0;
	memset(s->spare, 0, sizeof(s->spare));
	set_free(s);
}

/* Builds, loads the members' state and bad blocks, resyncs and marks the volume open. */
static int set_start(struct volume_set *s, struct volume_sb *sbs, struct bdev **devs,
		     unsigned ndevs, unsigned flags)
{
	int r = set_build(s);

	if (r < 0)
		return r;
	set_load_state(s, sbs, devs, ndevs);
	s->rdonly = flags & VOLUME_SET_RDONLY;
	s->was_clean = s->sb.flags & VOLUME_SB_CLEAN;
	/* Read-only too: after an unclean close it says which regions differ
	 * between copies only because writes were in flight (volume_set_unsynced). */
	r = set_bitmap_load(s);
	if (r >= 0 && !s->rdonly && !s->was_clean)
		r = set_resync(s);
	if (r >= 0 && !s->rdonly) {
		s->sb.flags &= ~VOLUME_SB_CLEAN;
		r = volume_set_commit(s);
	}
	return r;
}

int volume_set_assemble(struct bdev **devs, unsigned ndevs, unsigned flags,
			struct volume_set **ret, struct volume_set_assembly *ret_asm)
{
	struct volume_sb *sbs = calloc(ndevs ? ndevs : 1, sizeof(*sbs));
	struct volume_set *s = set_new();
	struct volume_set_assembly *a = ret_asm ? ret_asm : calloc(1, sizeof(*a));
	int r = sbs && s && a ? 0 : -ENOMEM;

	if (a)
		memset(a, 0, sizeof(*a));
	if (r >= 0 && (!ndevs || ndevs > VOLUME_SB_MAX_MEMBERS))
		r = -EINVAL;
	/* A writer must never take an old member for a current one. */
	if (r >= 0 && (flags & VOLUME_SET_CURRENT) && !(flags & VOLUME_SET_RDONLY))
		r = -EINVAL;
	if (r >= 0)
		r = set_gather(s, devs, ndevs, sbs, flags, &a->device);
	if (r >= 0) {
		r = set_assess(s, flags, a);
		set_describe(s, a);
	}
	if (r >= 0)
		r = set_start(s, sbs, devs, ndevs, flags);
	free(sbs);
	if (r >= 0) {
		set_describe(s, a);
		set_log_assembly(s, a);
	}
	if (a != ret_asm)
		free(a);
	if (r < 0) {
		set_give_back(s);
		return r;
	}
	set_spare_kick(s);      /* members missing at assembly: spares take their places */
	*ret = s;
	return 0;
}

int volume_set_open(struct bdev **devs, unsigned ndevs, unsigned flags,
		    struct volume_set **ret, unsigned *ret_member)
{
	struct volume_set_assembly *a = calloc(1, sizeof(*a));
	int r = a ? volume_set_assemble(devs, ndevs, flags, ret, a) : -ENOMEM;

	if (r < 0 && a && ret_member)
		*ret_member = a->device;
	free(a);
	return r;
}

void volume_set_info(const struct volume_set *s, struct volume_set_info *ret)
{
	struct volume_set *ms = (struct volume_set *)s;

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
	for (unsigned m = 0; m < s->n; m++) {
		int st = set_member_state(ms, m);

		ret->failed += st == VOLUME_MEMBER_FAILED;
		ret->rebuilding += st == VOLUME_MEMBER_REBUILDING;
	}
	if (ret->rebuilding && s->sb.rebuild_off != VOLUME_SB_NO_REBUILD &&
	    s->sb.rebuild_seg < s->sb.nsegs)
		ret->rebuild_done = s->sb.segs[s->sb.rebuild_seg].start + s->sb.rebuild_off;
}

int volume_set_member(const struct volume_set *s, unsigned m, struct volume_set_member *ret)
{
	if (m >= s->n)
		return -EINVAL;
	set_member_fill(s, m, ret);
	return 0;
}
