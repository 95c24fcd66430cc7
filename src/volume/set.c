/*
 * set.c - pony volumes on disk: creating members with pony's superblock,
 * saving member states, bad blocks and the rebuild and scrub checkpoints
 * as they change (a checkpoint that cannot be saved stops the work), the
 * write-intent bitmap, and closing clean. Assembling the members is
 * assemble.c; hot spares spare.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <syslog.h>

#include "pony/util.h"
#include "internal.h"
#include "sb.h"
#include "set.h"

struct volume_seg *set_seg(struct volume_set *s, unsigned i)
{
	return (struct volume_seg *)volume_seg_get(s->v, i);
}

/* Worst state of member m over every segment. */
int set_member_state(struct volume_set *s, unsigned m)
{
	int st = VOLUME_MEMBER_OK;

	for (unsigned i = 0; i < volume_segment_count(s->v); i++) {
		int x = volume_mstate(set_seg(s, i), m);

		if (x == VOLUME_MEMBER_FAILED || (x == VOLUME_MEMBER_REBUILDING && st == VOLUME_MEMBER_OK))
			st = x;
	}
	return st;
}

void set_member_force(struct volume_set *s, unsigned m, int state)
{
	for (unsigned i = 0; i < volume_segment_count(s->v); i++)
		__atomic_store_n(&set_seg(s, i)->m[m].state, state, __ATOMIC_RELEASE);
}

/*
 * A member whose superblock or bitmap write failed (at byte off of the
 * device; UINT64_MAX: not one place): failed through volume_mfail(), so
 * the fail hook kicks an idle spare as it does for a failed data write
 * (after this no data write reaches the member to fail). One log line,
 * not one per region.
 */
static void set_member_io_failed(struct volume_set *s, unsigned m, const char *what,
				 uint64_t off, int err)
{
	char at[32] = "";

	if (off != UINT64_MAX)
		snprintf(at, sizeof(at), " at byte %llu", (unsigned long long)off);
	if (set_member_state(s, m) != VOLUME_MEMBER_FAILED)
		util_log(LOG_ERR, "%s: member %u (%s) failed: %s%s: %s", volume_label(s->v), m,
			 s->dev[m]->name, what, at, strerror(-err));
	for (unsigned i = 0; i < volume_segment_count(s->v); i++)
		volume_mfail(set_seg(s, i), m, NULL, 0, err);
}

/* The bad list of member m as device ranges, into sb. */
static void set_collect_bad(struct volume_set *s, unsigned m, struct volume_sb *sb)
{
	sb->nbad = 0;
	for (unsigned i = 0; i < volume_segment_count(s->v); i++) {
		struct volume_seg *seg = set_seg(s, i);
		struct volume_member *mb = &seg->m[m];

		for (unsigned j = 0; j < mb->nbad && sb->nbad < VOLUME_SB_MAX_BAD; j++)
			sb->bad[sb->nbad++] = (struct volume_sb_bad){ mb->offset + mb->bad[j].off,
								      mb->bad[j].len };
	}
}

/*
 * One commit: events + 1 and the state, written to every working member.
 *
 * The crash rule (md's). A crash, SIGKILL or power, can stop a commit after
 * any prefix of its superblock writes, in any order the writes went: the
 * members written carry events E + 1, the rest still E. Assembly takes
 * the newest superblock as the volume's state and a member one event
 * behind as in sync (assemble.c, set_events_current), so any prefix
 * assembles with every member whose data is in sync. That holds because:
 *
 * 1. Data first. Every working member is flushed before the first
 *    superblock is written, so what the commit vouches for (a rebuild
 *    checkpoint, a resync, a member marked working) is on every member
 *    before any superblock says so.
 * 2. A member left out is recorded failed in the same commit: one behind
 *    and not failed in the newest superblock can only be a commit cut
 *    short. A member whose superblock write fails was recorded working by
 *    the members written before it, so the commit is made again at once,
 *    recording it failed (it is then two behind: stale).
 * 3. Commits never overlap (s->lock), and each one completes before the
 *    work it records goes on: members never drift more than one apart.
 *
 * Members are written in index order, each copy pair then flushed; idle
 * spares first (a spare holds no data: one written ahead of the members
 * only carries the newest state, and a spare just added is listed by no
 * member before its own superblock is there).
 */
