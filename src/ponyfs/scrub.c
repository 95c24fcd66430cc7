/*
 * scrub.c - the passive scrub (docs/scrub.md): a thread of the mount that
 * walks the volume in volume order, the metadata region and then the data
 * region, a step (1 MiB, whole stripes) at a time. Each step is checked
 * twice: by the volume (volume_scrub_from() over that range: mirrors and
 * parity agree, a member the level can blame rewritten), then, in the data
 * region, every written block of every file against its CRC32C, a bad one
 * repaired from redundancy (bdev_repair(), as a read does) or recorded as
 * lost with the paths of its file. Rate-limited, and it backs off while
 * reads are in flight. Its position and counts live in the meta row
 * 'scrub', committed with the filesystem's transactions, so a pass goes
 * on where it was after an unmount or a crash.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pony/volume.h"

#define STEP (1ull << 20)               /* bytes checked at once */
#define SAVE_EVERY (64ull << 20)        /* bytes between two saves of the position */
#define YIELD_MAX_MS 50                 /* longest back-off per step for foreground reads */
#define SCRUB_WORKERS 2                 /* threads of a pass: the machine's two cores */

/* The pass; its fields are protected by fs->lock, stop is atomic. */
struct ponyfs_scrub {
	pthread_t thread;
	bool started;                   /* thread to join */
	bool stop;
	uint32_t state;                 /* enum vfs_scrub_state */
	int error;
	uint64_t rate, pos, total, checked, repaired, lost;
	uint64_t t0_ns, t_end_ns;
	uint64_t yielded_ns;            /* atomic: this run's workers' waits for foreground reads */
	/* The walk the workers share (scrub_walk()): pass bytes. */
	uint64_t next;                  /* the next step handed out */
	uint64_t busy[SCRUB_WORKERS];   /* each worker's step; UINT64_MAX: none */
	uint64_t walk_from, walk_t0;    /* where and when this run began (the rate) */
	uint64_t saved;                 /* the position last saved */
	int walk_error;                 /* a worker's: the others stop */
};

/* A range of the volume the pass walks, in volume order. */
struct scrub_range {
	uint64_t start, len;
	bool data;                      /* the data region: files' checksums too */
	int seg;                        /* the volume's segment; -1 without a volume */
};

/* The metadata and data regions, in volume order: their number. */
static unsigned scrub_ranges(const struct ponyfs *fs, struct scrub_range r[2])
{
	struct volume_segment_info mi, di;
	unsigned ms, ds;

	if (!fs->volume) {
		r[0] = (struct scrub_range){ 0, fs->sb.meta_bytes, false, -1 };
		r[1] = (struct scrub_range){ fs->sb.meta_bytes, fs->sb.data_blocks * BS, true, -1 };
		return 2;
	}
	if (ponyfs_region_segment(fs, VOLUME_CLASS_METADATA, &ms, &mi) < 0 ||
	    ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &ds, &di) < 0)
		return 0;
	r[0] = (struct scrub_range){ mi.start, mi.len, false, (int)ms };
	r[1] = (struct scrub_range){ di.start, MIN(di.len, fs->sb.data_blocks * BS), true, (int)ds };
	if (r[0].start > r[1].start) {
		struct scrub_range t = r[0];

		r[0] = r[1];
		r[1] = t;
	}
	return 2;
}

/* -- the position, kept in the meta row 'scrub' -------------------------------- */

static int position_load_locked(struct ponyfs *fs, struct ponyfs_scrub *sc)
{
	sqlite3_stmt *s;
	int r = ponyfs_prepare(fs, "SELECT value FROM meta WHERE key = 'scrub'", &s);
	const char *text;

	if (r < 0)
		return r;
	r = ponyfs_step_row(fs, s);
	text = r > 0 ? (const char *)sqlite3_column_text(s, 0) : NULL;
	if (!text || sscanf(text, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &sc->pos,
			    &sc->checked, &sc->repaired, &sc->lost) != 4)
		sc->pos = sc->checked = sc->repaired = sc->lost = 0;
	sqlite3_reset(s);
	return r < 0 ? r : 0;
}

