/*
 * target_mirror.c - the copy targets: mirror (md raid1, dm mirror: every
 * device holds everything) and raid10 (md's near/far/offset copies). Reads
 * take the first working copy and rewrite copies that failed to read; writes
 * go to every working copy; rebuild copies from a good one. Scrub compares
 * the copies and lets a strict majority outvote the rest; two copies that
 * disagree cannot say which is right, and are left to the filesystem.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

#define MIRROR_UNIT (1u << 20)
#define COPIES_MAX 16

static int copies_read(struct volume_seg *s, const struct volume_place *c, uint8_t *buf,
		       size_t len)
{
	bool retry[COPIES_MAX] = { false };

	for (unsigned i = 0; i < c->ncopies; i++) {
		bool was_ok = volume_mstate(s, c->disk[i]) == VOLUME_MEMBER_OK;

		if (volume_mread(s, c->disk[i], buf, len, c->dev_off[i]) < 0) {
			retry[i] = was_ok;
			continue;
		}
		/* A copy that failed to read is rewritten from this one (md's fix-read-error). */
		for (unsigned j = 0; j < i; j++)
			if (retry[j])
				volume_mwrite(s, c->disk[j], buf, len, c->dev_off[j]);
		return 0;
	}
	return -EIO;
}

static int copies_write(struct volume_seg *s, const struct volume_place *c, const uint8_t *buf,
			size_t len)
{
	struct volume_batch batch;
	unsigned written = 0, idx[COPIES_MAX];
	bool tried[COPIES_MAX];

	/* Under the segment's lock: concurrent writes to one block reach every
	 * copy in the same order, and the bad lists change one writer at a time. */
	pthread_mutex_lock(&s->lock);
	volume_batch_init(&batch, s);
	for (unsigned i = 0; i < c->ncopies; i++) {
		tried[i] = volume_mstate(s, c->disk[i]) != VOLUME_MEMBER_FAILED;
		if (tried[i])
			idx[i] = volume_batch_add(&batch, c->disk[i], true, (void *)buf, len,
						  c->dev_off[i]);
	}
	volume_batch_run(&batch);
	for (unsigned i = 0; i < c->ncopies; i++)
		written += tried[i] && volume_batch_result(&batch, idx[i]) == 0 &&
			   volume_mstate(s, c->disk[i]) != VOLUME_MEMBER_FAILED;
	volume_batch_done(&batch);
	pthread_mutex_unlock(&s->lock);
	return written ? 0 : -EIO;
}

/* Copies that hold member m's data are rebuilt from the first good one. */
static int copies_rebuild(struct volume_seg *s, const struct volume_place *c, unsigned m,
			  size_t len, uint8_t *tmp)
{
	for (unsigned i = 0; i < c->ncopies; i++) {
		if (c->disk[i] != m)
			continue;
		for (unsigned j = 0; j < c->ncopies; j++)
			if (j != i && volume_mread(s, c->disk[j], tmp, len, c->dev_off[j]) == 0)
				return volume_mwrite(s, m, tmp, len, c->dev_off[i]);
		return -EIO;
	}
	return 0;
}

/* The first and last byte where a and b differ; false when they agree. */
static bool diff_range(const uint8_t *a, const uint8_t *b, size_t len, size_t *first,
		       size_t *last)
{
	size_t i = 0, j = len;

	while (i < len && a[i] == b[i])
		i++;
	if (i == len)
		return false;
	while (a[j - 1] == b[j - 1])
		j--;
	*first = i;
	*last = j - 1;
	return true;
}

/* What one piece's vote found: which copies hold what the majority holds. */
struct vote {
	int winner;                     /* a copy of the majority's content (in a); -1: none */
	bool readable[COPIES_MAX], agree[COPIES_MAX];
};

/*
 * Reads copy `cand` into a and every other working copy into b to count
 * who agrees with it: true when a strict majority of the readable copies
 * does (a copy that cannot be read has no vote).
 */
static bool vote_for(struct volume_seg *s, const struct volume_place *c, size_t len,
		     unsigned cand, struct vote *v, uint8_t *a, uint8_t *b)
{
	unsigned nread = 1, nagree = 1;

	if (volume_mread(s, c->disk[cand], a, len, c->dev_off[cand]) < 0) {
		v->readable[cand] = false;
		return false;
	}
	for (unsigned i = 0; i < c->ncopies; i++) {
		if (i == cand)
			continue;
		v->readable[i] = v->readable[i] &&
				 volume_mread(s, c->disk[i], b, len, c->dev_off[i]) == 0;
		v->agree[i] = v->readable[i] && !memcmp(a, b, len);
		nread += v->readable[i];
		nagree += v->agree[i];
	}
	v->agree[cand] = true;
	return 2 * nagree > nread;
}

/*
 * Each working copy, in turn, until one has a majority behind it; a
 * resync, which must make the copies agree whatever they hold, takes the
 * first readable one when none has.
 */