static int set_commit_once(struct volume_set *s)
{
	uint64_t covers;
	int ret = 0, written = 0;

	for (unsigned m = 0; m < s->n; m++)
		if (s->dev[m] && set_member_state(s, m) != VOLUME_MEMBER_FAILED) {
			int r = bdev_flush(s->dev[m]);

			if (r < 0)
				set_member_io_failed(s, m, "flush", UINT64_MAX, r);
		}
	/* Cleared before the states are read: a failure from here on is saved next time. */
	__atomic_store_n(&s->unsaved_failure, false, __ATOMIC_RELEASE);
	covers = __atomic_load_n(&s->failures_seen, __ATOMIC_ACQUIRE);
	s->sb.events++;
	for (unsigned m = 0; m < s->n; m++)
		s->sb.member_state[m] = (uint8_t)set_member_state(s, m);
	set_spare_commit(s);
	for (unsigned m = 0; m < s->n; m++) {
		struct volume_sb msb = s->sb;
		int r;

		if (!s->dev[m] || s->sb.member_state[m] == VOLUME_MEMBER_FAILED)
			continue;
		msb.member_index = m;
		memcpy(msb.member_uuid, s->sb.member_uuids[m], 16);
		set_collect_bad(s, m, &msb);
		r = volume_sb_write(s->dev[m], &msb);
		if (r >= 0)
			r = bdev_flush(s->dev[m]);
		if (r < 0) {
			set_member_io_failed(s, m, "superblock write", UINT64_MAX, r);
			ret = ret ? ret : r;
		} else {
			s->events[m] = s->sb.events;
			written++;
		}
	}
	if (!written)
		return ret ? ret : -EIO;
	if (covers > __atomic_load_n(&s->failures_saved, __ATOMIC_RELAXED))
		__atomic_store_n(&s->failures_saved, covers, __ATOMIC_RELEASE);
	return 0;
}

int set_commit_locked(struct volume_set *s)
{
	int r;

	if (s->rdonly)
		return -EROFS;
	/* Again while a member failed on the way (rule 2); each round fails one more at least. */
	for (unsigned round = 0;; round++) {
		r = set_commit_once(s);
		if (r < 0 || round >= s->n ||
		    !__atomic_load_n(&s->unsaved_failure, __ATOMIC_ACQUIRE))
			return r;
	}
}

int volume_set_commit(struct volume_set *s)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = set_commit_locked(s);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Write intent: bits over the volume's address space, on disk before the data. */
static int set_bitmap_write_pages(struct volume_set *s, size_t first, size_t last)
{
	for (unsigned m = 0; m < s->n; m++) {
		int r;

		if (!s->dev[m] || set_member_state(s, m) == VOLUME_MEMBER_FAILED)
			continue;
		r = bdev_pwrite(s->dev[m], s->bitmap + first * BM_PAGE, (last - first + 1) * BM_PAGE,
				s->sb.bitmap_offset + first * BM_PAGE);
		if (r >= 0)
			r = bdev_flush(s->dev[m]);
		if (r < 0)
			set_member_io_failed(s, m, "write-intent bitmap write",
					     s->sb.bitmap_offset + first * BM_PAGE, r);
	}
	return 0;
}

static int set_intent(uint64_t off, uint64_t len, void *arg)
{
	struct volume_set *s = arg;
	uint64_t first = off >> s->sb.bitmap_shift, last = (off + len - 1) >> s->sb.bitmap_shift;
	size_t lo = SIZE_MAX, hi = 0;

	/* Read-only: no member may change unrecorded (an absent one would go stale unsaid). */
	if (s->rdonly)
		return -EROFS;

	pthread_mutex_lock(&s->bm_lock);
	for (uint64_t b = first; b <= last && b / 8 < s->sb.bitmap_bytes; b++) {
		if (s->bitmap[b / 8] & (1u << (b % 8)))
			continue;
		s->bitmap[b / 8] |= (uint8_t)(1u << (b % 8));
		lo = MIN(lo, (size_t)(b / 8 / BM_PAGE));
		hi = MAX(hi, (size_t)(b / 8 / BM_PAGE));
	}
	if (lo != SIZE_MAX)
		set_bitmap_write_pages(s, lo, hi);
	pthread_mutex_unlock(&s->bm_lock);
	return 0;
}

