/*
 * include/pony/volume.h - pony's one block-mapping and RAID engine. A volume
 * is a table of segments [start, start+len), each mapped to a target:
 * linear, striped, mirror, raid4, raid5, raid6, raid10, zero or error. Data
 * and parity placement is Linux md's, bit for bit; tables can be written in
 * device-mapper's syntax; md v1.x arrays assemble from their superblocks. A
 * volume is also a bdev, so a target's device may be another volume.
 *
 * Failures: a member that fails a read is reconstructed from redundancy
 * and the block rewritten; a member that fails a write is marked faulty and
 * the volume carries on degraded, up to the target's redundancy.
 */
#ifndef PONY_VOLUME_H
#define PONY_VOLUME_H

#include <stdbool.h>
#include <stdint.h>

#include "pony/bdev.h"

struct volume;

/* Values are stored in pony superblocks (docs/volume-format.md): never renumber. */
enum volume_target_type {
	VOLUME_LINEAR = 0,
	VOLUME_STRIPED = 1,             /* md raid0 */
	VOLUME_MIRROR = 2,              /* md raid1 */
	VOLUME_RAID4 = 3,
	VOLUME_RAID5 = 4,
	VOLUME_RAID6 = 5,
	VOLUME_RAID10 = 6,
	VOLUME_ZERO = 7,
	VOLUME_ERROR = 8,
};

/* What a segment maps to. Devices are handed to the volume (it frees them). */
struct volume_target_spec {
	enum volume_target_type type;
	unsigned layout;                /* md algorithm; raid10: near | far << 8 | offset << 16 */
	uint64_t chunk;                 /* bytes, multiple of 512 (striped and raid) */
	unsigned ndevs;
	struct bdev **devs;             /* NULL entries: missing members (degraded) */
	const uint64_t *offsets;        /* where data starts on each device; NULL: 0 */
	uint64_t dev_size;              /* bytes used per device; 0: as much as fits */
};

/* An empty volume (size 0). On 0, *ret is the caller's: volume_free(). */
int volume_new(struct volume **ret);
void volume_free(struct volume *v);     /* frees member devices too; NULL: nothing */
static inline void volume_freep(struct volume **v) { volume_free(*v); }

/*
 * Appends a segment at the volume's current end (start must equal it).
 * -EINVAL for a bad geometry, -ENOSPC when the target does not fit its
 * devices; on error nothing is kept and the devices stay the caller's.
 */
int volume_add_segment(struct volume *v, uint64_t start, uint64_t len,
		       const struct volume_target_spec *spec);

uint64_t volume_size(const struct volume *v);
unsigned volume_segment_count(const struct volume *v);
/* Bytes a caller should write at once to avoid read-modify-write (1 for none). */
uint64_t volume_full_stripe(const struct volume *v, unsigned seg);

/* Any offset and length; 0 or -errno (-EIO: more failures than redundancy). */
int volume_read(struct volume *v, void *buf, size_t len, uint64_t off);
int volume_write(struct volume *v, const void *buf, size_t len, uint64_t off);
int volume_flush(struct volume *v);

/*
 * The volume as a bdev (for stacking, FUSE, the CLI). On 0, *ret owns v:
 * bdev_free(*ret) frees the volume.
 */
int volume_as_bdev(struct volume *v, struct bdev **ret);

/*
 * Where a volume's bytes live, by the same math the I/O path uses, so a
 * client reading members directly never copies it (docs/layout.md).
 * volume_map() walks [off, off+len) in volume order, one data piece per
 * chunk (or per segment piece), each followed by what protects it:
 *   DATA  the member holding those bytes (a mirror's or raid10's first copy);
 *   COPY  every other copy (mirror, raid10);
 *   P, Q  the parity of its stripe row, same member offset and length (raid4/5/6);
 *   NONE  a zero or error segment: no member holds anything.
 * P and Q repeat for each data piece of a row. Failed or missing members
 * are mapped all the same (volume_member_state() says which are).
 */
