/*
 * fsck_mirror.c - compares the copies of a pony volume's metadata mirror.
 * The volume's scrub finds which member's copy disagrees with the first
 * working one, in pieces of up to 1 MiB; this narrows each piece to the
 * 4 KiB blocks that differ and names what they hold (the superblock,
 * database pages, the write-ahead log). Reads go to the first copy, so a
 * check of the database alone never sees a bad second copy.
 *
 * A repair must know which copy is right, and neither the volume nor
 * SQLite (its page checksums are off) can say: each distinct copy is
 * opened as a database of its own, on an overlay, and integrity-checked.
 * When exactly one distinct copy is a clean database, it is written over
 * the others; otherwise the copies stay as they are and the problem says
 * why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "pony/volume.h"
#include "pony/volume_repair.h"

#define BLOCK 4096u
#define PIECE (64u << 10)
#define MAX_DIFFS 256           /* ranges reported one by one; the rest are counted */

/* Region bytes [off, off+len) of member's copy differ from the reference copy. */
struct diff {
	unsigned member;
	uint64_t off, len;
};

struct mirror {
	struct fsck *f;
	struct volume *v;
	unsigned seg, ref;              /* the region's segment; the copy reads come from */
	uint64_t start, len;            /* the region, in volume bytes */
	struct volume_mismatch *mm;     /* what scrub found */
	size_t nmm, cap_mm;
	struct diff d[MAX_DIFFS];
	size_t nd;
	uint64_t more;                  /* differing ranges past MAX_DIFFS */
	struct ponyfs_sb sb;            /* to name what a range holds */
	bool have_sb;
	uint64_t db_pages;              /* the database's size, in pages, by its header */
	uint8_t *a, *b;                 /* PIECE bytes each */
};

static void collect(const struct volume_mismatch *m, void *arg)
{
	struct mirror *mi = arg;

	if (mi->nmm == mi->cap_mm) {
		size_t cap = mi->cap_mm ? 2 * mi->cap_mm : 16;
		struct volume_mismatch *v = realloc(mi->mm, cap * sizeof(*v));

		if (!v)
			return;         /* counted by scrub all the same; reported below */
		mi->mm = v;
		mi->cap_mm = cap;
	}
	mi->mm[mi->nmm++] = *m;
}

/* -- one member's copy as a bdev ------------------------------------------- */

struct copy {
	struct bdev b;
	struct volume *v;               /* not owned */
	unsigned m;
	uint64_t start;
};

static int copy_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	struct copy *c = (struct copy *)b;

	return volume_read_member(c->v, c->m, buf, len, c->start + off);
}

static int copy_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return -EROFS;
}

static void copy_free(struct bdev *b)
{
	free(b);
}

static const struct bdev_ops copy_ops = {
	.name = "fsck-mirror-copy",
	.pread = copy_pread,
	.pwrite = copy_pwrite,
	.free = copy_free,
};

static struct bdev *copy_new(const struct mirror *mi, unsigned m)
{
	struct copy *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->b.ops = &copy_ops;
	c->b.size = mi->len;
	c->b.block_size = 512;
	snprintf(c->b.name, sizeof(c->b.name), "metadata copy of member %u", m);
	c->v = mi->v;
	c->m = m;
	c->start = mi->start;
	return &c->b;
}

/* Whether member m's copy alone holds a ponyfs whose database is clean. */
static bool copy_clean(const struct mirror *mi, unsigned m)
{
	_cleanup_(bdev_freep) struct bdev *copy = copy_new(mi, m);
	_cleanup_(bdev_freep) struct bdev *view = NULL, *data = NULL;
	struct ponyfs_sb sb;
	sqlite3_stmt *s = NULL;
	sqlite3 *db = NULL;
	bool clean = false;

	if (!copy || fsck_sb_read(copy, &sb) < 0 || sb.meta_bytes > mi->len ||
	    fsck_overlay_new(copy, mi->len, &view) < 0 ||
	    (mi->f->data && fsck_overlay_new(mi->f->data, bdev_size(mi->f->data), &data) < 0) ||
	    ponyfs_sqlite_open_sb(view, data, &sb, &db) < 0)
		return false;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);

		clean = t && !strcmp(t, "ok") && sqlite3_step(s) == SQLITE_DONE;
	}
	sqlite3_finalize(s);
	ponyfs_sqlite_close(db);
	return clean;
}

/* -- naming ranges ------------------------------------------------------------ */

enum part { PART_SB, PART_CTAB, PART_DB, PART_WAL, PART_REST };