/* In the open transaction: the next commit makes it durable. */
static int position_save_locked(struct ponyfs *fs, const struct ponyfs_scrub *sc)
{
	char text[128];
	sqlite3_stmt *s;
	int r;

	if (fs->read_only || fs->broken)
		return 0;
	snprintf(text, sizeof(text), "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, sc->pos,
		 sc->checked, sc->repaired, sc->lost);
	r = ponyfs_meta_reserve_locked(fs, &(struct ponyfs_cost){ .rows = 1 }, NULL);
	if (r >= 0)
		r = ponyfs_txn_begin_locked(fs);
	if (r >= 0)
		r = ponyfs_prepare(fs, "INSERT OR REPLACE INTO meta (key, value) VALUES ('scrub', ?1)",
				   &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, text, -1, SQLITE_TRANSIENT);
	return ponyfs_step_done(fs, s);
}

/* -- one step ------------------------------------------------------------------ */

/* The volume's findings of one step, kept until its lock is given back. */
#define FINDINGS_MAX 64
struct findings {
	unsigned n;
	struct volume_mismatch m[FINDINGS_MAX];
	uint64_t end;                   /* the step's end in the segment */
};

/* Called with the segment locked: fs->lock must not be taken here (a
 * locked read holds it while it waits for the segment). */
static void scrub_found(const struct volume_mismatch *mm, void *arg)
{
	struct findings *f = arg;

	if (f->n < FINDINGS_MAX)
		f->m[f->n++] = *mm;
}

/* A volume finding: counted, recorded and logged once with what it hits. */
static void finding_add_locked(struct ponyfs *fs, const struct volume_mismatch *mm)
{
	struct ponyfs_bad b = { .source = VFS_BAD_SCRUB, .repaired = mm->repaired,
				.member = mm->located ? mm->member : VFS_NO_MEMBER,
				.len = mm->located ? mm->len : mm->seg_len, .row = !mm->located };
	struct volume_segment_info seg;
	char text[640];

	if (volume_segment_info(fs->volume, mm->seg, &seg) < 0)
		return;
	b.vol_off = seg.start + mm->seg_off;
	b.member_offset = volume_member_start(fs->volume, mm->seg, mm->member) + mm->dev_off;
	if (mm->repaired)
		fs->scrub->repaired += DIV_ROUND_UP(mm->len, BS);
	if (!ponyfs_bad_add_locked(fs, &b))
		return;
	if (mm->located) {
		ponyfs_bad_describe_locked(fs, &b, text, sizeof(text));
		ponyfs_log(fs, mm->repaired ? LOG_WARNING : LOG_ERR, "scrub: member %u (%s) bytes "
			   "%" PRIu64 "+%" PRIu64 " disagreed with the volume's redundancy: %s; holds %s",
			   mm->member, volume_member_device(fs->volume, mm->seg, mm->member) ?: "missing",
			   b.member_offset, mm->len, mm->repaired ? "rewritten" : "not rewritten", text);
	} else {
		ponyfs_log(fs, LOG_WARNING, "scrub: volume bytes %" PRIu64 "+%" PRIu64 ": copies or "
			   "parity disagree and the level cannot tell which member is wrong (file "
			   "blocks there are checked against their checksums next)", b.vol_off,
			   mm->seg_len);
	}
}

/*
 * The checksums of a data step's listed blocks, taken from the bytes the
 * volume's check read and found consistent, while they are still in the
 * cache (no copy of them is made).
 */
struct step_data {
	uint64_t seg_off, len;          /* the step, in the segment */
	uint64_t listed[STEP / BS / 64];  /* blocks of the step a file has written */
	uint64_t covered[STEP / BS / 64]; /* listed blocks whose crc[] the volume's bytes gave */
	uint32_t crc[STEP / BS];
};

static bool block_bit(const uint64_t *bits, uint64_t b)
{
	return (bits[b / 64] >> (b % 64)) & 1;
}

/* Called with or without the segment's lock (volume_scrub_span()): takes no lock. */
static void step_data_take(uint64_t seg_off, const uint8_t *data, size_t len, void *arg)
{
	struct step_data *d = arg;
	uint64_t from = MAX(seg_off, d->seg_off), to = MIN(seg_off + len, d->seg_off + d->len);

	/* Whole blocks only (a piece is whole chunks, so always here). */
	from = DIV_ROUND_UP(from - d->seg_off, BS);
	to = to > d->seg_off ? (to - d->seg_off) / BS : 0;
	for (uint64_t b = from; b < to; b++) {
		if (!block_bit(d->listed, b))
			continue;       /* free or unwritten: no checksum to check */
		d->crc[b] = util_crc32c(0, data + (d->seg_off + b * BS - seg_off), BS);
		d->covered[b / 64] |= 1ull << (b % 64);
	}
}