/*
 * Bytes per bit: at least 64 MiB (mdadm's default bitmap chunk), so that a
 * streaming write sets a new bit, and waits for it to reach every member,
 * once per 64 MiB rather than once per write.
 */
static unsigned set_bitmap_shift(uint64_t volume_size)
{
	unsigned shift = 26;

	while ((volume_size >> shift) > (uint64_t)VOLUME_SB_BITMAP_BYTES * 8)
		shift++;
	return shift;
}

/*
 * A member turned faulty during I/O, maybe with a segment locked: noted for
 * set_on_written, and an idle spare takes its place.
 */
static void set_on_fail(unsigned seg, unsigned m, void *arg)
{
	struct volume_set *s = arg;

	(void)seg;
	(void)m;
	__atomic_add_fetch(&s->failures_seen, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&s->unsaved_failure, true, __ATOMIC_RELEASE);
	set_spare_kick(s);
}

/*
 * A write or flush is done on the members (no lock of the volume held). A
 * member that failed on the way is saved in the others' superblocks before
 * the write returns, as md does: after a crash from here, the next assembly
 * must see the member stale, not take its old blocks for current ones.
 *
 * The write waits for a commit that covers the failures seen so far, made
 * by itself or by whoever holds s->lock. It never just waits for the lock:
 * a spare's rebuild holds it from the takeover (which commits the failure)
 * to its end, and a write queued on the lock meanwhile, with the
 * filesystem's commit behind it, would stall the mount for the whole
 * rebuild. The holder's takeover, checkpoints and end all commit.
 */
static int set_on_written(void *arg)
{
	struct volume_set *s = arg;
	uint64_t want = __atomic_load_n(&s->failures_seen, __ATOMIC_ACQUIRE);
	int r = 0;

	if (s->rdonly)
		return 0;
	while (__atomic_load_n(&s->failures_saved, __ATOMIC_ACQUIRE) < want) {
		if (pthread_mutex_trylock(&s->lock) == 0) {
			if (__atomic_load_n(&s->failures_saved, __ATOMIC_ACQUIRE) < want)
				r = set_commit_locked(s);
			pthread_mutex_unlock(&s->lock);
			return r;
		}
		usleep(1000);
	}
	return 0;
}

/* What a set's volume calls back, and how its log lines name it. */
static void set_hooks(struct volume_set *s)
{
	char label[80];

	snprintf(label, sizeof(label), "pony volume %s", s->sb.name);
	volume_label_set(s->v, label);
	volume_set_intent_hook(s->v, set_intent, s);
	volume_set_fail_hook(s->v, set_on_fail, s);
	volume_set_written_hook(s->v, set_on_written, s);
	volume_enable_badblock_log(s->v, true);
}

/* Builds the volume from the superblock's segments over s->dev (NULL: missing). */
int set_build(struct volume_set *s)
{
	_cleanup_(volume_freep) struct volume *v = NULL;
	uint64_t offsets[VOLUME_SB_MAX_MEMBERS];
	int r = volume_new(&v);

	for (unsigned i = 0; r >= 0 && i < s->sb.nsegs; i++) {
		const struct volume_sb_seg *g = &s->sb.segs[i];
		uint64_t end = i + 1 < s->sb.nsegs ? s->sb.segs[i + 1].member_off : s->sb.data_size;
		struct volume_target_spec t = {
			.type = g->type, .layout = g->layout, .chunk = g->chunk, .ndevs = s->n,
			.devs = s->dev, .offsets = offsets, .dev_size = end - g->member_off,
		};

		if (g->chunk)           /* the last region used whole chunks of what was left */
			t.dev_size = t.dev_size / g->chunk * g->chunk;
		else
			t.dev_size = t.dev_size / 512 * 512;
		for (unsigned m = 0; m < s->n; m++)
			offsets[m] = s->sb.data_offset + g->member_off;
		r = volume_add_segment(v, g->start, g->len, &t);
		if (r >= 0)
			set_seg_cls(v, i, g->cls);
	}
	if (r < 0) {
		volume_detach_members(v);
		return r;
	}
	volume_member_uuids_set(v, (const uint8_t (*)[16])s->sb.member_uuids);
	s->v = TAKE_PTR(v);
	set_hooks(s);
	return 0;
}

