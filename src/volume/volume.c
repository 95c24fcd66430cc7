/*
 * volume.c - the volume object: its segments, dispatch of reads and writes
 * to their targets (bouncing unaligned requests through whole sectors),
 * the public face of member state, and the volume's bdev face. The
 * rebuild, scrub and resync passes over a segment are in pass.c. The
 * targets reach their members through member.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pony/util.h"
#include "pony/volume_repair.h"
#include "internal.h"
#include "sb.h"

int volume_new(struct volume **ret)
{
	struct volume *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	snprintf(v->label, sizeof(v->label), "volume");
	*ret = v;
	return 0;
}

void volume_label_set(struct volume *v, const char *label)
{
	snprintf(v->label, sizeof(v->label), "%s", label);
}

const char *volume_label(const struct volume *v)
{
	return v->label;
}

static void seg_free(struct volume_seg *s, bool free_devs)
{
	if (!s)
		return;
	if (free_devs)
		for (unsigned i = 0; i < s->nmembers; i++)
			bdev_free(s->m[i].dev);
	pthread_mutex_destroy(&s->lock);
	free(s->scratch);
	free(s->m);
	free(s);
}

void volume_detach_members(struct volume *v)
{
	for (unsigned i = 0; i < v->nsegs; i++)
		for (unsigned j = 0; j < v->segs[i]->nmembers; j++)
			v->segs[i]->m[j].dev = NULL;
}

void volume_free(struct volume *v)
{
	if (!v)
		return;
	/* A device may serve several segments (linear pieces of one disk): free once. */
	for (unsigned i = 0; i < v->nsegs; i++) {
		struct volume_seg *s = v->segs[i];

		for (unsigned j = 0; j < s->nmembers; j++) {
			struct bdev *d = s->m[j].dev;

			if (!d)
				continue;
			for (unsigned k = i; k < v->nsegs; k++)
				for (unsigned l = 0; l < v->segs[k]->nmembers; l++)
					if (v->segs[k]->m[l].dev == d)
						v->segs[k]->m[l].dev = NULL;
			bdev_free(d);
		}
		seg_free(s, false);
	}
	free(v->segs);
	free(v);
}

static const struct volume_target_ops *target_ops(enum volume_target_type t)
{
	switch (t) {
	case VOLUME_LINEAR: return &volume_linear_ops;
	case VOLUME_STRIPED: return &volume_striped_ops;
	case VOLUME_MIRROR: return &volume_mirror_ops;
	case VOLUME_RAID4:
	case VOLUME_RAID5:
	case VOLUME_RAID6: return &volume_raid_ops;
	case VOLUME_RAID10: return &volume_raid10_ops;
	case VOLUME_ZERO: return &volume_zero_ops;
	case VOLUME_ERROR: return &volume_error_ops;
	}
	return NULL;
}

static const unsigned target_level[VOLUME_ERROR + 1] = {
	[VOLUME_LINEAR] = 0, [VOLUME_STRIPED] = 0, [VOLUME_MIRROR] = 1, [VOLUME_RAID4] = 4,
	[VOLUME_RAID5] = 5, [VOLUME_RAID6] = 6, [VOLUME_RAID10] = 10,
};

unsigned volume_type_redundancy(enum volume_target_type t, unsigned layout, unsigned ndevs)
{
	struct layout_geom g = { .layout = layout, .ndisks = ndevs };

	if (t != VOLUME_MIRROR && t != VOLUME_RAID4 && t != VOLUME_RAID5 && t != VOLUME_RAID6 &&
	    t != VOLUME_RAID10)
		return 0;
	g.level = target_level[t];
	return MIN(layout_redundancy(&g), ndevs);
}

/* The largest per-device size all present devices allow, in whole chunks. */
static uint64_t seg_fit_dev_size(const struct volume_seg *s)
{
	uint64_t fit = UINT64_MAX;

	for (unsigned i = 0; i < s->nmembers; i++) {
		const struct volume_member *m = &s->m[i];

		if (!m->dev)
			continue;
		if (m->offset > m->dev->size)
			return 0;
		fit = MIN(fit, m->dev->size - m->offset);
	}
	if (fit == UINT64_MAX)
		return 0;
	return s->geom.chunk ? fit / s->geom.chunk * s->geom.chunk : fit / VOLUME_SECTOR * VOLUME_SECTOR;
}