enum volume_piece_role {
	VOLUME_PIECE_DATA = 0,
	VOLUME_PIECE_COPY = 1,
	VOLUME_PIECE_P = 2,
	VOLUME_PIECE_Q = 3,
	VOLUME_PIECE_NONE = 4,
};
#define VOLUME_NO_MEMBER UINT32_MAX
struct volume_piece {
	uint64_t vol_off, len;          /* the volume bytes it holds (P, Q: their data piece's) */
	enum volume_piece_role role;
	unsigned seg;
	unsigned member;                /* index in the segment; VOLUME_NO_MEMBER for NONE */
	uint64_t dev_off;               /* on the member, past its data offset (as bad blocks) */
	uint64_t dev_start;             /* the member's data offset: its device's byte
					 * dev_start + dev_off is the piece's first */
	uint64_t stripe;                /* raid4/5/6: the stripe row; else UINT64_MAX */
	int q_slot;                     /* raid6 DATA: md's syndrome slot, Q = sum g^slot * D; else -1 */
};
/*
 * Fills ret with the first n pieces of [off, off+len) and returns how many
 * the whole range maps to (more than n: the rest were left out; n = 0
 * counts). -EINVAL when the range is not inside the volume.
 */
int64_t volume_map(const struct volume *v, uint64_t off, uint64_t len, struct volume_piece *ret,
		   size_t n);
/*
 * The reverse of volume_map(): what member m's device byte dev_byte holds
 * (bad blocks and scrub findings back to volume bytes). DATA and COPY:
 * ret->vol_off is the volume byte there (len 1); P and Q: the stripe row
 * they protect (vol_off its first byte, len its data width). -ENOENT when
 * no segment uses that byte (superblocks, the member's tail).
 */
int volume_unmap(const struct volume *v, unsigned m, uint64_t dev_byte, struct volume_piece *ret);
/*
 * The parity of one whole stripe row of a raid4/5/6 segment, for a writer
 * that puts data and parity on the members itself (docs/layout.md "Direct
 * writes"): off is the row's first volume byte, data its full-stripe bytes
 * in volume order; P (and raid6's Q) come out one chunk each, by the
 * volume's own geometry and parity engine. data, p and q are 64-byte
 * aligned; q is NULL unless raid6. -EINVAL: not a whole row or misaligned;
 * -EOPNOTSUPP: no parity there (mirror, raid10, ...).
 */
int volume_encode_stripe(const struct volume *v, uint64_t off, const void *data, void *p, void *q);
/* Where member m's data of segment seg starts on its device (dev_start); 0 out of range. */
uint64_t volume_member_start(const struct volume *v, unsigned seg, unsigned m);
/* What a segment is: where, which target, its geometry. -EINVAL: no such segment. */
struct volume_segment_info {
	uint64_t start, len;
	enum volume_target_type type;
	unsigned layout;                /* md's number (as volume_target_spec) */
	char layout_name[24];           /* "left-symmetric", "n2"; "" when the target has none */
	uint64_t chunk;                 /* bytes; 0: none */
	unsigned nmembers;
	int cls;                        /* enum volume_region_class (regions; else DATA) */
};
int volume_segment_info(const struct volume *v, unsigned seg, struct volume_segment_info *ret);
/*
 * Member m's identity in a pony volume set (its superblock's member UUID):
 * 0, or -ENOENT when the volume is not a set's (a table, an md array).
 */
int volume_member_uuid(const struct volume *v, unsigned seg, unsigned m, uint8_t ret[16]);
/*
 * The member UUID a device's own pony superblock names (either copy): 0,
 * -ENODATA (no pony superblock), -EBADMSG (both copies corrupt). What a
 * client that opens a member by name checks against volume_member_uuid(),
 * so a name that now leads elsewhere is never read or written as that member.
 */
int volume_device_member_uuid(struct bdev *dev, uint8_t ret[16]);

