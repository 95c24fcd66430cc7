/*
 * internal.h - what the volume's files share: segments, members and the
 * target ops table. Not part of the public API.
 */
#ifndef PONY_VOLUME_INTERNAL_H
#define PONY_VOLUME_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "pony/volume.h"
#include "layout.h"
#include "parity.h"

#define VOLUME_SECTOR 512u
#define VOLUME_MAX_BAD 64

struct volume_bad {
	uint64_t off, len;              /* bytes on the member, past its offset */
};

struct volume_member {
	struct bdev *dev;               /* NULL: missing */
	uint64_t offset;                /* where data starts on dev */
	int state;                      /* enum volume_member_state; atomic */
	unsigned nbad;
	struct volume_bad bad[VOLUME_MAX_BAD];
};

struct volume_seg;

/* What a scrub does with what it finds. */
enum volume_scrub_mode {
	VOLUME_SCRUB_CHECK,             /* report only */
	VOLUME_SCRUB_REPAIR,            /* report, and rewrite a member the level can blame */
	/*
	 * After a crash (the bitmap's ranges) and at create: make the members
	 * agree whatever they hold, as md's resync does: parity from the data,
	 * the majority or first copy to the others; but a raid6 block that P
	 * and Q locate is rewritten alone, as repair does. Nothing is reported: a
	 * write in flight at the crash is expected to leave them apart.
	 */
	VOLUME_SCRUB_RESYNC,
};

/* One scrub pass: its mode, where findings go, how many there were. */
struct volume_scrub {
	enum volume_scrub_mode mode;
	volume_mismatch_fn report;
	void *arg;
	uint64_t count;
	volume_scrub_data_fn data;      /* volume_scrub_span(): pieces found consistent */
	void *data_arg;
};

/*
 * A target. Offsets are relative to the segment and sector-aligned (the
 * volume bounces unaligned requests). A NULL hook: -EOPNOTSUPP.
 */
struct volume_target_ops {
	const char *name;
	int (*check)(struct volume_seg *s);     /* geometry vs devices: 0, -EINVAL, -ENOSPC */
	/*
	 * Reads or writes the first piece of [off, off+len) (a chunk, a stripe,
	 * or all of it: the target's unit of work) and returns the bytes it
	 * did (> 0), or -errno. volume_seg_io() walks a whole range with it,
	 * so no target repeats the loop; buf is const for writes.
	 */
	ssize_t (*io)(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off);
	/* Rebuilds member m's data for segment bytes [off, off+len) (whole stripes). */
	int (*rebuild)(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len);
	/* Checks [off, off+len) (whole units), handing each finding to volume_scrub_found(). */
	int (*scrub)(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc);
	/*
	 * volume_scrub_span()'s walk, when the target has one of its own: as
	 * scrub over [off, off+len), called without the lock, which it takes
	 * itself where it needs it. NULL: scrub unit by unit under the lock.
	 */
	int (*scrub_span)(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc);
	uint64_t (*unit)(const struct volume_seg *s);   /* rebuild/scrub step, bytes */
	/*
	 * As io's read, but each piece checked against the redundancy first
	 * where the level can name a bad member (volume_read_checked). NULL:
	 * a plain read.
	 */
	ssize_t (*read_checked)(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off);
};

struct volume_seg {
	unsigned index;
	const char *label;              /* the volume's, for log lines */
	uint64_t start, len;
	enum volume_target_type type;
	const struct volume_target_ops *ops;
	struct layout_geom geom;
	const struct parity_ops *parity;
	enum volume_region_class cls;
	bool bbl;                       /* write errors go to the bad-block list */
	volume_fail_fn fail_hook;       /* a member just failed (volume_set_fail_hook) */
	void *fail_arg;
	pthread_mutex_t lock;           /* serializes writes, degraded reads, rebuild, bad lists */
	void *scratch;                  /* stripe buffers; protected by lock */
	size_t scratch_len;
	unsigned nmembers;
	struct volume_member *m;
};