static int seg_build(const struct volume_target_spec *spec, uint64_t start, uint64_t len,
		     struct volume_seg **ret)
{
	struct volume_seg *s = calloc(1, sizeof(*s));
	unsigned present = 0;
	int r;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->start = start;
	s->len = len;
	s->type = spec->type;
	s->ops = target_ops(spec->type);
	s->parity = parity_ops_get(NULL);
	s->nmembers = spec->ndevs;
	s->m = calloc(spec->ndevs ? spec->ndevs : 1, sizeof(*s->m));
	r = !s->ops || !s->parity ? -EINVAL : !s->m ? -ENOMEM : 0;
	for (unsigned i = 0; !r && i < spec->ndevs; i++) {
		s->m[i].dev = spec->devs[i];
		s->m[i].offset = spec->offsets ? spec->offsets[i] : 0;
		s->m[i].state = spec->devs[i] ? VOLUME_MEMBER_OK : VOLUME_MEMBER_FAILED;
		present += spec->devs[i] != NULL;
	}
	if (!r) {
		s->geom = (struct layout_geom){
			.level = target_level[spec->type], .layout = spec->layout,
			.ndisks = spec->ndevs, .chunk = spec->chunk,
		};
		if (spec->type == VOLUME_RAID4)
			s->geom.layout = MD_PARITY_N;
		s->geom.dev_size = spec->dev_size ? spec->dev_size : seg_fit_dev_size(s);
		if (start % VOLUME_SECTOR || len % VOLUME_SECTOR)
			r = -EINVAL;
		else if (spec->ndevs && !present)
			r = -ENODEV;
		else
			r = s->ops->check(s);
	}
	if (!r && spec->ndevs && seg_fit_dev_size(s) < s->geom.dev_size)
		r = -ENOSPC;
	if (!r && s->ops->check != NULL && volume_seg_degraded(s) > layout_redundancy(&s->geom) &&
	    s->type != VOLUME_LINEAR && s->type != VOLUME_STRIPED)
		r = -ENODEV;
	if (r < 0) {
		seg_free(s, false);
		return r;
	}
	*ret = s;
	return 0;
}

int volume_add_segment(struct volume *v, uint64_t start, uint64_t len,
		       const struct volume_target_spec *spec)
{
	struct volume_seg *s, **segs;
	int r;

	if (start != v->size || !len)
		return -EINVAL;
	r = seg_build(spec, start, len, &s);
	if (r < 0)
		return r;
	segs = realloc(v->segs, (v->nsegs + 1) * sizeof(*segs));
	if (!segs) {
		seg_free(s, false);
		return -ENOMEM;
	}
	s->index = v->nsegs;
	s->label = v->label;
	v->segs = segs;
	v->segs[v->nsegs++] = s;
	v->size += len;
	return 0;
}

uint64_t volume_size(const struct volume *v)
{
	return v->size;
}

unsigned volume_segment_count(const struct volume *v)
{
	return v->nsegs;
}

uint64_t volume_full_stripe(const struct volume *v, unsigned seg)
{
	const struct volume_seg *s;

	if (seg >= v->nsegs)
		return 0;
	s = v->segs[seg];
	switch (s->type) {
	case VOLUME_STRIPED:
	case VOLUME_RAID4:
	case VOLUME_RAID5:
	case VOLUME_RAID6:
		return s->geom.chunk * layout_ndata(&s->geom);
	case VOLUME_RAID10:
		return s->geom.chunk;
	default:
		return VOLUME_SECTOR;
	}
}

/* Aligned I/O over segments. */
static bool seg_redundant(const struct volume_seg *s)
{
	return s->type == VOLUME_MIRROR || s->type == VOLUME_RAID4 || s->type == VOLUME_RAID5 ||
	       s->type == VOLUME_RAID6 || s->type == VOLUME_RAID10;
}

void volume_set_intent_hook(struct volume *v, volume_intent_fn fn, void *arg)
{
	v->intent = fn;
	v->intent_arg = arg;
}

void volume_set_written_hook(struct volume *v, volume_written_fn fn, void *arg)
{
	v->written = fn;
	v->written_arg = arg;
}

/* A write or flush is done on the members: the written hook has its say. */
static int volume_written(struct volume *v, int r)
{
	int h;

	if (!v->written)
		return r;
	h = v->written(v->written_arg);
	return r < 0 ? r : h;
}