/* Member state. */
enum volume_member_state { VOLUME_MEMBER_OK, VOLUME_MEMBER_FAILED, VOLUME_MEMBER_REBUILDING };
unsigned volume_member_count(const struct volume *v, unsigned seg);
enum volume_member_state volume_member_state(const struct volume *v, unsigned seg, unsigned m);
/* The member's device name (bdev name), NULL when missing. */
const char *volume_member_device(const struct volume *v, unsigned seg, unsigned m);
/* Marks a member faulty: no more I/O goes to it. -EINVAL out of range. */
int volume_fail_member(struct volume *v, unsigned seg, unsigned m);
/*
 * Puts dev (handed over) in place of member m, to be rebuilt: writes reach it
 * at once, reads wait for volume_rebuild(). The old device is freed.
 */
int volume_replace_member(struct volume *v, unsigned seg, unsigned m, struct bdev *dev);

/* Progress of long work: called now and then; a non-zero return stops it (-ECANCELED). */
typedef int (*volume_progress_fn)(uint64_t done, uint64_t total, void *arg);

/*
 * Rebuilds every rebuilding member of seg from the others, from byte
 * from_off of the segment on (a checkpoint), at most rate bytes per second
 * of segment data (0: no limit). I/O may go on meanwhile.
 */
int volume_rebuild(struct volume *v, unsigned seg, uint64_t from_off, uint64_t rate,
		   volume_progress_fn progress, void *arg);
/* The same over only these ranges of seg (bytes of the segment), then the members are working. */
struct volume_range {
	uint64_t off, len;
};
int volume_rebuild_ranges(struct volume *v, unsigned seg, const struct volume_range *ranges,
			  size_t n, uint64_t rate);

/*
 * One inconsistency scrub found: copies or parity that disagree. When the
 * level can tell which member is wrong (raid6 from its P and Q syndromes,
 * as mdadm's raid6check does; three or more copies by majority; a member
 * that failed to read), located is set and member names it; repair
 * rewrites that member alone. raid4/5 and two copies cannot tell: the
 * finding is unlocatable, and scrub leaves it for a layer with checksums
 * (volume_repair.h) rather than guess.
 */
struct volume_mismatch {
	unsigned seg;
	unsigned member;                /* the member blamed (located only) */
	uint64_t dev_off;               /* byte offset on that member (past its data offset) */
	uint64_t len;
	bool located;
	bool repaired;                  /* the blamed member was rewritten */
	uint64_t stripe;                /* raid4/5/6: the stripe; copies: UINT64_MAX */
	uint64_t seg_off, seg_len;      /* the segment's bytes whose redundancy disagrees */
	const char *device;             /* the blamed member's device name, during the call */
};
typedef void (*volume_mismatch_fn)(const struct volume_mismatch *m, void *arg);
/*
 * Reads everything of seg, checks mirrors and parity; reports each finding
 * (struct volume_mismatch); with repair, rewrites the member a finding
 * blames, and nothing else. *ret_count: findings.
 */
int volume_scrub(struct volume *v, unsigned seg, bool repair, uint64_t rate,
		 volume_mismatch_fn report, void *report_arg,
		 volume_progress_fn progress, void *arg, uint64_t *ret_count);
/* The same from byte from_off of the segment on (a checkpoint). */
int volume_scrub_from(struct volume *v, unsigned seg, uint64_t from_off, bool repair,
		      uint64_t rate, volume_mismatch_fn report, void *report_arg,
		      volume_progress_fn progress, void *arg, uint64_t *ret_count);

/*
 * Scrubs [off, off+len) of seg (whole units around it) as volume_scrub_from
 * does, and hands data() each piece whose copies or parity agreed: its
 * bytes as a read returns them, at their offset in the segment, so a layer
 * with checksums checks them without reading everything a second time.
 * Pieces with a finding or a member out, and levels without redundancy
 * (which have nothing to scrub), are not handed: the caller reads those.
 * Parity levels read and check rows without the segment's lock (a row that
 * disagrees is done again under it), so two threads may scrub two spans at
 * once; data() may run with or without the lock, report() runs under it:
 * neither may take a lock a writer of the volume holds while it waits.
 */