/* The volume object (volume.c); pass.c walks its segments too. */
struct volume {
	char label[80];                 /* names the volume in log lines */
	uint64_t size;
	volume_intent_fn intent;
	void *intent_arg;
	volume_written_fn written;
	void *written_arg;
	unsigned nsegs;
	struct volume_seg **segs;
	/* A set's member UUIDs by member index (its superblock's, which
	 * outlives the volume); NULL: not a set's. */
	const uint8_t (*member_uuids)[16];
};

extern const struct volume_target_ops volume_linear_ops, volume_striped_ops,
	volume_zero_ops, volume_error_ops, volume_mirror_ops, volume_raid10_ops,
	volume_raid_ops;

/* Member I/O. Reads fail (-EIO) on failed, rebuilding or bad ranges. */
int volume_mread(struct volume_seg *s, unsigned m, void *buf, size_t len, uint64_t off);
/*
 * The next run [*at, *ret_end) of member m's [off, off+len) (offsets from
 * off), from *at on, of 4 KiB blocks that fail to read, less those its
 * bad-block log holds (reconstructed by design): what a scrub blames and
 * rewrites, a bad sector as itself rather than the whole piece it read,
 * and two bad sectors apart as two, not the good blocks between them.
 * buf: 4 KiB of scratch. False when no block from *at on fails (both
 * left as they were).
 */
bool volume_munreadable(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len, void *buf,
			uint64_t *at, uint64_t *ret_end);
/* bdev_advise() of the volume's [off, off+len): the same hint to the
 * members a read of it takes (readahead.c). */
int volume_advise(struct volume *v, uint64_t off, uint64_t len, enum bdev_advice advice);
/*
 * Writes to a member; skipped (0) when failed; an error marks it failed and
 * is returned. Bad ranges are skipped: they stay reconstructed.
 */
int volume_mwrite(struct volume_seg *s, unsigned m, const void *buf, size_t len, uint64_t off);
/*
 * Member m's storage for [off, off+len), when it is memory (bdev_map), for
 * a read or a write under the rules above: -EIO when the member may not take
 * part (failed; for reads also rebuilding; a bad range), -EOPNOTSUPP when its
 * storage cannot be lent (the caller then uses volume_mread/volume_mwrite).
 */
int volume_mmap(struct volume_seg *s, unsigned m, size_t len, uint64_t off, bool write,
		uint8_t **ret);
int volume_mstate(const struct volume_seg *s, unsigned m);
/*
 * Marks member m failed. The first time, the fail hook runs and, unless
 * what is NULL (the caller logs its own line), one log line says why: what
 * failed ("write", "flush", or a reason when err is 0), at which byte of
 * the device (UINT64_MAX: none), and the error.
 */
void volume_mfail(struct volume_seg *s, unsigned m, const char *what, uint64_t off, int err);
/*
 * A batch of member I/Os submitted together and waited for together, so
 * the members of a stripe work in parallel (through acall, for file
 * members). Entries follow volume_mread/volume_mwrite's rules.
 */
#define VOLUME_BATCH_MAX (2 * LAYOUT_MAX_DISKS)
struct volume_batch {
	struct volume_seg *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned pending, n;            /* protected by lock */
	struct volume_batch_entry {
		struct bdev_io io;
		struct volume_batch *batch;
		unsigned m;
		bool write, skipped;
	} e[VOLUME_BATCH_MAX];
};
void volume_batch_init(struct volume_batch *b, struct volume_seg *s);
/* Queues one member read or write; returns its entry index. */
unsigned volume_batch_add(struct volume_batch *b, unsigned m, bool write, void *buf, size_t len,
			  uint64_t off);
/* Submits everything queued, waits, applies write errors; entry results stay readable. */
void volume_batch_run(struct volume_batch *b);
int volume_batch_result(const struct volume_batch *b, unsigned i);
void volume_batch_done(struct volume_batch *b);