void volume_set_fail_hook(struct volume *v, volume_fail_fn fn, void *arg)
{
	for (unsigned i = 0; i < v->nsegs; i++) {
		v->segs[i]->fail_hook = fn;
		v->segs[i]->fail_arg = arg;
	}
}

void volume_enable_badblock_log(struct volume *v, bool on)
{
	for (unsigned i = 0; i < v->nsegs; i++)
		v->segs[i]->bbl = on;
}

/* How a range of a segment is done: read, written, or read checked (volume_read_checked). */
enum seg_rw { SEG_READ, SEG_WRITE, SEG_READ_CHECKED };

static int seg_rw(struct volume_seg *s, enum seg_rw how, uint8_t *buf, size_t len, uint64_t off)
{
	if (how == SEG_READ_CHECKED && !s->ops->read_checked)
		how = SEG_READ;
	if (!s->ops->io)
		return -EOPNOTSUPP;
	while (len) {
		ssize_t n = how == SEG_READ_CHECKED ? s->ops->read_checked(s, buf, len, off)
						    : s->ops->io(s, how == SEG_WRITE, buf, len, off);

		if (n < 0)
			return (int)n;
		buf += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int volume_seg_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	return seg_rw(s, write ? SEG_WRITE : SEG_READ, buf, len, off);
}

static int volume_rw_aligned(struct volume *v, enum seg_rw how, uint8_t *buf, size_t len, uint64_t off)
{
	for (unsigned i = 0; i < v->nsegs && len; i++) {
		struct volume_seg *s = v->segs[i];
		size_t n;
		int r;

		if (off >= s->start + s->len)
			continue;
		n = (size_t)MIN((uint64_t)len, s->start + s->len - off);
		if (how == SEG_WRITE && v->intent && seg_redundant(s)) {
			r = v->intent(off, n, v->intent_arg);
			if (r < 0)
				return r;
		}
		r = seg_rw(s, how, buf, n, off - s->start);
		if (r < 0)
			return r;
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int volume_check_range(const struct volume *v, size_t len, uint64_t off)
{
	return off > v->size || len > v->size - off ? -EINVAL : 0;
}

int volume_read(struct volume *v, void *buf, size_t len, uint64_t off)
{
	uint64_t a, b;
	uint8_t *bounce;
	int r = volume_check_range(v, len, off);

	if (r < 0 || !len)
		return r;
	if (off % VOLUME_SECTOR == 0 && len % VOLUME_SECTOR == 0)
		return volume_rw_aligned(v, SEG_READ, buf, len, off);
	a = off / VOLUME_SECTOR * VOLUME_SECTOR;
	b = ROUND_UP(off + len, VOLUME_SECTOR);
	bounce = malloc(b - a);
	if (!bounce)
		return -ENOMEM;
	r = volume_rw_aligned(v, SEG_READ, bounce, b - a, a);
	if (r >= 0)
		memcpy(buf, bounce + (off - a), len);
	free(bounce);
	return r;
}

static int volume_write_sectors(struct volume *v, const void *buf, size_t len, uint64_t off)
{
	uint64_t a, b;
	uint8_t *bounce;
	int r = volume_check_range(v, len, off);

	if (r < 0 || !len)
		return r;
	if (off % VOLUME_SECTOR == 0 && len % VOLUME_SECTOR == 0)
		return volume_rw_aligned(v, SEG_WRITE, (uint8_t *)buf, len, off);
	/* Unaligned: read the sectors around, patch, write back whole sectors. */
	a = off / VOLUME_SECTOR * VOLUME_SECTOR;
	b = ROUND_UP(off + len, VOLUME_SECTOR);
	bounce = malloc(b - a);
	if (!bounce)
		return -ENOMEM;
	r = volume_rw_aligned(v, SEG_READ, bounce, VOLUME_SECTOR, a);
	if (r >= 0 && b - VOLUME_SECTOR > a)
		r = volume_rw_aligned(v, SEG_READ, bounce + (b - a - VOLUME_SECTOR), VOLUME_SECTOR,
				      b - VOLUME_SECTOR);
	if (r >= 0) {
		memcpy(bounce + (off - a), buf, len);
		r = volume_rw_aligned(v, SEG_WRITE, bounce, b - a, a);
	}
	free(bounce);
	return r;
}

int volume_read_checked(struct volume *v, void *buf, size_t len, uint64_t off)
{
	if (off % VOLUME_SECTOR || len % VOLUME_SECTOR)
		return -EINVAL;
	return volume_check_range(v, len, off) ?: volume_rw_aligned(v, SEG_READ_CHECKED, buf, len, off);
}

int volume_write(struct volume *v, const void *buf, size_t len, uint64_t off)
{
	return volume_written(v, volume_write_sectors(v, buf, len, off));
}

/*
 * A member that cannot flush is failed, as one that cannot write is. The
 * flush fails only where a segment has lost more members than its
 * redundancy: elsewhere the data is durable on enough of them, and a
 * degraded volume must still let its filesystem commit.
 */
int volume_flush(struct volume *v)
{
	int ret = 0;

	for (unsigned i = 0; i < v->nsegs; i++) {
		struct volume_seg *s = v->segs[i];
		int seg_err = 0;

		for (unsigned j = 0; j < s->nmembers; j++) {
			if (s->m[j].dev && volume_mstate(s, j) != VOLUME_MEMBER_FAILED) {
				int r = bdev_flush(s->m[j].dev);

				if (r < 0) {
					volume_mfail(s, j, "flush", UINT64_MAX, r);
					seg_err = seg_err ? seg_err : r;
				}
			}
		}
		if (seg_err && volume_seg_degraded(s) > layout_redundancy(&s->geom) && !ret)
			ret = seg_err;
	}
	return volume_written(v, ret);
}

/* Members (their I/O is member.c). */

unsigned volume_member_badblocks(const struct volume *v, unsigned seg, unsigned m,
				 uint64_t *offs, uint64_t *lens, unsigned max)
{
	const struct volume_member *mb;
	unsigned n = 0;

	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers)
		return 0;
	mb = &v->segs[seg]->m[m];
	for (; n < mb->nbad && n < max; n++) {
		offs[n] = mb->bad[n].off;
		lens[n] = mb->bad[n].len;
	}
	return n;
}

unsigned volume_member_count(const struct volume *v, unsigned seg)
{
	return seg < v->nsegs ? v->segs[seg]->nmembers : 0;
}

enum volume_member_state volume_member_state(const struct volume *v, unsigned seg, unsigned m)
{
	return (enum volume_member_state)volume_mstate(v->segs[seg], m);
}

const char *volume_member_device(const struct volume *v, unsigned seg, unsigned m)
{
	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers || !v->segs[seg]->m[m].dev)
		return NULL;
	return v->segs[seg]->m[m].dev->name;
}

int volume_fail_member(struct volume *v, unsigned seg, unsigned m)
{
	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers)
		return -EINVAL;
	volume_mfail(v->segs[seg], m, "marked failed on request", UINT64_MAX, 0);
	return 0;
}