typedef void (*volume_scrub_data_fn)(uint64_t seg_off, const uint8_t *data, size_t len,
				     void *arg);
int volume_scrub_span(struct volume *v, unsigned seg, uint64_t off, uint64_t len, bool repair,
		      volume_mismatch_fn report, void *report_arg, volume_scrub_data_fn data,
		      void *data_arg);

/* Bad blocks of a member (an md bad-block log): reads there are reconstructed. */
int volume_member_add_badblock(struct volume *v, unsigned seg, unsigned m,
			       uint64_t dev_off, uint64_t len);

/*
 * Regions: the filesystem RAID API. A filesystem asks for space of a class
 * with its own geometry (metadata mirrored three ways in 64 KiB chunks,
 * data RAID6 in 256 KiB chunks, ...) on one set of member devices; each
 * region is a segment of the volume, laid out one after the other on the
 * members.
 */
enum volume_region_class { VOLUME_CLASS_DATA = 0, VOLUME_CLASS_METADATA = 1 };
struct volume_region_spec {
	enum volume_region_class cls;
	enum volume_target_type type;   /* mirror, striped, raid4/5/6, raid10 */
	unsigned layout;
	uint64_t chunk;
	uint64_t size;                  /* bytes wanted; 0: all the members have left */
};
/*
 * Builds a volume of nregions regions over devs (handed over on success),
 * using [data_offset, data_offset + member_size) of every device.
 * -ENOSPC when they do not fit.
 */
int volume_regions_build(struct bdev **devs, unsigned ndevs, uint64_t data_offset,
			 uint64_t member_size, const struct volume_region_spec *specs,
			 unsigned nregions, struct volume **ret);
/* The first region of a class: where it is and its full-stripe size. -ENOENT if none. */
int volume_region_find(const struct volume *v, enum volume_region_class cls,
		       uint64_t *ret_start, uint64_t *ret_len, uint64_t *ret_full_stripe);
/*
 * The first region of a class as a bdev (a slice of the volume's bdev
 * face, with bdev_read_checked() and bdev_repair()): the filesystem RAID
 * API's view of its region. v stays the caller's and must outlive it.
 * -ENOENT if none.
 */
int volume_region_bdev(struct volume *v, enum volume_region_class cls, struct bdev **ret);

/*
 * Write intent: called before any write to a segment with redundancy lands
 * on its members (for the write-intent bitmap); a negative return fails the
 * write before anything is written.
 */
typedef int (*volume_intent_fn)(uint64_t off, uint64_t len, void *arg);
void volume_set_intent_hook(struct volume *v, volume_intent_fn fn, void *arg);

/*
 * Failure notice: fn runs when a member of a segment turns faulty (an I/O
 * error or volume_fail_member), on the thread that saw it, possibly with
 * the segment locked: it must not call back into the volume.
 */
typedef void (*volume_fail_fn)(unsigned seg, unsigned m, void *arg);
void volume_set_fail_hook(struct volume *v, volume_fail_fn fn, void *arg);

/*
 * Written notice: fn runs after each volume_write and volume_flush has
 * reached the members, before it returns, with no lock of the volume held
 * (a pony volume set saves member failures there, so a write that left a
 * member behind is not acknowledged before the others say so). A negative
 * return fails the call.
 */
typedef int (*volume_written_fn)(void *arg);
void volume_set_written_hook(struct volume *v, volume_written_fn fn, void *arg);

/* Bad ranges of a member of seg (byte offsets past its data start). */
unsigned volume_member_badblocks(const struct volume *v, unsigned seg, unsigned m,
				 uint64_t *offs, uint64_t *lens, unsigned max);
/*
 * With a bad-block log, a member's write error records the range as bad
 * (reads there are reconstructed) instead of failing the whole member.
 */
void volume_enable_badblock_log(struct volume *v, bool on);

/*
 * pony volumes: members that carry pony's own superblock (a copy at each
 * end; docs/volume-format.md) with the volume's UUID, the member's index, the
 * regions, an event counter, member states, a write-intent bitmap, the bad
 * block log and the rebuild checkpoint. A set is an opened pony volume.
 */
