/*
 * region.c - the filesystem RAID API: regions of different classes and
 * geometries (metadata mirrored with small chunks, data RAID6 with big
 * ones) laid out one after another on the same member devices, each a
 * segment of one volume, each telling its full-stripe size so a
 * filesystem can write whole stripes and skip read-modify-write.
 */
#include <errno.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

static unsigned region_level(enum volume_target_type t)
{
	switch (t) {
	case VOLUME_MIRROR: return 1;
	case VOLUME_RAID4: return 4;
	case VOLUME_RAID5: return 5;
	case VOLUME_RAID6: return 6;
	case VOLUME_RAID10: return 10;
	default: return 0;
	}
}

/* Per-member bytes a region of size bytes needs (rounded to chunks), and its real length. */
static int region_fit(const struct volume_region_spec *sp, unsigned ndevs, uint64_t avail,
		      uint64_t *ret_member, uint64_t *ret_len)
{
	uint64_t chunk = sp->chunk ? sp->chunk : 65536;
	struct layout_geom g = { .level = region_level(sp->type), .ndisks = ndevs, .chunk = chunk,
				 .layout = sp->type == VOLUME_RAID4 ? MD_PARITY_N : sp->layout };
	uint64_t lo = 1, hi = avail / chunk, want;

	if (sp->type == VOLUME_LINEAR || sp->type == VOLUME_ZERO || sp->type == VOLUME_ERROR)
		return -EINVAL;
	if (!hi)
		return -ENOSPC;
	if (!sp->size) {
		lo = hi;
	} else {
		/* The fewest chunks per member whose array holds size bytes. */
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;

			g.dev_size = mid * chunk;
			if (layout_array_size(&g) >= sp->size)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	g.dev_size = lo * chunk;
	want = layout_array_size(&g);
	if (sp->size && want < sp->size)
		return -ENOSPC;
	*ret_member = g.dev_size;
	*ret_len = sp->size ? sp->size / 512 * 512 : want;
	return *ret_len ? 0 : -ENOSPC;
}

int volume_regions_build(struct bdev **devs, unsigned ndevs, uint64_t data_offset,
			 uint64_t member_size, const struct volume_region_spec *specs,
			 unsigned nregions, struct volume **ret)
{
	_cleanup_(volume_freep) struct volume *v = NULL;
	uint64_t offsets[LAYOUT_MAX_DISKS], used = 0;
	int r;

	if (!ndevs || ndevs > LAYOUT_MAX_DISKS || !nregions)
		return -EINVAL;
	r = volume_new(&v);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < nregions; i++) {
		const struct volume_region_spec *sp = &specs[i];
		struct volume_target_spec t = {
			.type = sp->type, .layout = sp->layout, .chunk = sp->chunk ? sp->chunk : 65536,
			.ndevs = ndevs, .devs = devs, .offsets = offsets,
		};
		uint64_t per_member, len;

		if (sp->type == VOLUME_MIRROR)
			t.chunk = 0;
		r = region_fit(sp, ndevs, member_size - used, &per_member, &len);
		if (r < 0)
			break;
		for (unsigned d = 0; d < ndevs; d++)
			offsets[d] = data_offset + used;
		t.dev_size = per_member;
		r = volume_add_segment(v, volume_size(v), len, &t);
		if (r < 0)
			break;
		set_seg_cls(v, i, sp->cls);
		used += per_member;
	}
	if (r < 0) {
		volume_detach_members(v);       /* the devices stay the caller's */
		return r;
	}
	*ret = TAKE_PTR(v);
	return 0;
}

int volume_region_find(const struct volume *v, enum volume_region_class cls,
		       uint64_t *ret_start, uint64_t *ret_len, uint64_t *ret_full_stripe)
{
	for (unsigned i = 0; i < volume_segment_count(v); i++) {
		const struct volume_seg *s = volume_seg_get(v, i);

		if (s->cls != cls)
			continue;
		if (ret_start)
			*ret_start = s->start;
		if (ret_len)
			*ret_len = s->len;
		if (ret_full_stripe)
			*ret_full_stripe = volume_full_stripe(v, i);
		return 0;
	}
	return -ENOENT;
}