/*
 * Mirrors and parity of [off, off+len) of the range's segment, its findings
 * in f (recorded by the caller, with fs->lock: never taken here, where the
 * caller may hold the reuse lock); with d, the bytes found consistent.
 */
static int step_volume(struct ponyfs *fs, const struct scrub_range *rg, uint64_t off, uint64_t len,
		       struct findings *f, struct step_data *d)
{
	int r;

	f->n = 0;
	if (rg->seg < 0)
		return 0;
	r = volume_scrub_span(fs->volume, (unsigned)rg->seg, off - rg->start, len, true,
			      scrub_found, f, d ? step_data_take : NULL, d);
	return r == -EOPNOTSUPP ? 0 : r;
}

static void findings_record(struct ponyfs *fs, const struct findings *f)
{
	pthread_mutex_lock(&fs->lock);
	for (unsigned i = 0; i < f->n; i++)
		finding_add_locked(fs, &f->m[i]);
	pthread_mutex_unlock(&fs->lock);
}

/*
 * Whether copies of data block b disagree and the volume could not tell
 * which is wrong (two copies): then the block's checksum decides, even
 * when the copy read first is the good one.
 */
static bool copies_suspect(const struct ponyfs *fs, const struct scrub_range *rg,
			   const struct findings *f, uint64_t b)
{
	uint64_t at = b * BS;

	for (unsigned i = 0; i < f->n; i++)
		if (!f->m[i].located && f->m[i].stripe == UINT64_MAX &&
		    at < f->m[i].seg_off + f->m[i].seg_len && f->m[i].seg_off < at + BS)
			return true;
	return false;
}

/* A written block of a file the step holds. */
struct scrub_block { uint64_t pblock, ino, fblk; uint32_t crc; bool unreadable, suspect; };

/* The written blocks of [b0, b1) with their checksums, in block order; their count. */
static int64_t step_blocks_locked(struct ponyfs *fs, uint64_t b0, uint64_t b1,
				  struct scrub_block *out, size_t max)
{
	sqlite3_stmt *s;
	int64_t n = 0;
	int r = ponyfs_prepare(fs, "SELECT ino, foff, nblocks, pblock, csums, flags FROM extents "
			       "WHERE pblock < ?2 AND pblock >= (SELECT coalesce(max(pblock), 0) "
			       "FROM extents WHERE pblock <= ?1) ORDER BY pblock", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)b0);
	sqlite3_bind_int64(s, 2, (int64_t)b1);
	while ((r = ponyfs_step_row(fs, s)) > 0) {
		uint64_t ino = (uint64_t)sqlite3_column_int64(s, 0);
		uint64_t foff = (uint64_t)sqlite3_column_int64(s, 1);
		uint64_t nb = (uint64_t)sqlite3_column_int64(s, 2);
		uint64_t p = (uint64_t)sqlite3_column_int64(s, 3);
		const uint8_t *cs = sqlite3_column_blob(s, 4);
		size_t cl = (size_t)sqlite3_column_bytes(s, 4);
		int64_t flags = sqlite3_column_int64(s, 5);
		size_t stride = ponyfs_csum_stride((int)flags);

		if (flags & PONYFS_EXT_UNWRITTEN)
			continue;
		for (uint64_t i = 0; i < nb; i++) {
			if (p + i < b0 || p + i >= b1 || (i + 1) * stride > cl || (size_t)n >= max)
				continue;
			out[n++] = (struct scrub_block){ p + i, ino, foff + i,
							 util_get_le32(cs + i * stride), false, false };
		}
	}
	sqlite3_reset(s);
	return r < 0 ? r : n;
}

/* The member a plain read of data block pblock reads first (its first copy). */
static int first_member(const struct ponyfs *fs, uint64_t pblock)
{
	struct volume_piece p;

	if (!fs->volume || volume_map(fs->volume, ponyfs_volume_byte(fs, pblock), 1, &p, 1) < 1)
		return -1;
	return p.role == VOLUME_PIECE_NONE ? -1 : (int)p.member;
}