struct volume_set;
struct volume_set_params {
	const char *name;
	const struct volume_region_spec *regions;
	unsigned nregions;
	bool assume_clean;              /* skip the initial parity sync (zeroed members) */
	/* The initial sync's progress: bytes of the volume done over its size. */
	volume_progress_fn progress;
	void *progress_arg;
};
/* Writes the superblocks and builds the volume; devs are handed over on success. */
int volume_set_create(struct bdev **devs, unsigned ndevs, const struct volume_set_params *p,
		      struct volume_set **ret);
#define VOLUME_MAX_MEMBERS 64
enum {
	VOLUME_SET_RDONLY = 1,          /* write nothing: no commit, resync or spare; writes: EROFS */
	VOLUME_SET_DEGRADED = 2,        /* may start with members absent (btrfs's -o degraded) */
	/* Every device given is a current member (the volume's running owner
	 * says so, as a mount tells a layout reader): none is refused for an
	 * older event count, which a reader sees while the owner writes the
	 * superblocks one after another. With VOLUME_SET_RDONLY only. */
	VOLUME_SET_CURRENT = 4,
};

struct volume_set_member {
	const char *device;             /* the device given for it (also a refused one); NULL: none */
	enum volume_member_state state;
	uint64_t events;                /* of its own superblock */
	bool stale;                     /* refused: older than the volume (md: "non-fresh") */
	bool truncated;                 /* refused: smaller than the volume's data needs */
	uint64_t size, need;            /* truncated: the device's bytes, and the least it needs */
	uint8_t uuid[16];               /* the member UUID the volume expects at this index */
	unsigned badblocks;
};

/*
 * What assembly found, whether it succeeded or not (names stay valid while
 * the caller holds the devices). Once the superblocks were read (known),
 * it holds the volume's identity and every member as volume_set_member()
 * would describe it: a member is present with a current device that is not
 * failed; absent members are missing (device NULL), stale or truncated.
 */
struct volume_set_assembly {
	unsigned device;                /* the index in devs that an error names */
	bool known;
	uint8_t uuid[16];
	char name[64];
	uint64_t events;
	unsigned nmembers, present;
	unsigned needed;                /* the fewest present members every region runs on */
	enum volume_target_type needed_type;    /* the region that needs them */
	struct volume_set_member members[VOLUME_MAX_MEMBERS];
};

/*
 * Assembles from devs in any order (handed over on success). Errors name a
 * device in ret_asm->device: -EBADMSG both its superblocks are corrupt or it
 * has none (-ENODATA), -EXDEV it belongs to another volume, -EEXIST two
 * devices claim its index. -ENODEV: a region has lost more members than its
 * redundancy (ret_asm: present and needed). -ENXIO: members are absent and
 * flags lack VOLUME_SET_DEGRADED. Stale members (fewer events than the
 * newest superblock, unless VOLUME_SET_CURRENT; or replaced) and truncated
 * ones are refused: left out,
 * marked failed, and named in the log and by volume_set_member(). ret_asm
 * may be NULL.
 */
int volume_set_assemble(struct bdev **devs, unsigned ndevs, unsigned flags,
			struct volume_set **ret, struct volume_set_assembly *ret_asm);
/* The same; an error's device index in *ret_member (NULL: not wanted). */
int volume_set_open(struct bdev **devs, unsigned ndevs, unsigned flags,
		    struct volume_set **ret, unsigned *ret_member);