struct volume_set *set_new(void)
{
	struct volume_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->bitmap = calloc(1, VOLUME_SB_BITMAP_BYTES);
	if (!s->bitmap) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->bm_lock, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->wlock, NULL);
	pthread_cond_init(&s->wcond, NULL);
	return s;
}

void set_free(struct volume_set *s)
{
	if (!s)
		return;
	set_spare_stop(s);
	if (s->v)
		volume_free(s->v);
	for (unsigned i = 0; i < s->nextra; i++)
		bdev_free(s->extra[i]);
	for (unsigned i = 0; i < VOLUME_SB_MAX_SPARES; i++)
		bdev_free(s->spare[i]);
	pthread_mutex_destroy(&s->bm_lock);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->wlock);
	pthread_cond_destroy(&s->wcond);
	free(s->bitmap);
	free(s);
}

int set_zero_bitmap(struct volume_set *s)
{
	memset(s->bitmap, 0, VOLUME_SB_BITMAP_BYTES);
	/* The next commit's: a member at least that recent missed nothing unmarked (readd.c). */
	s->sb.bitmap_events = s->sb.events + 1;
	return set_bitmap_write_pages(s, 0, VOLUME_SB_BITMAP_BYTES / BM_PAGE - 1);
}

/* Every member has a device and works: nobody is missing writes. */
static bool set_all_working(struct volume_set *s)
{
	for (unsigned m = 0; m < s->n; m++)
		if (!s->dev[m] || set_member_state(s, m) != VOLUME_MEMBER_OK)
			return false;
	return true;
}

/* A segment's resync as bytes of the whole volume, for the caller's progress. */
struct sync_progress {
	const struct volume_set_params *p;
	uint64_t seg_start, size;
};

static int sync_progress(uint64_t done, uint64_t total, void *arg)
{
	const struct sync_progress *sp = arg;

	return sp->p->progress(sp->seg_start + done, sp->size, sp->p->progress_arg);
}

int volume_set_create(struct bdev **devs, unsigned ndevs, const struct volume_set_params *p,
		      struct volume_set **ret)
{
	struct volume_set *s;
	struct volume *v = NULL;
	uint64_t min_size = UINT64_MAX, data_size;
	int r;

