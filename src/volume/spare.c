/*
 * spare.c - idle hot spares of a pony volume, as md keeps them: a spare
 * carries the volume's superblock (index nmembers + slot, its own UUID in
 * the volume's spare list) and takes no I/O. When a member fails, a worker
 * thread puts an idle spare in its place and rebuilds it online, with the
 * same checkpoints as `pony vol rebuild`; closing the set stops it with the
 * checkpoint saved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pony/util.h"
#include "set.h"

unsigned volume_set_spare_count(const struct volume_set *s)
{
	return s->sb.nspares;
}

const char *volume_set_spare_device(const struct volume_set *s, unsigned i)
{
	return i < s->sb.nspares && s->spare[i] ? s->spare[i]->name : NULL;
}

void volume_set_watch(struct volume_set *s, volume_progress_fn fn, void *arg)
{
	pthread_mutex_lock(&s->wlock);
	s->watch = fn;
	s->watch_arg = arg;
	pthread_mutex_unlock(&s->wlock);
}

int set_spare_gather(struct volume_set *s, struct bdev *dev, const struct volume_sb *sb,
		     bool current)
{
	unsigned i;

	if (sb->member_index < s->n)
		return 1;
	/* Found by UUID, not by its slot: a commit that took an earlier spare
	 * moved the later ones down, and a crash may have cut it short before
	 * their superblocks said so. */
	for (i = 0; i < s->sb.nspares && memcmp(sb->member_uuid, s->sb.spare_uuids[i], 16); i++)
		;
	if (i >= s->sb.nspares || !current || s->spare[i]) {
		s->extra[s->nextra++] = dev;    /* a spare since used or dropped: ignored */
		return 0;
	}
	s->spare[i] = dev;
	return 0;
}

void set_spare_commit(struct volume_set *s)
{
	for (unsigned i = 0; i < s->sb.nspares; i++) {
		struct volume_sb ssb = s->sb;

		if (!s->spare[i])
			continue;
		ssb.member_index = s->n + i;
		memcpy(ssb.member_uuid, s->sb.spare_uuids[i], 16);
		ssb.nbad = 0;
		if (volume_sb_write(s->spare[i], &ssb) < 0 || bdev_flush(s->spare[i]) < 0) {
			/* A spare that cannot hold a superblock cannot hold data. */
			s->extra[s->nextra++] = s->spare[i];
			s->spare[i] = NULL;
		}
	}
}

/* Removes spare slot i from the list (later slots move down). */
static struct bdev *spare_take(struct volume_set *s, unsigned i)
{
	struct bdev *dev = s->spare[i];

	memmove(&s->spare[i], &s->spare[i + 1], (s->sb.nspares - i - 1) * sizeof(s->spare[0]));
	memmove(s->sb.spare_uuids[i], s->sb.spare_uuids[i + 1], (s->sb.nspares - i - 1) * 16);
	s->sb.nspares--;
	s->spare[s->sb.nspares] = NULL;
	memset(s->sb.spare_uuids[s->sb.nspares], 0, 16);
	return dev;
}

/* Puts idle spares in for failed members: how many were put in, or -errno. */
static int spare_take_over(struct volume_set *s)
{
	int n = 0;

	for (unsigned m = 0; m < s->n; m++) {
		struct bdev *dev;
		unsigned i;
		int r;

		if (set_member_state(s, m) != VOLUME_MEMBER_FAILED)
			continue;
		for (i = 0; i < s->sb.nspares && !s->spare[i]; i++)
			;
		if (i == s->sb.nspares)
			break;
		dev = spare_take(s, i);
		util_log(LOG_NOTICE, "%s: hot spare %s takes failed member %u's place", volume_label(s->v),
			 dev->name, m);
		r = set_replace_locked(s, m, dev);
		if (r < 0) {
			s->extra[s->nextra++] = dev;
			return r;
		}
		n++;
	}
	return n;
}

static int spare_progress(uint64_t done, uint64_t total, void *arg)
{
	struct volume_set *s = arg;
	volume_progress_fn fn;
	void *fn_arg;
	bool stop;

	pthread_mutex_lock(&s->wlock);
	stop = s->stopping;
	fn = s->watch;
	fn_arg = s->watch_arg;
	pthread_mutex_unlock(&s->wlock);
	if (stop)
		return 1;
	return fn ? fn(done, total, fn_arg) : 0;
}