struct volume *volume_set_volume(struct volume_set *s);
/* "8-4-4-4-12" hex into buf (VOLUME_UUID_STRLEN bytes, NUL included). */
#define VOLUME_UUID_STRLEN 37
void volume_uuid_format(const uint8_t *uuid, char *buf);
struct volume_set_info {
	char name[64];
	uint8_t uuid[16];
	uint64_t events;
	unsigned nmembers;
	bool was_clean;                 /* the last close was clean */
	uint64_t resynced;              /* bytes resynced from the bitmap at open */
	unsigned rebuild_seg;
	uint64_t rebuild_off;           /* checkpoint; UINT64_MAX: none */
	unsigned scrub_seg;
	uint64_t scrub_off;             /* an interrupted scrub's checkpoint; UINT64_MAX: none */
	unsigned nspares;               /* idle hot spares */
	unsigned failed;                /* members not working: failed, missing, stale, truncated */
	unsigned rebuilding;            /* members being rebuilt */
	uint64_t rebuild_done;          /* volume bytes rebuilt so far (of volume_size()) */
};
void volume_set_info(const struct volume_set *s, struct volume_set_info *ret);
/*
 * Whether volume bytes [off, off+len) lie in a region that a read-only
 * assembly of a volume not closed clean has yet to resync: the write-intent
 * bitmap marks it, so writes were in flight there and its copies (or its
 * parity) may disagree until the next writable open resyncs it from the
 * first working copy, as md does. False for a writable set (resynced).
 */
bool volume_set_unsynced(const struct volume_set *s, uint64_t off, uint64_t len);
int volume_set_member(const struct volume_set *s, unsigned m, struct volume_set_member *ret);

int volume_set_fail(struct volume_set *s, unsigned m);
/*
 * Hot spares. volume_set_add_spare() adds dev (handed over on success) as an
 * idle spare: its superblock names it, it takes no I/O. When a member fails
 * (an I/O error, volume_set_fail, or missing at assembly) and a spare is
 * idle, a background worker puts the spare in the member's place and
 * rebuilds it, as md does. A device that is already this volume's spare
 * (by its superblock) but missing from its slot goes back into that slot;
 * -EEXIST: it is in its slot already. -ENOSPC: too small; -E2BIG: spare
 * slots full.
 */
int volume_set_add_spare(struct volume_set *s, struct bdev *dev);
unsigned volume_set_spare_count(const struct volume_set *s);
const char *volume_set_spare_device(const struct volume_set *s, unsigned i);
/* Progress of the background rebuild onto a spare (fn runs on the worker). */
void volume_set_watch(struct volume_set *s, volume_progress_fn fn, void *arg);
/* Waits until the spare worker is idle: the last take-over's result (0: none or done). */
int volume_set_wait(struct volume_set *s);
int volume_set_replace(struct volume_set *s, unsigned m, struct bdev *dev);
/*
 * Re-adds dev, member m as it left (its superblock names this volume, index
 * and member UUID), rebuilding only what the write-intent bitmap marks as
 * written since; the volume stays usable. -ESTALE: it left before the
 * bitmap was last zeroed (a full rebuild is needed: volume_set_replace);
 * -EXDEV: m was replaced since; -EINVAL: not this volume's member m;
 * -EBUSY: m works. *ret_resynced: the bytes rebuilt.
 */
int volume_set_readd(struct volume_set *s, unsigned m, struct bdev *dev, uint64_t rate,
		     uint64_t *ret_resynced);
/*
 * Automatic re-add (`--auto-readd`): a thread that, while s is open, tries
 * each NBD URI of names (the devices s was opened from; paths are skipped)
 * whose member failed, with backoff (0.5 s, doubling to 8 s), and re-adds
 * the export when its superblock names a failed member of s, as
 * volume_set_readd() does (the volume stays usable; refusals are logged
 * once). Connecting takes at most timeout_ms (0: 30 s). Start it after any
 * fork; stop it before volume_set_close(). -EROFS: s is read-only.
 */
struct volume_autoreadd;
int volume_autoreadd_start(struct volume_set *s, const char *const *names, unsigned n,
			   unsigned timeout_ms, uint64_t rate, struct volume_autoreadd **ret);
void volume_autoreadd_stop(struct volume_autoreadd *a);       /* NULL: nothing */
/* The device assembly refused as member m for being stale (NULL: none); the set's. */
struct bdev *volume_set_refused_device(const struct volume_set *s, unsigned m);
/* Rebuilds rebuilding members from the checkpoint on, saving it as it goes. */
int volume_set_rebuild(struct volume_set *s, uint64_t rate, volume_progress_fn progress,
		       void *arg);