/*
 * One bad block: repaired from redundancy or lost, unless its extent
 * changed meanwhile. A suspect (copies disagree, the copy read first
 * passed) was bad only if bdev_repair() blames another member than the
 * first copy: it rewrites the first member whose absence reads right.
 */
static void block_bad_locked(struct ponyfs *fs, const struct scrub_block *b, uint8_t *buf,
			     bool read_ok)
{
	struct scrub_block now;
	int m;

	if (step_blocks_locked(fs, b->pblock, b->pblock + 1, &now, 1) != 1 || now.ino != b->ino ||
	    now.fblk != b->fblk || now.crc != b->crc)
		return;         /* rewritten or freed since it was read */
	m = bdev_repair(fs->data, buf, BS, b->pblock * BS, b->crc);
	if (read_ok && (m < 0 || m == first_member(fs, b->pblock)))
		return;         /* both copies of this block were right */
	fs->stats.csum_errors++;
	if (m >= 0) {
		fs->stats.csum_repaired++;
		fs->scrub->repaired++;
	} else {
		fs->scrub->lost++;
	}
	ponyfs_bad_block_locked(fs, VFS_BAD_SCRUB_CSUM, b->ino, b->fblk, b->pblock, m);
}

/* n consecutive blocks into buf; on an error each on its own, so only the
 * ones that cannot be read are taken for bad. */
static void step_read_run(struct ponyfs *fs, uint8_t *buf, struct scrub_block *blocks, int64_t n)
{
	if (bdev_pread(fs->data, buf, (size_t)n * BS, blocks[0].pblock * BS) >= 0)
		return;
	for (int64_t i = 0; i < n; i++)
		if (bdev_pread(fs->data, buf + i * BS, BS, blocks[i].pblock * BS) < 0)
			blocks[i].unreadable = true;
}

/*
 * A step of the data region: the volume's check, then every written block
 * against its checksum. The blocks are listed first and the reuse lock held
 * until they are read (read.c), so none is reused for other data between
 * the list and the bytes; the checksums are taken from the bytes the
 * volume's check read where it found them consistent (step_data_take()),
 * and the blocks are read again only elsewhere (a piece with a finding, a
 * member out, a level without redundancy).
 */
static int step_data_region(struct ponyfs *fs, const struct scrub_range *rg, uint64_t off,
			    uint64_t len, struct findings *f, uint8_t *buf,
			    struct scrub_block *blocks, struct step_data *d)
{
	uint64_t b0 = (off - rg->start) / BS, nb = len / BS;
	int64_t n;
	int r;

	memset(d, 0, sizeof(*d));
	d->seg_off = b0 * BS;
	d->len = nb * BS;
	pthread_mutex_lock(&fs->lock);
	n = step_blocks_locked(fs, b0, b0 + nb, blocks, STEP / BS);
	if (n < 0) {
		pthread_mutex_unlock(&fs->lock);
		return (int)n;
	}
	for (int64_t i = 0; i < n; i++)
		d->listed[(blocks[i].pblock - b0) / 64] |= 1ull << ((blocks[i].pblock - b0) % 64);
	pthread_rwlock_rdlock(&fs->reuse_lock);
	pthread_mutex_unlock(&fs->lock);
	r = step_volume(fs, rg, off, len, f, n > 0 ? d : NULL);
	for (int64_t i = 0; r >= 0 && i < n;) {
		int64_t j = i;

		if (block_bit(d->covered, blocks[i].pblock - b0)) {
			i++;
			continue;
		}
		/* A run of blocks the check did not hand over: read it. */
		while (j + 1 < n && blocks[j + 1].pblock == blocks[j].pblock + 1 &&
		       !block_bit(d->covered, blocks[j + 1].pblock - b0))
			j++;
		step_read_run(fs, buf + (blocks[i].pblock - b0) * BS, blocks + i, j - i + 1);
		i = j + 1;
	}
	pthread_rwlock_unlock(&fs->reuse_lock);
	findings_record(fs, f);
	if (r < 0 || n == 0)
		return r;
	pthread_mutex_lock(&fs->lock);
	for (int64_t i = 0; i < n; i++) {
		uint64_t b = blocks[i].pblock - b0;
		uint8_t *at = buf + b * BS;     /* read here, or bdev_repair()'s room */
		bool ok = !blocks[i].unreadable &&
			  (block_bit(d->covered, b) ? d->crc[b] : util_crc32c(0, at, BS)) ==
			  blocks[i].crc;

		fs->scrub->checked++;
		if (!ok || copies_suspect(fs, rg, f, blocks[i].pblock))
			block_bad_locked(fs, &blocks[i], at, ok);
	}
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* -- the threads --------------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000) };

	nanosleep(&ts, NULL);
}