static void copies_vote(struct volume_seg *s, const struct volume_place *c, size_t len,
			bool resync, struct vote *v, uint8_t *a, uint8_t *b)
{
	v->winner = -1;
	for (unsigned i = 0; i < c->ncopies; i++) {
		v->readable[i] = volume_mstate(s, c->disk[i]) == VOLUME_MEMBER_OK;
		v->agree[i] = false;
	}
	/* A copy that agreed with the last loser holds the same bytes: no new vote. */
	for (unsigned i = 0; i < c->ncopies && v->winner < 0; i++)
		if (v->readable[i] && !v->agree[i] && vote_for(s, c, len, i, v, a, b))
			v->winner = (int)i;
	for (unsigned i = 0; resync && v->winner < 0 && i < c->ncopies; i++)
		if (v->readable[i] && volume_mread(s, c->disk[i], a, len, c->dev_off[i]) == 0) {
			for (unsigned j = 0; j < c->ncopies; j++)
				v->agree[j] = j == i;
			v->winner = (int)i;
		}
}

/*
 * No majority: one finding for the piece, where the first readable copy
 * and the first that differs from it disagree. -EIO when none reads.
 */
static int copies_unlocatable(struct volume_seg *s, const struct volume_place *c, size_t len,
			      struct volume_mismatch *mm, struct volume_scrub *sc, uint8_t *a,
			      uint8_t *b)
{
	size_t first, last;
	int ref = -1;

	for (unsigned i = 0; i < c->ncopies; i++) {
		if (volume_mstate(s, c->disk[i]) != VOLUME_MEMBER_OK ||
		    volume_mread(s, c->disk[i], ref < 0 ? a : b, len, c->dev_off[i]) < 0)
			continue;
		if (ref < 0) {
			ref = (int)i;
		} else if (diff_range(a, b, len, &first, &last)) {
			volume_mismatch_narrow(mm, c->dev_off[ref], first, last);
			mm->seg_off += mm->dev_off - c->dev_off[ref];
			mm->seg_len = mm->len;
			volume_scrub_found(s, sc, mm);
			break;
		}
	}
	return ref < 0 ? -EIO : 0;
}

/*
 * Blames copy i for bytes [first, last] of the piece (rounded out to
 * whole sectors) and, unless only checking, rewrites them from the
 * majority's bytes in a.
 */
static int copies_blame(struct volume_seg *s, const struct volume_place *c, unsigned i,
			size_t first, size_t last, uint64_t seg_off, struct volume_scrub *sc,
			const uint8_t *a)
{
	struct volume_mismatch mm = { .seg = s->index, .stripe = UINT64_MAX, .located = true,
				      .member = c->disk[i] };
	int ret = 0;

	volume_mismatch_narrow(&mm, c->dev_off[i], first, last);
	mm.seg_off = seg_off + (mm.dev_off - c->dev_off[i]);
	mm.seg_len = mm.len;
	if (sc->mode != VOLUME_SCRUB_CHECK) {
		ret = volume_mwrite(s, c->disk[i], a + (mm.dev_off - c->dev_off[i]), mm.len,
				    mm.dev_off);
		mm.repaired = ret == 0 && volume_mstate(s, c->disk[i]) == VOLUME_MEMBER_OK;
	}
	volume_scrub_found(s, sc, &mm);
	return ret;
}

/*
 * Compares the copies of one piece (seg_off in the segment). Copies that
 * a strict majority outvotes, or that fail to read, are blamed and, on
 * repair, rewritten from the majority; with no majority (two copies, or
 * an even split) the piece is unlocatable and left alone.
 */
static int copies_scrub(struct volume_seg *s, const struct volume_place *c, size_t len,
			uint64_t seg_off, struct volume_scrub *sc, uint8_t *a, uint8_t *b)
{
	struct volume_mismatch mm = { .seg = s->index, .stripe = UINT64_MAX, .seg_off = seg_off,
				      .seg_len = len };
	uint64_t found = sc->count, at, end;
	size_t first, last;
	struct vote v;
	int ret = 0;

	copies_vote(s, c, len, sc->mode == VOLUME_SCRUB_RESYNC, &v, a, b);
	if (v.winner < 0)
		return copies_unlocatable(s, c, len, &mm, sc, a, b);
	for (unsigned i = 0; i < c->ncopies && ret >= 0; i++) {
		if (v.agree[i] || volume_mstate(s, c->disk[i]) != VOLUME_MEMBER_OK)
			continue;
		/*
		 * Unreadable: each run of blocks that fail to read, a bad
		 * sector as itself and not its 1 MiB piece (none: it reads
		 * now, or fails only where its bad-block log says so, by
		 * design). Outvoted: its bytes narrow the range; a read that
		 * fails now, all of it.
		 */
		if (!v.readable[i]) {
			for (at = 0; ret >= 0 && volume_munreadable(s, c->disk[i], c->dev_off[i], len,
								   b, &at, &end); at = end)
				ret = copies_blame(s, c, i, (size_t)at, (size_t)end - 1, seg_off, sc, a);
			continue;
		}
		first = 0;
		last = len - 1;
		if (volume_mread(s, c->disk[i], b, len, c->dev_off[i]) == 0 &&
		    !diff_range(a, b, len, &first, &last))
			continue;
		ret = copies_blame(s, c, i, first, last, seg_off, sc, a);
	}
	/* Every working copy agreed: a holds what a read returns. */
	if (ret >= 0 && sc->count == found)
		volume_scrub_consistent(sc, seg_off, a, len);
	return ret;
}