static enum part part_of(const struct ponyfs_sb *sb, uint64_t x, uint64_t *ret_n)
{
	if (x < PONYFS_SB_SIZE)
		return PART_SB;
	if (x < sb->db_off)
		return PART_CTAB;       /* the chunk table's two copies (META_CHUNKS) */
	x -= sb->db_off;
	*ret_n = x / BLOCK + 1;         /* SQLite numbers pages from 1 */
	if (x < sb->db_bytes)
		return PART_DB;
	x -= sb->db_bytes;
	*ret_n = x;
	return x < sb->wal_bytes ? PART_WAL : PART_REST;
}

/* What region bytes [off, off+len) hold: "database pages 2-4" and such. */
static void describe(const struct mirror *mi, uint64_t off, uint64_t len, char *buf, size_t size)
{
	static const char *const names[] = { "the superblock", "the chunk table", "database page",
					     "write-ahead log", "space past the write-ahead log" };
	uint64_t a = 0, b = 0;
	enum part pa, pb;

	if (!mi->have_sb) {
		snprintf(buf, size, "no copy has a readable superblock to say what");
		return;
	}
	pa = part_of(&mi->sb, off, &a);
	pb = part_of(&mi->sb, off + len - 1, &b);
	if (pa != pb)
		snprintf(buf, size, "%s to %s", names[pa], names[pb]);
	else if (pa == PART_DB && a > mi->db_pages)
		snprintf(buf, size, "database range past its %llu pages: unused",
			 (unsigned long long)mi->db_pages);
	else if (pa == PART_DB && a != b)
		snprintf(buf, size, "database pages %llu-%llu", (unsigned long long)a,
			 (unsigned long long)b);
	else if (pa == PART_DB)
		snprintf(buf, size, "database page %llu", (unsigned long long)a);
	else if (pa == PART_WAL)
		snprintf(buf, size, "write-ahead log bytes %llu-%llu", (unsigned long long)a,
			 (unsigned long long)b);
	else
		snprintf(buf, size, "%s", names[pa]);
}

static const char *member_name(const struct mirror *mi, unsigned m)
{
	const char *name = volume_member_device(mi->v, mi->seg, m);

	return name ? name : "missing";
}

/* -- narrowing scrub's pieces to blocks ------------------------------------------- */

static void diff_add(struct mirror *mi, unsigned m, uint64_t off)
{
	struct diff *last = mi->nd ? &mi->d[mi->nd - 1] : NULL;

	if (last && last->member == m && last->off + last->len == off) {
		last->len += BLOCK;
		return;
	}
	if (mi->nd == MAX_DIFFS) {
		mi->more++;
		return;
	}
	mi->d[mi->nd++] = (struct diff){ m, off, BLOCK };
}

/* The 4 KiB blocks of [off, off+len) where member m's copy differs from the reference. */
static int narrow(struct mirror *mi, unsigned m, uint64_t off, uint64_t len)
{
	for (uint64_t pos = off; pos < off + len; pos += PIECE) {
		size_t n = (size_t)MIN((uint64_t)PIECE, off + len - pos);
		int r = volume_read_member(mi->v, mi->ref, mi->a, n, mi->start + pos);

		if (r >= 0)
			r = volume_read_member(mi->v, m, mi->b, n, mi->start + pos);
		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i += BLOCK)
			if (memcmp(mi->a + i, mi->b + i, MIN((size_t)BLOCK, n - i)))
				diff_add(mi, m, pos + i);
	}
	return 0;
}

/*
 * What scrub found, as differences from the reference copy. A three-way
 * mirror's scrub blames the copy the others outvote; when that is the
 * reference itself, every other working copy differs from it there.
 */
static int narrow_finding(struct mirror *mi, const struct volume_mismatch *mm)
{
	unsigned n = volume_member_count(mi->v, mi->seg);
	int r = 0;

	if (mm->member != mi->ref)
		return narrow(mi, mm->member, mm->dev_off, mm->len);
	for (unsigned k = 0; k < n && r >= 0; k++)
		if (k != mi->ref && volume_member_state(mi->v, mi->seg, k) == VOLUME_MEMBER_OK)
			r = narrow(mi, k, mm->dev_off, mm->len);
	return r;
}

/* -- deciding which copy to trust ---------------------------------------------- */