/* Whether the foreground reads: one under way, or one ended in the last 2 ms
 * (a reader waiting on each read before the next leaves only short gaps). */
static bool foreground_busy(struct ponyfs *fs)
{
	return __atomic_load_n(&fs->reads_in_flight, __ATOMIC_RELAXED) ||
	       util_now_ns() - __atomic_load_n(&fs->read_end_ns, __ATOMIC_RELAXED) < 2000000;
}

/*
 * Waits while the foreground reads: the pass's own thread for a bounded
 * while (a busy mount still progresses), the helper for as long as it
 * reads, so a busy mount has a core the scrub leaves alone.
 */
static void scrub_yield(struct ponyfs *fs, struct ponyfs_scrub *sc, unsigned worker)
{
	uint64_t t0 = util_now_ns();
	unsigned ms = 0;

	for (; (worker > 0 || ms < YIELD_MAX_MS) && foreground_busy(fs) &&
	       !__atomic_load_n(&sc->stop, __ATOMIC_RELAXED); ms++)
		sleep_ns(1000000);
	if (ms)
		__atomic_add_fetch(&sc->yielded_ns, util_now_ns() - t0, __ATOMIC_RELAXED);
}

/* The lowest byte of the pass not yet done: none below it is left. Under fs->lock. */
static uint64_t walk_done_to_locked(const struct ponyfs_scrub *sc)
{
	uint64_t pos = sc->next;

	for (unsigned w = 0; w < SCRUB_WORKERS; w++)
		pos = MIN(pos, sc->busy[w]);
	return pos;
}

/*
 * The next step for a worker, under fs->lock: its range and pass byte, or
 * false at the end of the pass, on a stop or another worker's error. With
 * a rate, a step is handed out no sooner than the rate allows for the bytes
 * handed out before it (*wait_ns set, false returned: sleep and ask again).
 */
static bool walk_next_locked(struct ponyfs_scrub *sc, const struct scrub_range *rg, unsigned nr,
			     unsigned worker, uint64_t *ret_at, unsigned *ret_range,
			     uint64_t *wait_ns)
{
	uint64_t base = 0;

	*wait_ns = 0;
	if (__atomic_load_n(&sc->stop, __ATOMIC_RELAXED) || sc->walk_error)
		return false;
	if (sc->rate) {
		uint64_t due = sc->walk_t0 + (sc->next - sc->walk_from) * 1000000000ull / sc->rate;
		uint64_t now = util_now_ns();

		if (due > now) {
			*wait_ns = due - now;
			return false;
		}
	}
	for (unsigned i = 0; i < nr; base += rg[i].len, i++) {
		if (sc->next >= base + rg[i].len)
			continue;
		*ret_range = i;
		*ret_at = sc->next - base;
		sc->busy[worker] = sc->next;
		sc->next += MIN(STEP, rg[i].len - *ret_at);
		return true;
	}
	return false;
}

/* One worker's buffers and result. */
struct scrub_worker {
	struct ponyfs *fs;
	unsigned index;                 /* 0: the pass's own thread */
	pthread_t thread;
	int r;
};