/* Scrubs from the saved checkpoint on (if a scrub was stopped), saving it as it goes. */
int volume_set_scrub(struct volume_set *s, bool repair, uint64_t rate,
		     volume_mismatch_fn report, void *report_arg,
		     volume_progress_fn progress, void *arg, uint64_t *ret_count);
/* Saves member states and bad blocks now (events + 1). */
int volume_set_commit(struct volume_set *s);
/* Flushes, marks the volume clean, frees everything. NULL: nothing. */
int volume_set_close(struct volume_set *s);
/* Frees without writing anything: what a crash leaves behind (for tests). */
void volume_set_abandon(struct volume_set *s);
static inline void volume_set_closep(struct volume_set **s) { volume_set_close(*s); }

/* md/dm layout names ("left-symmetric", "raid6_zr", "n2", ...) to md's layout numbers. */
int volume_layout_from_name(unsigned level, const char *name, unsigned *ret_layout);

/* "linear", "raid6", ...; and back (-EINVAL). */
const char *volume_target_name(enum volume_target_type t);
int volume_target_from_name(const char *name, enum volume_target_type *ret);

/*
 * A table in device-mapper's syntax, one segment a line ("START LEN TARGET
 * ARGS", sectors): linear, striped, mirror (core log), raid (raid1, raid4,
 * raid5_la/ra/ls/rs/n/0, raid6_zr/nr/nc/n_6/la_6/ra_6/ls_6/rs_6, raid10
 * with raid10_copies/raid10_format), zero, error. Devices are paths, opened
 * through open_dev (NULL: bdev_file_open read-write). -EINVAL with the line
 * number in *ret_line on a syntax error.
 */
typedef int (*volume_open_fn)(const char *path, struct bdev **ret, void *arg);
int volume_table_parse(const char *text, volume_open_fn open_dev, void *arg,
		       struct volume **ret, unsigned *ret_line);
/* The volume's table in the same syntax (device names from bdev->name); malloc'd. */
char *volume_table_format(const struct volume *v);

/*
 * md v1.x arrays. volume_md_assemble() reads the superblocks (1.0, 1.1 or
 * 1.2) of devs (handed over on success), checks they are one array, orders
 * members by role, loads each bad-block log, and builds the volume.
 * Missing members up to the redundancy are allowed (degraded), except as
 * md allows them: a raid4/5/6 not shut down clean with a member missing is
 * refused (-EUCLEAN) unless md's write-intent bitmap shows no write in
 * flight. pony assembles md arrays to read them and never resyncs one; the
 * bitmap decides only whether a degraded read could meet stale parity.
 */
struct volume_md_info {
	unsigned level, layout, raid_disks;
	uint64_t chunk, dev_size, array_size;
	uint8_t uuid[16];
	char name[33];
	uint64_t events;
	unsigned minor_version;         /* 0, 1, 2: where the superblock sits */
	unsigned badblocks;             /* bad-block log entries loaded */
	bool dirty;                     /* not shut down clean (resync_offset set) */
	uint64_t bitmap_chunk;          /* md's write-intent bitmap: bytes a bit; 0: none */
	unsigned bitmap_dirty;          /* its set bits (chunks with writes in flight) */
};
int volume_md_assemble(struct bdev **devs, unsigned ndevs, struct volume **ret,
		       struct volume_md_info *ret_info);

/*
 * Makes a new md array of devs: writes v1.2 superblocks (data 1 MiB in,
 * clean, no bitmap) that Linux's md assembles, then assembles it as
 * volume_md_assemble() does. level 0/1/4/5/6/10, layout as md numbers it,
 * chunk in bytes. The data is not initialised: write it all, or start from
 * zeroed members (whose parity is already right).
 */
int volume_md_create(struct bdev **devs, unsigned ndevs, unsigned level, unsigned layout,
		     uint64_t chunk, const char *name, struct volume **ret,
		     struct volume_md_info *ret_info);

#endif