	if (!ndevs || ndevs > VOLUME_SB_MAX_MEMBERS || !p->nregions ||
	    p->nregions > VOLUME_SB_MAX_SEGS)
		return -EINVAL;
	for (unsigned i = 0; i < ndevs; i++)
		min_size = MIN(min_size, devs[i]->size);
	if (min_size < VOLUME_SB_DATA_OFFSET + 2 * VOLUME_SB_SIZE)
		return -ENOSPC;
	data_size = volume_sb_end_copy(min_size) - VOLUME_SB_DATA_OFFSET;
	r = volume_regions_build(devs, ndevs, VOLUME_SB_DATA_OFFSET, data_size, p->regions,
				 p->nregions, &v);
	if (r < 0)
		return r;
	s = set_new();
	if (!s) {
		volume_detach_members(v);
		volume_free(v);
		return -ENOMEM;
	}
	s->v = v;
	volume_member_uuids_set(v, (const uint8_t (*)[16])s->sb.member_uuids);
	s->n = ndevs;
	memcpy(s->dev, devs, ndevs * sizeof(devs[0]));
	s->sb = (struct volume_sb){
		.nmembers = ndevs, .member_size = min_size, .data_offset = VOLUME_SB_DATA_OFFSET,
		.data_size = data_size, .bitmap_offset = VOLUME_SB_BITMAP_OFFSET,
		.bitmap_bytes = VOLUME_SB_BITMAP_BYTES, .bitmap_shift = set_bitmap_shift(volume_size(v)),
		.nsegs = volume_segment_count(v), .rebuild_off = VOLUME_SB_NO_REBUILD,
		.scrub_off = VOLUME_SB_NO_REBUILD,
	};
	snprintf(s->sb.name, sizeof(s->sb.name), "%s", p->name ? p->name : "pony");
	util_uuid_generate(s->sb.volume_uuid);
	for (unsigned m = 0; m < ndevs; m++)
		util_uuid_generate(s->sb.member_uuids[m]);
	for (unsigned i = 0; i < s->sb.nsegs; i++) {
		const struct volume_seg *g = volume_seg_get(v, i);

		s->sb.segs[i] = (struct volume_sb_seg){
			.type = g->type, .layout = g->geom.layout, .chunk = g->geom.chunk,
			.start = g->start, .len = g->len,
			.member_off = g->m[0].offset - VOLUME_SB_DATA_OFFSET, .cls = g->cls,
		};
	}
	set_hooks(s);
	r = set_zero_bitmap(s);
	for (unsigned i = 0; r >= 0 && !p->assume_clean && i < s->sb.nsegs; i++) {
		struct sync_progress sp = { p, volume_seg_get(v, i)->start, volume_size(v) };

		r = volume_resync(v, i, p->progress ? sync_progress : NULL, &sp);
	}
	/* Space no segment uses needs no sync: the work is whole. */
	if (r >= 0 && !p->assume_clean && p->progress)
		p->progress(volume_size(v), volume_size(v), p->progress_arg);
	if (r >= 0)
		r = volume_set_commit(s);
	if (r < 0) {
		volume_detach_members(v);
		set_free(s);
		return r;
	}
	s->was_clean = true;
	*ret = s;
	return 0;
}

struct volume *volume_set_volume(struct volume_set *s)
{
	return s->v;
}

int volume_set_fail(struct volume_set *s, unsigned m)
{
	int r;

	if (m >= s->n)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (set_member_state(s, m) != VOLUME_MEMBER_FAILED)
		util_log(LOG_ERR, "%s: member %u (%s) marked failed on request", volume_label(s->v),
			 m, s->dev[m] ? s->dev[m]->name : "missing");
	set_member_force(s, m, VOLUME_MEMBER_FAILED);
	r = set_commit_locked(s);
	pthread_mutex_unlock(&s->lock);
	set_spare_kick(s);
	return r;
}

void set_member_put(struct volume_set *s, unsigned m, struct bdev *dev)
{
	struct bdev *old = s->dev[m];

	for (unsigned i = 0; i < volume_segment_count(s->v); i++) {
		struct volume_seg *g = set_seg(s, i);

		pthread_mutex_lock(&g->lock);
		g->m[m].dev = dev;
		g->m[m].nbad = 0;
		__atomic_store_n(&g->m[m].state, VOLUME_MEMBER_REBUILDING, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&g->lock);
	}
	pthread_mutex_lock(&s->bm_lock);      /* bitmap writes walk s->dev */
	s->dev[m] = dev;
	pthread_mutex_unlock(&s->bm_lock);
	if (old != dev)
		bdev_free(old);
	s->refused[m] = NULL;
	s->stale[m] = s->truncated[m] = false;
}

int set_replace_locked(struct volume_set *s, unsigned m, struct bdev *dev)
{
	int r;

	if (m >= s->n || !dev)
		return -EINVAL;
	if (dev->size < set_member_need(s))
		return -ENOSPC;
	if (set_member_state(s, m) == VOLUME_MEMBER_OK)
		return -EBUSY;                  /* fail it first */
	for (unsigned i = 0; i < volume_segment_count(s->v); i++)
		if (!set_seg(s, i)->ops->rebuild)
			return -EOPNOTSUPP;
	set_member_put(s, m, dev);
	util_uuid_generate(s->sb.member_uuids[m]);
	s->sb.rebuild_seg = 0;
	s->sb.rebuild_off = 0;
	r = bdev_pwrite(dev, s->bitmap, VOLUME_SB_BITMAP_BYTES, s->sb.bitmap_offset);
	return r < 0 ? r : set_commit_locked(s);
}