int volume_member_add_badblock(struct volume *v, unsigned seg, unsigned m, uint64_t dev_off,
			       uint64_t len)
{
	struct volume_member *mb;

	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers)
		return -EINVAL;
	mb = &v->segs[seg]->m[m];
	if (mb->nbad == VOLUME_MAX_BAD)
		return -ENOSPC;
	mb->bad[mb->nbad++] = (struct volume_bad){ dev_off, len };
	return 0;
}

int volume_replace_member(struct volume *v, unsigned seg, unsigned m, struct bdev *dev)
{
	struct volume_seg *s;
	struct bdev *old;

	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers || !dev)
		return -EINVAL;
	s = v->segs[seg];
	if (!s->ops->rebuild)
		return -EOPNOTSUPP;
	if (dev->size < s->m[m].offset + s->geom.dev_size)
		return -ENOSPC;
	pthread_mutex_lock(&s->lock);
	old = s->m[m].dev;
	s->m[m].dev = dev;
	s->m[m].nbad = 0;
	__atomic_store_n(&s->m[m].state, VOLUME_MEMBER_REBUILDING, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
	bdev_free(old);
	return 0;
}

/* The bdev face. */

struct volume_bdev {
	struct bdev b;
	struct volume *v;
	bool own;                       /* volume_as_bdev: the volume goes with it */
};

static int vb_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return volume_read(((struct volume_bdev *)b)->v, buf, len, off);
}

static int vb_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return volume_write(((struct volume_bdev *)b)->v, buf, len, off);
}