/* Whether members m and k hold the same bytes wherever either differs from the reference. */
static bool same_copy(struct mirror *mi, unsigned m, unsigned k)
{
	size_t nm = 0, nk = 0;

	for (size_t i = 0; i < mi->nd; i++) {
		nm += mi->d[i].member == m;
		nk += mi->d[i].member == k;
	}
	if (nm != nk || mi->more)
		return false;
	for (size_t i = 0, j = 0; i < mi->nd; i++) {
		const struct diff *d = &mi->d[i];

		if (d->member != m)
			continue;
		while (mi->d[j].member != k)
			j++;
		if (mi->d[j].off != d->off || mi->d[j].len != d->len)
			return false;
		for (uint64_t p = d->off; p < d->off + d->len; p += BLOCK)
			if (volume_read_member(mi->v, m, mi->a, BLOCK, mi->start + p) < 0 ||
			    volume_read_member(mi->v, k, mi->b, BLOCK, mi->start + p) < 0 ||
			    memcmp(mi->a, mi->b, BLOCK))
				return false;
		j++;
	}
	return true;
}

static bool has_diffs(const struct mirror *mi, unsigned m)
{
	for (size_t i = 0; i < mi->nd; i++)
		if (mi->d[i].member == m)
			return true;
	return false;
}

/*
 * The member whose copy to trust: the one distinct copy that is a clean
 * database (working members without differences hold the reference's
 * copy). -1 when there is none, with why in buf.
 */
static int trusted(struct mirror *mi, char *why, size_t size)
{
	unsigned n = volume_member_count(mi->v, mi->seg), reps[64], nreps = 0, clean[64], nclean = 0;
	char list[96] = "";

	for (unsigned m = 0; m < n && nreps < 64; m++) {
		bool seen = false;

		if (volume_member_state(mi->v, mi->seg, m) != VOLUME_MEMBER_OK)
			continue;
		if (m != mi->ref && !has_diffs(mi, m))
			continue;       /* the reference's copy */
		for (unsigned i = 0; i < nreps && !seen; i++)
			seen = reps[i] != mi->ref && same_copy(mi, m, reps[i]);
		if (!seen)
			reps[nreps++] = m;
	}
	for (unsigned i = 0; i < nreps; i++)
		if (copy_clean(mi, reps[i]))
			clean[nclean++] = reps[i];
	if (nclean == 1)
		return (int)clean[0];
	for (unsigned i = 0; i < nclean; i++) {
		size_t used = strlen(list);

		snprintf(list + used, sizeof(list) - used, "%s%u",
			 !i ? "" : i + 1 < nclean ? ", " : " and ", clean[i]);
	}
	if (!nclean)
		snprintf(why, size, "; no copy is a clean database, so none is trusted: left as "
			 "they are");
	else
		snprintf(why, size, "; the copies of members %s are different clean databases: "
			 "cannot tell which to trust, left as they are", list);
	return -1;
}

/* Every differing range written again from member t's copy, to every copy. */
static int rewrite(struct mirror *mi, unsigned t)
{
	_cleanup_(freep) uint8_t *buf = malloc(BLOCK);
	int r = buf ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < mi->nd; i++)
		for (uint64_t p = mi->d[i].off; r >= 0 && p < mi->d[i].off + mi->d[i].len; p += BLOCK) {
			r = volume_read_member(mi->v, t, buf, BLOCK, mi->start + p);
			if (r >= 0)
				r = volume_write(mi->v, buf, BLOCK, mi->start + p);
		}
	return r < 0 ? r : volume_flush(mi->v);
}

/* -- the pass -------------------------------------------------------------------- */

static void report_diffs(struct mirror *mi, bool fixed, const char *says)
{
	for (size_t i = 0; i < mi->nd; i++) {
		const struct diff *d = &mi->d[i];
		char what[96];

		describe(mi, d->off, d->len, what, sizeof(what));
		fsck_problem(mi->f, "mirror", 0, fixed, "metadata mirror: member %u (%s) differs from "
			     "member %u (%s) at region bytes %llu-%llu (%s)%s", d->member,
			     member_name(mi, d->member), mi->ref, member_name(mi, mi->ref),
			     (unsigned long long)d->off, (unsigned long long)(d->off + d->len - 1),
			     what, says);
	}
	if (mi->more)
		fsck_problem(mi->f, "mirror", 0, fixed, "metadata mirror: %llu more differing ranges%s",
			     (unsigned long long)mi->more, says);
}

/* Scrub's pieces as they are, for a region that is no mirror (raid10 copies, parity). */
static void report_pieces(struct mirror *mi)
{
	for (size_t i = 0; i < mi->nmm; i++)
		fsck_problem(mi->f, "mirror", 0, false, "metadata region: member %u (%s) disagrees "
			     "with the others at member bytes %llu-%llu; `pony vol scrub` says more",
			     mi->mm[i].member, member_name(mi, mi->mm[i].member),
			     (unsigned long long)mi->mm[i].dev_off,
			     (unsigned long long)(mi->mm[i].dev_off + mi->mm[i].len - 1));
}