/* Takes steps until the pass ends, stops or fails: 0 or -errno. */
static int scrub_work(struct ponyfs *fs, struct ponyfs_scrub *sc, unsigned worker)
{
	uint8_t *buf = util_aligned_alloc(STEP);
	struct scrub_block *blocks = malloc(STEP / BS * sizeof(*blocks));
	struct findings *f = malloc(sizeof(*f));
	struct step_data *d = malloc(sizeof(*d));
	struct scrub_range rg[2];
	unsigned nr = scrub_ranges(fs, rg);
	int r = buf && blocks && f && d ? 0 : -ENOMEM;

	while (r >= 0) {
		uint64_t at, len, off, wait_ns;
		unsigned i;
		bool got;

		scrub_yield(fs, sc, worker);
		pthread_mutex_lock(&fs->lock);
		got = walk_next_locked(sc, rg, nr, worker, &at, &i, &wait_ns);
		pthread_mutex_unlock(&fs->lock);
		if (!got && wait_ns) {
			sleep_ns(MIN(wait_ns, 100000000ull));
			continue;
		}
		if (!got)
			break;
		len = MIN(STEP, rg[i].len - at);
		off = rg[i].start + at;
		if (rg[i].data) {
			r = step_data_region(fs, &rg[i], off, len, f, buf, blocks, d);
		} else {
			r = step_volume(fs, &rg[i], off, len, f, NULL);
			findings_record(fs, f);
		}
		pthread_mutex_lock(&fs->lock);
		if (r < 0) {            /* busy[] keeps the step: the position stays short of it */
			sc->walk_error = sc->walk_error ?: r;
		} else {
			sc->busy[worker] = UINT64_MAX;
			if (!rg[i].data)
				sc->checked += len / BS;
			sc->pos = walk_done_to_locked(sc);
			if (sc->pos - sc->saved >= SAVE_EVERY) {
				position_save_locked(fs, sc);
				sc->saved = sc->pos;
			}
		}
		pthread_mutex_unlock(&fs->lock);
	}
	free(buf);
	free(blocks);
	free(f);
	free(d);
	return r;
}

static void *scrub_helper(void *arg)
{
	struct scrub_worker *w = arg;

	w->r = scrub_work(w->fs, w->fs->scrub, w->index);
	return NULL;
}

/*
 * The pass: its own thread and a helper take steps in volume order from one
 * walk, so one reads and checks while the other does (the volume checks a
 * row without its lock, volume_scrub_span()). The position is the lowest
 * step not yet done, so a stop or a crash never skips one.
 */