static void *spare_worker(void *arg)
{
	struct volume_set *s = arg;

	pthread_mutex_lock(&s->wlock);
	for (;;) {
		int r;

		while (!s->wake && !s->stopping)
			pthread_cond_wait(&s->wcond, &s->wlock);
		if (s->stopping)
			break;
		s->wake = false;
		pthread_mutex_unlock(&s->wlock);
		pthread_mutex_lock(&s->lock);
		r = spare_take_over(s);
		if (r > 0)
			r = set_rebuild_locked(s, 0, spare_progress, s);
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_lock(&s->wlock);
		s->spare_result = r < 0 ? r : 0;
		if (!s->wake) {
			s->busy = false;
			pthread_cond_broadcast(&s->wcond);
		}
	}
	s->busy = false;
	pthread_cond_broadcast(&s->wcond);
	pthread_mutex_unlock(&s->wlock);
	return NULL;
}

void set_spare_kick(struct volume_set *s)
{
	bool any = false;

	if (s->rdonly || !s->sb.nspares)
		return;
	for (unsigned i = 0; i < s->sb.nspares; i++)
		any |= s->spare[i] != NULL;
	if (!any)
		return;
	pthread_mutex_lock(&s->wlock);
	if (!s->stopping) {
		if (!s->worker_started)
			s->worker_started = pthread_create(&s->worker, NULL, spare_worker, s) == 0;
		if (s->worker_started) {
			s->wake = s->busy = true;
			pthread_cond_broadcast(&s->wcond);
		}
	}
	pthread_mutex_unlock(&s->wlock);
}

void set_spare_stop(struct volume_set *s)
{
	bool started;

	pthread_mutex_lock(&s->wlock);
	s->stopping = true;
	started = s->worker_started;
	pthread_cond_broadcast(&s->wcond);
	pthread_mutex_unlock(&s->wlock);
	if (started)
		pthread_join(s->worker, NULL);
	s->worker_started = false;
}

int volume_set_wait(struct volume_set *s)
{
	int r;

	pthread_mutex_lock(&s->wlock);
	while (s->busy)
		pthread_cond_wait(&s->wcond, &s->wlock);
	r = s->spare_result;
	pthread_mutex_unlock(&s->wlock);
	return r;
}

/*
 * The spare slot whose UUID dev's superblock names, if dev is this volume's
 * spare already; -1 otherwise. Such a device left out of one command's
 * member list is missing from its slot after that command's commit; added
 * again it goes back into that slot, not into a second one under a new UUID
 * (the first would then wait for a device that no longer answers to it).
 */
static int spare_slot_of_locked(const struct volume_set *s, struct bdev *dev)
{
	struct volume_sb sb;

	for (unsigned i = 0; i < s->sb.nspares; i++)
		if (s->spare[i] == dev)
			return (int)i;
	if (volume_sb_read(dev, &sb) < 0 || memcmp(sb.volume_uuid, s->sb.volume_uuid, 16) ||
	    sb.member_index < s->n)
		return -1;
	for (unsigned i = 0; i < s->sb.nspares; i++)
		if (!memcmp(sb.member_uuid, s->sb.spare_uuids[i], 16))
			return (int)i;
	return -1;
}

int volume_set_add_spare(struct volume_set *s, struct bdev *dev)
{
	unsigned i;
	bool fresh;
	int r;

	if (!dev)
		return -EINVAL;
	if (s->rdonly)
		return -EROFS;
	if (dev->size < set_member_need(s))
		return -ENOSPC;
	pthread_mutex_lock(&s->lock);
	r = spare_slot_of_locked(s, dev);
	if (r >= 0 && s->spare[r]) {
		pthread_mutex_unlock(&s->lock);
		return -EEXIST;
	}
	fresh = r < 0;
	i = fresh ? s->sb.nspares : (unsigned)r;
	if (fresh && (i >= VOLUME_SB_MAX_SPARES || s->n + i >= VOLUME_SB_MAX_MEMBERS)) {
		pthread_mutex_unlock(&s->lock);
		return -E2BIG;
	}
	if (fresh) {
		util_uuid_generate(s->sb.spare_uuids[i]);
		s->sb.nspares++;
	}
	s->spare[i] = dev;
	r = set_commit_locked(s);
	if (r < 0 || !s->spare[i]) {
		/* Not written: the device goes back to the caller. */
		if (!s->spare[i])
			s->nextra--;
		if (fresh)
			spare_take(s, i);
		else
			s->spare[i] = NULL;
		r = r < 0 ? r : -EIO;
	}
	pthread_mutex_unlock(&s->lock);
	if (r >= 0)
		set_spare_kick(s);      /* a volume already degraded takes it at once */
	return r;
}
