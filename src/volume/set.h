/*
 * set.h - the inside of a pony volume set (an opened pony volume), shared by
 * set.c (members, superblocks, bitmap, rebuild and scrub), assemble.c
 * (members placed and checked at open) and spare.c (idle hot spares and the
 * worker that rebuilds onto them). Not public.
 */
#ifndef PONY_VOLUME_SET_H
#define PONY_VOLUME_SET_H

#include <pthread.h>

#include "internal.h"
#include "sb.h"

#define SET_CHECKPOINT (64ull << 20)    /* rebuild bytes between checkpoints */
#define BM_PAGE 4096u

struct volume_set {
	struct volume *v;
	unsigned n;
	struct bdev *dev[VOLUME_SB_MAX_MEMBERS];        /* by index; in v unless refused */
	struct bdev *refused[VOLUME_SB_MAX_MEMBERS];    /* a stale or short device per index (in extra) */
	struct bdev *extra[VOLUME_SB_MAX_MEMBERS];      /* devices not in v, freed at close */
	unsigned nextra;
	uint64_t events[VOLUME_SB_MAX_MEMBERS];
	bool stale[VOLUME_SB_MAX_MEMBERS];              /* refused[m] is older than the volume */
	bool truncated[VOLUME_SB_MAX_MEMBERS];          /* refused[m] is too small for it */
	bool rebuilt[VOLUME_SB_MAX_MEMBERS];            /* in the rebuild under way (its log lines) */
	struct volume_sb sb;                            /* the volume's state */
	bool rdonly, was_clean;
	bool unsaved_failure;                           /* a member failed since the last commit (atomic) */
	/* Failures counted as they happen, and the count the last commit that
	 * wrote superblocks covered (both atomic): a write waits until its
	 * failures are saved, by whichever commit saves them (set_on_written). */
	uint64_t failures_seen, failures_saved;
	uint64_t resynced, last_checkpoint;
	pthread_mutex_t bm_lock;
	uint8_t *bitmap;                                /* protected by bm_lock */
	volume_progress_fn user_progress;
	void *user_arg;
	unsigned progress_seg;
	int progress_err;                               /* a checkpoint not saved stopped the work */
	/*
	 * lock serializes changes of the set's state: commits, fail, replace,
	 * rebuild, scrub, spare take-over. Member I/O never takes it. Not
	 * recursive: the public calls take it, their *_locked insides expect
	 * it held and call only each other.
	 */
	pthread_mutex_t lock;
	struct bdev *spare[VOLUME_SB_MAX_SPARES];       /* idle; sb.spare_uuids[i] is theirs */
	/* The spare worker (spare.c); its fields are protected by wlock. */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	pthread_t worker;
	bool worker_started, wake, busy, stopping;
	int spare_result;
	volume_progress_fn watch;
	void *watch_arg;
};

struct volume_seg *set_seg(struct volume_set *s, unsigned i);
/* Worst state of member m over every segment. */
int set_member_state(struct volume_set *s, unsigned m);
/* Member m's state in every segment at once (assembly, fail). */
void set_member_force(struct volume_set *s, unsigned m, int state);
/* The least bytes a member device needs: data, then room for the end superblock. */
static inline uint64_t set_member_need(const struct volume_set *s)
{
	return s->sb.data_offset + s->sb.data_size + VOLUME_SB_SIZE;
}

struct volume_set *set_new(void);
/* Frees s and everything it holds (its volume's devices too). NULL: nothing. */
void set_free(struct volume_set *s);
/* Builds s->v from s->sb's regions over s->dev (NULL: missing). */
int set_build(struct volume_set *s);
int set_zero_bitmap(struct volume_set *s);

/* With s->lock held: */
/* Saves member states, bad blocks and checkpoints (events + 1) on every working member. */
int set_commit_locked(struct volume_set *s);
int set_replace_locked(struct volume_set *s, unsigned m, struct bdev *dev);
/* dev in as member m, rebuilding, in every segment; the device it had is freed. */
void set_member_put(struct volume_set *s, unsigned m, struct bdev *dev);
int set_rebuild_locked(struct volume_set *s, uint64_t rate, volume_progress_fn progress,
		       void *arg);

/* spare.c */
/* Wakes the spare worker when a member is failed and a spare is idle. */
void set_spare_kick(struct volume_set *s);
/* Stops the worker (a rebuild in progress saves its checkpoint) and waits for it. */
void set_spare_stop(struct volume_set *s);
/* Places devices whose superblock names a spare slot (current: its events
 * within the margin of the newest); 0, or 1: not a spare. */
int set_spare_gather(struct volume_set *s, struct bdev *dev, const struct volume_sb *sb,
		     bool current);
/* Writes each spare's superblock (commit). */
void set_spare_commit(struct volume_set *s);

#endif