static int scrub_walk(struct ponyfs *fs, struct ponyfs_scrub *sc)
{
	struct scrub_worker helpers[SCRUB_WORKERS - 1];
	int r;

	pthread_mutex_lock(&fs->lock);
	sc->next = sc->walk_from = sc->saved = sc->pos;
	sc->walk_t0 = util_now_ns();
	sc->walk_error = 0;
	for (unsigned w = 0; w < SCRUB_WORKERS; w++)
		sc->busy[w] = UINT64_MAX;
	pthread_mutex_unlock(&fs->lock);
	for (unsigned w = 0; w < SCRUB_WORKERS - 1; w++) {
		helpers[w] = (struct scrub_worker){ .fs = fs, .index = w + 1 };
		if (pthread_create(&helpers[w].thread, NULL, scrub_helper, &helpers[w]))
			helpers[w].index = 0;   /* none: this thread does it all */
	}
	r = scrub_work(fs, sc, 0);
	for (unsigned w = 0; w < SCRUB_WORKERS - 1; w++) {
		if (!helpers[w].index)
			continue;
		pthread_join(helpers[w].thread, NULL);
		r = r < 0 ? r : helpers[w].r;
	}
	pthread_mutex_lock(&fs->lock);
	sc->pos = walk_done_to_locked(sc);
	r = sc->walk_error ?: r;
	if (r >= 0 && __atomic_load_n(&sc->stop, __ATOMIC_RELAXED) && sc->pos < sc->total)
		r = -ECANCELED;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static void *scrub_main(void *arg)
{
	struct ponyfs *fs = arg;
	struct ponyfs_scrub *sc = fs->scrub;
	int r = scrub_walk(fs, sc);

	pthread_mutex_lock(&fs->lock);
	sc->t_end_ns = util_now_ns();
	if (r == -ECANCELED) {
		sc->state = VFS_SCRUB_STOPPED;
	} else if (r < 0) {
		sc->state = VFS_SCRUB_FAILED;
		sc->error = r;
		ponyfs_log(fs, LOG_ERR, "scrub failed at volume byte %" PRIu64 ": %s", sc->pos,
			   strerror(-r));
	} else {
		sc->state = VFS_SCRUB_DONE;
		sc->pos = sc->total;
		ponyfs_log(fs, LOG_NOTICE, "scrub done: %" PRIu64 " blocks checked, %" PRIu64
			   " repaired, %" PRIu64 " lost", sc->checked, sc->repaired, sc->lost);
	}
	position_save_locked(fs, sc);
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* The pass's size: both regions. */
static uint64_t scrub_total(const struct ponyfs *fs)
{
	struct scrub_range rg[2];
	unsigned n = scrub_ranges(fs, rg);
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t += rg[i].len;
	return t;
}

static int scrub_start_locked(struct ponyfs *fs, struct ponyfs_scrub *sc, uint64_t rate)
{
	int r;

	if (sc->state == VFS_SCRUB_RUNNING)
		return -EBUSY;
	if (fs->read_only)
		return -EROFS;
	if (sc->started) {              /* a finished thread: reaped before a new one */
		pthread_mutex_unlock(&fs->lock);
		pthread_join(sc->thread, NULL);
		pthread_mutex_lock(&fs->lock);
		sc->started = false;
	}
	sc->total = scrub_total(fs);
	r = position_load_locked(fs, sc);
	if (r < 0)
		return r;
	if (sc->pos >= sc->total)       /* the last pass was done: a new one */
		sc->pos = sc->checked = sc->repaired = sc->lost = 0;
	sc->rate = rate;
	sc->stop = false;
	sc->error = 0;
	sc->state = VFS_SCRUB_RUNNING;
	sc->t0_ns = util_now_ns();
	sc->yielded_ns = 0;
	r = -pthread_create(&sc->thread, NULL, scrub_main, fs);
	if (r < 0) {
		sc->state = VFS_SCRUB_FAILED;
		return r;
	}
	sc->started = true;
	ponyfs_log(fs, LOG_NOTICE, "scrub started at volume byte %" PRIu64 " of %" PRIu64
		   " (rate %" PRIu64 " bytes/s, 0: no limit)", sc->pos, sc->total, rate);
	return 0;
}

/* Stops the thread (fs->lock not held) and waits for it. */
static void scrub_join(struct ponyfs *fs)
{
	struct ponyfs_scrub *sc = fs->scrub;
	pthread_t thread;
	bool started;

	pthread_mutex_lock(&fs->lock);
	started = sc && sc->started;
	if (started) {          /* a start meanwhile makes a thread of its own */
		__atomic_store_n(&sc->stop, true, __ATOMIC_RELAXED);
		sc->started = false;
		thread = sc->thread;
	}
	pthread_mutex_unlock(&fs->lock);
	if (started)
		pthread_join(thread, NULL);
}

static void status_locked(struct ponyfs *fs, struct ponyfs_scrub *sc, struct vfs_scrub *s)
{
	if (sc->state == VFS_SCRUB_IDLE && !fs->read_only) {
		sc->total = scrub_total(fs);
		if (position_load_locked(fs, sc) >= 0 && sc->pos)
			sc->state = sc->pos >= sc->total ? VFS_SCRUB_DONE : VFS_SCRUB_STOPPED;
	}
	s->state = sc->state;
	s->rate = sc->rate;
	s->position = sc->pos;
	s->total = sc->total;
	s->checked = sc->checked;
	s->repaired = sc->repaired;
	s->lost = sc->lost;
	s->error = sc->error;
	s->yielded_ms = __atomic_load_n(&sc->yielded_ns, __ATOMIC_RELAXED) / 1000000;
	s->elapsed_ms = sc->t0_ns ? ((sc->state == VFS_SCRUB_RUNNING ? util_now_ns() : sc->t_end_ns) -
				     sc->t0_ns) / 1000000 : 0;
}

int ponyfs_scrub(struct vfs *v, struct vfs_scrub *s)
{
	struct ponyfs *fs = ponyfs_of(v);
	int r = 0;

	if (s->op == VFS_SCRUB_STOP)
		scrub_join(fs);
	pthread_mutex_lock(&fs->lock);
	if (!fs->scrub && !(fs->scrub = calloc(1, sizeof(*fs->scrub))))
		r = -ENOMEM;
	else if (fs->shut_down)
		r = -EIO;
	else if (s->op == VFS_SCRUB_START)
		r = scrub_start_locked(fs, fs->scrub, s->rate);
	else if (s->op != VFS_SCRUB_STATUS && s->op != VFS_SCRUB_STOP)
		r = -EINVAL;
	if (r >= 0)
		status_locked(fs, fs->scrub, s);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

void ponyfs_scrub_stop(struct ponyfs *fs)
{
	scrub_join(fs);
	free(fs->scrub);
	fs->scrub = NULL;
}