int volume_set_replace(struct volume_set *s, unsigned m, struct bdev *dev)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = set_replace_locked(s, m, dev);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/*
 * Saves a checkpoint of the work under way (what: "rebuild", "scrub"). If
 * it cannot be saved, the work stops (its error is kept for the caller):
 * going on would leave the members saying less than was done, or a member
 * marked rebuilt that is not.
 */
static int set_checkpoint(struct volume_set *s, const char *what, uint64_t done)
{
	int r = set_commit_locked(s);

	s->last_checkpoint = done;
	if (r >= 0)
		return 0;
	util_log(LOG_ERR, "%s: saving the %s checkpoint (region %u, byte %llu) failed: %s; "
		 "%s stopped", volume_label(s->v), what, s->progress_seg, (unsigned long long)done,
		 strerror(-r), what);
	s->progress_err = r;
	return 1;
}

/* Progress, and a checkpoint every so often (and when stopped): a restart resumes there. */
static int set_rebuild_progress(uint64_t done, uint64_t total, void *arg)
{
	struct volume_set *s = arg;
	const struct volume_seg *g = set_seg(s, s->progress_seg);
	int r = 0;

	if (s->user_progress)
		r = s->user_progress(g->start + done, volume_size(s->v), s->user_arg);
	if (r || done - s->last_checkpoint >= MIN(SET_CHECKPOINT, total / 16) || done == total) {
		s->sb.rebuild_seg = s->progress_seg;
		s->sb.rebuild_off = done;
		r |= set_checkpoint(s, "rebuild", done);
	}
	return r;
}

/* "rebuild of member 2 (d2.img) started at region 0, byte 0": one line, the members named. */
static void set_log_rebuild(struct volume_set *s, bool started, unsigned seg, uint64_t off)
{
	char who[256] = "";
	size_t n = 0;

	for (unsigned m = 0; m < s->n && n < sizeof(who); m++) {
		if (started)
			s->rebuilt[m] = set_member_state(s, m) == VOLUME_MEMBER_REBUILDING;
		if (s->rebuilt[m])
			n += (size_t)snprintf(who + n, sizeof(who) - n, "%s%u (%s)", n ? ", " : "", m,
					      s->dev[m] ? s->dev[m]->name : "-");
	}
	if (started)
		util_log(LOG_NOTICE, "%s: rebuild of member %s started at region %u, byte %llu",
			 volume_label(s->v), who, seg, (unsigned long long)off);
	else
		util_log(LOG_NOTICE, "%s: rebuild of member %s finished", volume_label(s->v), who);
}

int set_rebuild_locked(struct volume_set *s, uint64_t rate, volume_progress_fn progress,
		       void *arg)
{
	unsigned first = s->sb.rebuild_off == VOLUME_SB_NO_REBUILD ? 0 : s->sb.rebuild_seg;
	uint64_t from = s->sb.rebuild_off == VOLUME_SB_NO_REBUILD ? 0 : s->sb.rebuild_off;
	bool any = false;
	int r = 0;

	if (s->rdonly)
		return -EROFS;
	for (unsigned m = 0; m < s->n; m++)
		any |= set_member_state(s, m) == VOLUME_MEMBER_REBUILDING;
	if (!any)
		return 0;
	s->user_progress = progress;
	s->user_arg = arg;
	s->progress_err = 0;
	set_log_rebuild(s, true, first, from);
	for (unsigned i = first; r >= 0 && i < volume_segment_count(s->v); i++) {
		s->progress_seg = i;
		s->last_checkpoint = i == first ? from : 0;
		r = volume_rebuild(s->v, i, i == first ? from : 0, rate, set_rebuild_progress, s);
	}
	if (r == -ECANCELED && s->progress_err)
		r = s->progress_err;
	if (r >= 0) {
		s->sb.rebuild_off = VOLUME_SB_NO_REBUILD;
		s->sb.rebuild_seg = 0;
		r = set_commit_locked(s);
	}
	if (r >= 0)
		set_log_rebuild(s, false, 0, 0);
	else if (!s->progress_err)
		util_log(LOG_WARNING, "%s: rebuild stopped in region %u: %s (checkpoint: region %u, "
			 "byte %llu)", volume_label(s->v), s->progress_seg, strerror(-r),
			 s->sb.rebuild_seg, (unsigned long long)s->sb.rebuild_off);
	return r;
}