static int vb_flush(struct bdev *b)
{
	return volume_flush(((struct volume_bdev *)b)->v);
}

static int vb_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return volume_read_checked(((struct volume_bdev *)b)->v, buf, len, off);
}

static int vb_repair(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	return volume_repair_to_checksum(((struct volume_bdev *)b)->v, buf, len, off, crc);
}

static int vb_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	return volume_advise(((struct volume_bdev *)b)->v, off, len, advice);
}

static void vb_free(struct bdev *b)
{
	if (((struct volume_bdev *)b)->own)
		volume_free(((struct volume_bdev *)b)->v);
	free(b);
}

static const struct bdev_ops volume_bdev_ops = {
	.name = "volume",
	.pread = vb_pread,
	.pwrite = vb_pwrite,
	.flush = vb_flush,
	.free = vb_free,
	.read_checked = vb_read_checked,
	.repair = vb_repair,
	.advise = vb_advise,
};

static int volume_bdev_new(struct volume *v, bool own, struct bdev **ret)
{
	struct volume_bdev *vb = calloc(1, sizeof(*vb));

	if (!vb)
		return -ENOMEM;
	vb->b.ops = &volume_bdev_ops;
	vb->b.size = v->size;
	vb->b.block_size = VOLUME_SECTOR;
	snprintf(vb->b.name, sizeof(vb->b.name), "volume");
	vb->v = v;
	vb->own = own;
	*ret = &vb->b;
	return 0;
}

int volume_as_bdev(struct volume *v, struct bdev **ret)
{
	return volume_bdev_new(v, true, ret);
}

int volume_region_bdev(struct volume *v, enum volume_region_class cls, struct bdev **ret)
{
	struct bdev *whole;
	uint64_t start, len, stripe;
	int r = volume_region_find(v, cls, &start, &len, &stripe);

	if (r < 0)
		return r;
	r = volume_bdev_new(v, false, &whole);
	if (r < 0)
		return r;
	r = bdev_slice_new(whole, start, len, true, cls == VOLUME_CLASS_METADATA ? "volume-meta"
				: "volume-data", ret);
	if (r < 0)
		bdev_free(whole);
	return r;
}

static const char *const target_names[] = {
	[VOLUME_LINEAR] = "linear", [VOLUME_STRIPED] = "striped", [VOLUME_MIRROR] = "mirror",
	[VOLUME_RAID4] = "raid4", [VOLUME_RAID5] = "raid5", [VOLUME_RAID6] = "raid6",
	[VOLUME_RAID10] = "raid10", [VOLUME_ZERO] = "zero", [VOLUME_ERROR] = "error",
};

const char *volume_target_name(enum volume_target_type t)
{
	return (unsigned)t < ARRAY_SIZE(target_names) ? target_names[t] : "unknown";
}

int volume_target_from_name(const char *name, enum volume_target_type *ret)
{
	for (unsigned i = 0; i < ARRAY_SIZE(target_names); i++)
		if (!strcmp(name, target_names[i])) {
			*ret = (enum volume_target_type)i;
			return 0;
		}
	return -EINVAL;
}

const struct volume_seg *volume_seg_get(const struct volume *v, unsigned i)
{
	return i < v->nsegs ? v->segs[i] : NULL;
}

void volume_member_uuids_set(struct volume *v, const uint8_t (*uuids)[16])
{
	v->member_uuids = uuids;
}

int volume_member_uuid(const struct volume *v, unsigned seg, unsigned m, uint8_t ret[16])
{
	if (seg >= v->nsegs || m >= v->segs[seg]->nmembers)
		return -EINVAL;
	if (!v->member_uuids)
		return -ENOENT;
	/* A set's segments all span its members in index order (set_build). */
	memcpy(ret, v->member_uuids[m], 16);
	return 0;
}

int volume_device_member_uuid(struct bdev *dev, uint8_t ret[16])
{
	struct volume_sb sb;
	int r = volume_sb_read(dev, &sb);

	if (r == 0)
		memcpy(ret, sb.member_uuid, 16);
	return r;
}

void set_seg_cls(struct volume *v, unsigned i, enum volume_region_class cls)
{
	if (i < v->nsegs)
		v->segs[i]->cls = cls;
}

int volume_layout_from_name(unsigned level, const char *name, unsigned *ret_layout)
{
	return layout_from_name(level, name, ret_layout);
}