/* mirror */

static int mirror_check(struct volume_seg *s)
{
	if (s->nmembers < 1 || s->nmembers > COPIES_MAX)
		return -EINVAL;
	return s->len <= s->geom.dev_size ? 0 : -ENOSPC;
}

/* len bytes at c's places: len or -errno. */
static ssize_t copies_io(struct volume_seg *s, const struct volume_place *c, bool write,
			 uint8_t *buf, size_t len)
{
	int r = write ? copies_write(s, c, buf, len) : copies_read(s, c, buf, len);

	return r < 0 ? r : (ssize_t)len;
}

/* The copies volume_seg_place() names: all of a mirror's range, a chunk of raid10. */
static ssize_t copies_target_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len,
				uint64_t off)
{
	struct volume_place c;

	volume_seg_place(s, off, len, &c);
	return copies_io(s, &c, write, buf, (size_t)c.len);
}

static uint64_t mirror_unit(const struct volume_seg *s)
{
	return MIRROR_UNIT;
}


/* raid10 */

static int raid10_check(struct volume_seg *s)
{
	int r = layout_geom_check(&s->geom);

	if (r < 0)
		return r;
	if (layout_redundancy(&s->geom) + 1 > COPIES_MAX)
		return -EINVAL;
	return s->len <= layout_array_size(&s->geom) ? 0 : -ENOSPC;
}

/* Both targets: rebuild and scrub walk the copies of a range. */

struct copies_walk {
	unsigned m;                     /* rebuild: the member */
	struct volume_scrub *sc;        /* scrub */
	uint64_t pos;                   /* the piece's offset in the segment */
	uint8_t *a, *b;                 /* a piece each */
};

/*
 * Calls fn on the copies of [off, off+len): one piece for a mirror, whole
 * chunks for raid10. Both buffers of w get the largest piece.
 */
static int copies_each(struct volume_seg *s, uint64_t off, uint64_t len, struct copies_walk *w,
		       int (*fn)(struct volume_seg *s, const struct volume_place *c, size_t len,
				 struct copies_walk *w))
{
	bool mirror = s->type == VOLUME_MIRROR;
	uint64_t piece = mirror ? len : s->geom.chunk;
	int r;

	w->a = malloc(piece);
	w->b = malloc(piece);
	r = w->a && w->b ? 0 : -ENOMEM;
	for (uint64_t p = mirror ? off : off - off % piece; r >= 0 && p < off + len; p += piece) {
		struct volume_place c;

		volume_seg_place(s, p, piece, &c);
		w->pos = p;
		r = fn(s, &c, piece, w);
	}
	free(w->a);
	free(w->b);
	return r;
}

static int copies_rebuild_fn(struct volume_seg *s, const struct volume_place *c, size_t len,
			     struct copies_walk *w)
{
	return copies_rebuild(s, c, w->m, len, w->a);
}

static int copies_scrub_fn(struct volume_seg *s, const struct volume_place *c, size_t len,
			   struct copies_walk *w)
{
	return copies_scrub(s, c, len, w->pos, w->sc, w->a, w->b);
}

static int copies_target_rebuild(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len)
{
	struct copies_walk w = { .m = m };

	return copies_each(s, off, len, &w, copies_rebuild_fn);
}

static int copies_target_scrub(struct volume_seg *s, uint64_t off, uint64_t len,
			       struct volume_scrub *sc)
{
	struct copies_walk w = { .sc = sc };

	return copies_each(s, off, len, &w, copies_scrub_fn);
}

static uint64_t raid10_unit(const struct volume_seg *s)
{
	return s->geom.chunk * s->geom.ndisks;
}

const struct volume_target_ops volume_raid10_ops = {
	.name = "raid10",
	.check = raid10_check,
	.io = copies_target_io,
	.rebuild = copies_target_rebuild,
	.scrub = copies_target_scrub,
	.unit = raid10_unit,
};

const struct volume_target_ops volume_mirror_ops = {
	.name = "mirror",
	.check = mirror_check,
	.io = copies_target_io,
	.rebuild = copies_target_rebuild,
	.scrub = copies_target_scrub,
	.scrub_span = mirror_scrub_span,
	.unit = mirror_unit,
};
