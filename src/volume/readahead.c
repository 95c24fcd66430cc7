/*
 * readahead.c - bdev_advise() through a volume: the hint for a range of
 * the volume becomes hints for the member bytes a read of it will touch,
 * by the same map the I/O path uses (volume_map). ponyfs hints the data it
 * expects a sequential reader to want next, and drops what it has read
 * behind it (src/ponyfs/readahead.c); on a volume of image files the hint
 * stopped here, and each member's page cache was filled only by the reads
 * themselves, a chunk at a time.
 *
 * The copy a read will take: a data piece's member when it is working,
 * else the first working copy (mirror, raid10). A data piece on a missing
 * member of a raid4/5/6 is read by reconstruction: no hint (it would cost
 * as much as the read). Pieces that follow each other on one member are
 * hinted as one range, so a stripe's chunks cost one call per member.
 */
#include "internal.h"
#include "pony/util.h"

#define RA_PIECES 64                    /* pieces mapped per round */

/* Member ranges gathered for one round of hints. */
struct ra_batch {
	unsigned n;
	struct { const struct volume_seg *s; unsigned m; uint64_t off, len; } r[RA_PIECES];
};

static void batch_add(struct ra_batch *b, const struct volume_seg *s, unsigned m, uint64_t off,
		      uint64_t len)
{
	for (unsigned i = 0; i < b->n; i++)
		if (b->r[i].s == s && b->r[i].m == m && b->r[i].off + b->r[i].len == off) {
			b->r[i].len += len;
			return;
		}
	b->r[b->n].s = s;
	b->r[b->n].m = m;
	b->r[b->n].off = off;
	b->r[b->n].len = len;
	b->n++;
}

static void batch_issue(const struct ra_batch *b, enum bdev_advice advice)
{
	for (unsigned i = 0; i < b->n; i++) {
		const struct volume_member *mb = &b->r[i].s->m[b->r[i].m];

		/* A hint: a member that cannot take it shows at the read. */
		bdev_advise(mb->dev, mb->offset + b->r[i].off, b->r[i].len, advice);
	}
}

/* Whether piece p is the copy a read of its bytes takes: the first
 * working one of a data piece and its copies. */
static bool piece_is_read(const struct volume *v, const struct volume_piece *p, bool *want_copy)
{
	const struct volume_seg *s = volume_seg_get(v, p->seg);
	bool ok = s && p->member != VOLUME_NO_MEMBER && volume_mstate(s, p->member) == VOLUME_MEMBER_OK;

	if (p->role == VOLUME_PIECE_DATA) {
		*want_copy = !ok;
		return ok;
	}
	if (p->role != VOLUME_PIECE_COPY || !*want_copy || !ok)
		return false;
	*want_copy = false;
	return true;
}

int volume_advise(struct volume *v, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	struct volume_piece p[RA_PIECES];

	while (len) {
		int64_t total = volume_map(v, off, len, p, RA_PIECES);
		struct ra_batch b = { 0 };
		uint64_t end = off;
		bool want_copy = false;

		if (total <= 0)
			return total < 0 ? (int)total : 0;
		for (int64_t i = 0; i < MIN(total, (int64_t)RA_PIECES); i++) {
			if (p[i].role == VOLUME_PIECE_DATA || p[i].role == VOLUME_PIECE_NONE)
				end = MAX(end, p[i].vol_off + p[i].len);
			if (piece_is_read(v, &p[i], &want_copy))
				batch_add(&b, volume_seg_get(v, p[i].seg), p[i].member, p[i].dev_off,
					  p[i].len);
		}
		batch_issue(&b, advice);
		if (total <= RA_PIECES || end <= off)
			break;
		/* The last data piece may have lost its copies to the cut:
		 * mapped again from there, hinted again at worst. */
		len -= end - off;
		off = end;
	}
	return 0;
}