/* The whole of [off, off+len) of a segment through its io hook: 0 or -errno. */
int volume_seg_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off);
/* Members a segment of type t over ndevs devices can lose and still serve reads. */
unsigned volume_type_redundancy(enum volume_target_type t, unsigned layout, unsigned ndevs);
/* Members not OK (failed or rebuilding). */
unsigned volume_seg_degraded(const struct volume_seg *s);
/* A PARITY_ALIGN-aligned buffer of at least len bytes, kept by s; call with s->lock held. */
uint8_t *volume_seg_scratch(struct volume_seg *s, size_t len);
/* Forgets every member device without freeing it (error paths that hand devices back). */
void volume_detach_members(struct volume *v);
/* What log lines call the volume ("volume" unless set; "pony volume NAME" for a set). */
void volume_label_set(struct volume *v, const char *label);
const char *volume_label(const struct volume *v);
/* Sets a segment's region class (builders). */
void set_seg_cls(struct volume *v, unsigned i, enum volume_region_class cls);
/* Resyncs [off, off+len) of segment i (the bitmap's ranges after a crash). */
int volume_scrub_range(struct volume *v, unsigned i, uint64_t off, uint64_t len);
/* Resyncs all of segment i (a new volume's first parity); progress as volume_rebuild's. */
int volume_resync(struct volume *v, unsigned i, volume_progress_fn progress, void *arg);
/* A finding of sc's pass: counted, logged and reported (not in a resync). */
/* A piece scrub found consistent, for volume_scrub_span()'s caller (if any). */
void volume_scrub_consistent(struct volume_scrub *sc, uint64_t seg_off, const uint8_t *data,
			     size_t len);
void volume_scrub_found(const struct volume_seg *s, struct volume_scrub *sc,
			const struct volume_mismatch *mm);

/* The parity targets' scrub_span (raid_scrub_span.c), the mirror's (mirror_scrub_span.c). */
int raid_scrub_span(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc);
int mirror_scrub_span(struct volume_seg *s, uint64_t off, uint64_t len, struct volume_scrub *sc);
/*
 * A healthy read of raid4/5/6 chunks in one batch (raid_read_span.c): the
 * bytes read in order from off (0: let the piece path read the first piece).
 */
ssize_t raid_read_span(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off);
/* Whether a data block of a raid4/5/6 stripe is on a member that is not working. */
bool raid_stripe_degraded(struct volume_seg *s, uint64_t stripe);
/* The calling thread's span buffer (scrub_span_buf.c), at least len bytes, PARITY_ALIGN-aligned. */
uint8_t *volume_scrub_span_buf(size_t len);
/* Segment bytes [off, end) the locked way: the target's scrub, unit by unit under s->lock. */
int volume_scrub_span_locked(struct volume_seg *s, uint64_t off, uint64_t end,
			     struct volume_scrub *sc);

/* Bytes [first, last] of a piece at dev_off on a member, widened to sectors, into mm. */
static inline void volume_mismatch_narrow(struct volume_mismatch *mm, uint64_t dev_off,
					  size_t first, size_t last)
{
	uint64_t a = first / VOLUME_SECTOR * VOLUME_SECTOR;

	mm->dev_off = dev_off + a;
	mm->len = ((uint64_t)last / VOLUME_SECTOR + 1) * VOLUME_SECTOR - a;
}
const struct volume_seg *volume_seg_get(const struct volume *v, unsigned i);
/* A set's member UUIDs (uuids[m], alive as long as v) for volume_member_uuid(). */
void volume_member_uuids_set(struct volume *v, const uint8_t (*uuids)[16]);

/*
 * Where the first piece of segment bytes [off, off+len) lives (map.c): the
 * one home of every target's placement, which the I/O paths, rebuild,
 * scrub and volume_map() all take. A piece ends at its chunk's end, or at
 * len; a mirror's is all of len.
 */
struct volume_place {
	uint64_t len;                   /* bytes of the piece */
	unsigned ncopies;               /* places that hold it: 1, or each copy (mirror, raid10) */
	unsigned disk[LAYOUT_MAX_DISKS];        /* member index in the segment */
	uint64_t dev_off[LAYOUT_MAX_DISKS];     /* bytes on the member, past its data offset */
	/* raid4/5/6: the row of chunks, the offset inside them, the data
	 * block of the row the piece is, and the row's data, P and Q disks
	 * (P and Q of the piece sit at dev_off[0] on st.pd and st.qd). */
	uint64_t stripe, in;
	unsigned block;
	struct layout_stripe st;
};
/* 0, or -EINVAL for a target without members (zero, error). */
int volume_seg_place(const struct volume_seg *s, uint64_t off, uint64_t len,
		     struct volume_place *ret);

#endif