int volume_set_rebuild(struct volume_set *s, uint64_t rate, volume_progress_fn progress,
		       void *arg)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = set_rebuild_locked(s, rate, progress, arg);
	pthread_mutex_unlock(&s->lock);
	return r;
}

static int set_scrub_progress(uint64_t done, uint64_t total, void *arg)
{
	struct volume_set *s = arg;
	const struct volume_seg *g = set_seg(s, s->progress_seg);
	int r = 0;

	if (s->user_progress)
		r = s->user_progress(g->start + done, volume_size(s->v), s->user_arg);
	if (!s->rdonly && (r || done - s->last_checkpoint >= MIN(SET_CHECKPOINT, total / 16))) {
		s->sb.scrub_seg = s->progress_seg;
		s->sb.scrub_off = done;
		r |= set_checkpoint(s, "scrub", done);
	}
	return r;
}

static int set_scrub_locked(struct volume_set *s, bool repair, uint64_t rate,
			    volume_mismatch_fn report, void *report_arg,
			    volume_progress_fn progress, void *arg, uint64_t *ret_count)
{
	bool resume = s->sb.scrub_off != VOLUME_SB_NO_REBUILD && s->sb.scrub_seg < s->sb.nsegs;
	unsigned first = resume ? s->sb.scrub_seg : 0;
	uint64_t total = 0;
	int r = 0;

	s->user_progress = progress;
	s->user_arg = arg;
	s->progress_err = 0;
	for (unsigned i = first; r >= 0 && i < volume_segment_count(s->v); i++) {
		uint64_t n = 0, from = resume && i == first ? s->sb.scrub_off : 0;

		s->progress_seg = i;
		s->last_checkpoint = from;
		r = volume_scrub_from(s->v, i, from, repair && !s->rdonly, rate, report, report_arg,
				      set_scrub_progress, s, &n);
		if (r == -EOPNOTSUPP)
			r = 0;
		total += n;
	}
	if (r == -ECANCELED && s->progress_err)
		r = s->progress_err;
	if (r >= 0 && !s->rdonly && s->sb.scrub_off != VOLUME_SB_NO_REBUILD) {
		s->sb.scrub_off = VOLUME_SB_NO_REBUILD;         /* done: nothing to resume */
		s->sb.scrub_seg = 0;
		r = set_commit_locked(s);
	}
	if (ret_count)
		*ret_count = total;
	return r;
}

int volume_set_scrub(struct volume_set *s, bool repair, uint64_t rate,
		     volume_mismatch_fn report, void *report_arg,
		     volume_progress_fn progress, void *arg, uint64_t *ret_count)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = set_scrub_locked(s, repair, rate, report, report_arg, progress, arg, ret_count);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void volume_set_abandon(struct volume_set *s)
{
	set_free(s);
}

int volume_set_close(struct volume_set *s)
{
	int r = 0;

	if (!s)
		return 0;
	set_spare_stop(s);      /* a rebuild onto a spare saves its checkpoint */
	if (!s->rdonly) {
		r = volume_flush(s->v);
		/* With a member away, the bitmap keeps what it missed: a re-add
		 * resyncs only that (readd.c). */
		if (r >= 0 && set_all_working(s))
			r = set_zero_bitmap(s);
		if (r >= 0) {
			s->sb.flags |= VOLUME_SB_CLEAN;
			r = volume_set_commit(s);
		}
	}
	set_free(s);
	return r;
}