static void find_sb(struct mirror *mi)
{
	unsigned n = volume_member_count(mi->v, mi->seg);

	for (unsigned m = 0; m < n && !mi->have_sb; m++) {
		_cleanup_(bdev_freep) struct bdev *copy = copy_new(mi, m);
		uint8_t h[512];

		mi->have_sb = copy && fsck_sb_read(copy, &mi->sb) >= 0;
		/* The page count at bytes 28-31 of SQLite's header (docs/ponyfs-format.md). */
		if (mi->have_sb && bdev_pread(copy, h, sizeof(h), mi->sb.db_off) >= 0 &&
		    !memcmp(h, "SQLite format 3", 16))
			mi->db_pages = util_get_be32(h + 28);
		else
			mi->db_pages = UINT64_MAX;
	}
}

/*
 * A check that may not write (fsck -n) of a volume not closed clean sees
 * copies that differ where writes were in flight at the crash: the last
 * write-ahead log frames reached some members only. The write-intent
 * bitmap marks those regions, and the next writable open (a mount, fsck
 * -p or -y) resyncs them before anything reads them, as md resyncs a
 * dirty array. Such differences are no problem: counted in the result,
 * for the caller to say.
 */
static void drop_in_flight(struct mirror *mi)
{
	uint64_t bytes = 0;
	size_t kept = 0;

	for (size_t i = 0; i < mi->nd; i++) {
		if (volume_set_unsynced(mi->f->p->set, mi->start + mi->d[i].off, mi->d[i].len))
			bytes += mi->d[i].len;
		else
			mi->d[kept++] = mi->d[i];
	}
	mi->nd = kept;
	mi->f->res->mirror_unsynced += bytes;
}

static int compare(struct mirror *mi)
{
	char why[160] = "";
	uint64_t count = 0;
	int r, t = -1;

	for (size_t i = 0; i < mi->nmm; i++) {
		r = narrow_finding(mi, &mi->mm[i]);
		if (r == -EOPNOTSUPP) {
			report_pieces(mi);
			return 0;
		}
		if (r < 0)
			return r;
	}
	drop_in_flight(mi);
	if (!mi->nd && !mi->more)
		return 0;
	find_sb(mi);
	if (fsck_may_fix(mi->f, FSCK_FIX_SAFE))
		t = trusted(mi, why, sizeof(why));
	if (t >= 0) {
		r = rewrite(mi, (unsigned)t);
		if (r < 0)
			return r;
		snprintf(why, sizeof(why), ": rewritten from member %d, the one copy that is a "
			 "clean database", t);
	}
	report_diffs(mi, t >= 0, why);
	if (t < 0)
		return 0;
	r = volume_scrub(mi->v, mi->seg, false, 0, NULL, NULL, NULL, NULL, &count);
	if (r >= 0 && count)
		fsck_problem(mi->f, "mirror", 0, false, "metadata mirror: %llu pieces still differ "
			     "after the rewrite", (unsigned long long)count);
	return r;
}

int fsck_mirror(struct fsck *f)
{
	struct mirror mi = { .f = f, .v = f->p->volume };
	uint64_t count = 0;
	int seg, r;

	if (!mi.v || volume_region_find(mi.v, VOLUME_CLASS_METADATA, &mi.start, &mi.len, NULL) < 0)
		return 0;
	seg = volume_seg_at(mi.v, mi.start);
	if (seg < 0)
		return seg;
	mi.seg = (unsigned)seg;
	while (mi.ref < volume_member_count(mi.v, mi.seg) &&
	       volume_member_state(mi.v, mi.seg, mi.ref) != VOLUME_MEMBER_OK)
		mi.ref++;
	r = volume_scrub(mi.v, mi.seg, false, 0, collect, &mi, NULL, NULL, &count);
	if (r == -EOPNOTSUPP)
		return 0;               /* no redundancy: one copy, nothing to compare */
	mi.a = malloc(PIECE);
	mi.b = malloc(PIECE);
	if (r >= 0 && (!mi.a || !mi.b || mi.nmm < count))
		r = -ENOMEM;
	if (r >= 0 && count)
		r = compare(&mi);
	if (r < 0)
		fsck_problem(f, "mirror", 0, false, "metadata mirror: the copies could not be "
			     "compared: %s", strerror(-r));
	free(mi.a);
	free(mi.b);
	free(mi.mm);
	return r;
}
