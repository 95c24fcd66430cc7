/*
 * md.c - reading Linux md v1.x superblocks (1.0 at the end of the device,
 * 1.1 at its start, 1.2 4 KiB in) and assembling the array they describe,
 * with each member's bad-block log, so existing md arrays open in pony
 * without the kernel's md. Layout after mdp_superblock_1 in
 * include/uapi/linux/raid/md_p.h; every field is little-endian.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pony/util.h"
#include "internal.h"

#define MD_SB_MAGIC 0xa92b4efcu
#define MD_FEATURE_BITMAP_OFFSET 1u
#define MD_FEATURE_RESHAPE_ACTIVE 4u
#define MD_FEATURE_BAD_BLOCKS 8u
#define MD_ROLE_SPARE 0xffffu
#define MD_SB_BYTES 4096
#define MD_BITMAP_MAGIC 0x6d746962u      /* "bitm" */
#define MD_BITMAP_SB_BYTES 256           /* bitmap_super_t; the bits follow */
#define MD_NEW_MAX_DEV 384u              /* roles in a new superblock, as mdadm writes */
#define MD_NEW_DATA_OFFSET 2048u         /* sectors: 1 MiB, mdadm's choice for small members */

/* One member's superblock, decoded. */
struct md_sb {
	uint8_t set_uuid[16];
	char name[33];
	unsigned level, layout, raid_disks, minor;
	uint32_t feature_map;
	uint64_t size, data_offset, data_size, super_offset, events;
	uint32_t chunk_sectors, dev_number;
	unsigned role;
	int32_t bblog_offset, bitmap_offset;
	uint64_t resync_offset;                 /* UINT64_MAX: clean */
	uint16_t bblog_size;
	uint8_t bblog_shift;
};

static uint32_t md_sb_csum(const uint8_t *sb, unsigned max_dev)
{
	size_t size = 256 + (size_t)max_dev * 2;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i + 4 <= size; i += 4)
		sum += i == 216 ? 0 : util_get_le32(sb + i);   /* sb_csum itself counts as 0 */
	if (size - i == 2)
		sum += util_get_le16(sb + i);
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

/* Decodes one superblock at byte offset at; 1 when there is none. */
static int md_sb_decode(const uint8_t *b, uint64_t at, struct md_sb *sb)
{
	unsigned max_dev;

	if (util_get_le32(b) != MD_SB_MAGIC || util_get_le32(b + 4) != 1)
		return 1;
	max_dev = util_get_le32(b + 220);
	if (max_dev > (MD_SB_BYTES - 256) / 2 || md_sb_csum(b, max_dev) != util_get_le32(b + 216))
		return -EBADMSG;
	memset(sb, 0, sizeof(*sb));
	sb->feature_map = util_get_le32(b + 8);
	memcpy(sb->set_uuid, b + 16, 16);
	memcpy(sb->name, b + 32, 32);
	sb->level = util_get_le32(b + 72);
	sb->layout = util_get_le32(b + 76);
	sb->size = util_get_le64(b + 80);
	sb->chunk_sectors = util_get_le32(b + 88);
	sb->raid_disks = util_get_le32(b + 92);
	sb->data_offset = util_get_le64(b + 128);
	sb->data_size = util_get_le64(b + 136);
	sb->super_offset = util_get_le64(b + 144);
	sb->dev_number = util_get_le32(b + 160);
	sb->bblog_shift = b[185];
	sb->bblog_size = util_get_le16(b + 186);
	sb->bblog_offset = (int32_t)util_get_le32(b + 188);
	sb->events = util_get_le64(b + 200);
	sb->resync_offset = util_get_le64(b + 208);
	if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET)
		sb->bitmap_offset = (int32_t)util_get_le32(b + 96);
	if (sb->super_offset * 512 != at || sb->dev_number >= max_dev)
		return -EBADMSG;
	sb->role = util_get_le16(b + 256 + 2 * sb->dev_number);
	return 0;
}

/* Finds the member's superblock: 1.1 at 0, 1.2 at 4 KiB, 1.0 near the end. */
static int md_sb_read(struct bdev *dev, struct md_sb *sb)
{
	uint64_t where[3] = { 0, 4096, 0 };
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(MD_SB_BYTES);
	int r;

	if (!b)
		return -ENOMEM;
	if (dev->size < 16 * 512 + MD_SB_BYTES)
		return -ENODATA;
	where[2] = ((dev->size / 512 - 16) & ~7ull) * 512;
	for (unsigned minor = 0; minor < 3; minor++) {
		uint64_t at = where[minor == 0 ? 2 : minor - 1];

		r = bdev_pread(dev, b, MD_SB_BYTES, at);
		if (r < 0)
			return r;
		r = md_sb_decode(b, at, sb);
		if (r <= 0) {
			if (r == 0)
				sb->minor = minor;
			return r;
		}
	}
	return -ENODATA;
}

/*
 * The role the freshest superblock (ref, read from ref_dev) gives device
 * number dev_number: MD_ROLE_UNKNOWN when it lists no such device or the
 * block cannot be read again. Read only when a member is one event behind.
 */
#define MD_ROLE_UNKNOWN 0x10000u
static unsigned md_role_in(struct bdev *ref_dev, const struct md_sb *ref, uint32_t dev_number)
{
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(MD_SB_BYTES);

	if (!b || bdev_pread(ref_dev, b, MD_SB_BYTES, ref->super_offset * 512) < 0 ||
	    dev_number >= util_get_le32(b + 220) || dev_number >= (MD_SB_BYTES - 256) / 2)
		return MD_ROLE_UNKNOWN;
	return util_get_le16(b + 256 + 2 * dev_number);
}

/*
 * Whether a member is in sync with the freshest (ref): md's margin of one
 * (the kernel's super_1_validate, mdadm's event_margin). md writes the
 * members' superblocks one by one, so a crash between the writes leaves
 * members one event behind that missed nothing; the freshest superblock
 * then says whether that very update failed the member (its role there is
 * no longer the member's own: faulty or spare), as the kernel asks it.
 * Two or more events behind: stale, left out.
 */
static bool md_member_current(struct bdev *ref_dev, const struct md_sb *ref,
			      const struct md_sb *sb)
{
	if (sb->events >= ref->events)
		return true;
	if (sb->events + 1 < ref->events)
		return false;
	return md_role_in(ref_dev, ref, sb->dev_number) == sb->role;
}

/* Loads the member's bad-block log into the volume (relative to its data). */
static int md_load_badblocks(struct bdev *dev, const struct md_sb *sb, struct volume *v,
			     unsigned member, unsigned *count)
{
	uint64_t at = sb->super_offset * 512 + (int64_t)sb->bblog_offset * 512;
	size_t len = (size_t)sb->bblog_size * 512;
	_cleanup_(freep) uint8_t *b = NULL;
	int r;

	if (!(sb->feature_map & MD_FEATURE_BAD_BLOCKS) || !len)
		return 0;
	if (at + len > dev->size)
		return -EBADMSG;
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	r = bdev_pread(dev, b, len, at);
	for (size_t i = 0; r >= 0 && i + 8 <= len; i += 8) {
		uint64_t e = util_get_le64(b + i);
		uint64_t sector = (e >> 10) << sb->bblog_shift;
		uint64_t n = (e & 0x3ff) << sb->bblog_shift;

		if (e == UINT64_MAX)
			break;
		if (sector < sb->data_offset)
			continue;       /* outside the data: nothing to reconstruct */
		r = volume_member_add_badblock(v, 0, member, (sector - sb->data_offset) * 512, n * 512);
		(*count)++;
	}
	return r;
}

/*
 * md's internal write-intent bitmap on one member (bitmap_super_t, then one
 * bit per chunk of every member's data, little-endian bit order): ORs its
 * bits into *bits (grown as needed) and returns the chunk size in bytes, or
 * 0 when the member has none, or -errno.
 */
static int64_t md_bitmap_read(struct bdev *dev, const struct md_sb *sb, uint8_t **bits,
			      size_t *nbytes)
{
	uint64_t at = sb->super_offset * 512 + (int64_t)sb->bitmap_offset * 512, chunk, nbits;
	_cleanup_(freep) uint8_t *b = NULL;
	size_t len;
	int r;

	if (!(sb->feature_map & MD_FEATURE_BITMAP_OFFSET))
		return 0;
	b = malloc(MD_BITMAP_SB_BYTES);
	if (!b)
		return -ENOMEM;
	if (at + MD_BITMAP_SB_BYTES > dev->size)
		return -EBADMSG;
	r = bdev_pread(dev, b, MD_BITMAP_SB_BYTES, at);
	if (r < 0)
		return r;
	chunk = util_get_le32(b + 52);
	if (util_get_le32(b) != MD_BITMAP_MAGIC || chunk < 512 || (chunk & (chunk - 1)))
		return -EBADMSG;
	nbits = DIV_ROUND_UP(util_get_le64(b + 40) * 512, chunk);      /* sync_size */
	len = (size_t)DIV_ROUND_UP(nbits, 8);
	if (at + MD_BITMAP_SB_BYTES + len > dev->size)
		return -EBADMSG;
	free(b);
	b = malloc(len ? len : 1);
	if (!b)
		return -ENOMEM;
	r = bdev_pread(dev, b, len, at + MD_BITMAP_SB_BYTES);
	if (r < 0)
		return r;
	if (len > *nbytes) {
		uint8_t *n = realloc(*bits, len);

		if (!n)
			return -ENOMEM;
		memset(n + *nbytes, 0, len - *nbytes);
		*bits = n;
		*nbytes = len;
	}
	for (size_t i = 0; i < len; i++)
		(*bits)[i] |= b[i];
	if (nbits % 8)          /* bits past the last chunk mean nothing */
		(*bits)[len - 1] &= (uint8_t)((1u << (nbits % 8)) - 1);
	return (int64_t)chunk;
}

/*
 * Whether md would resync: an array not shut down clean, where (with a
 * bitmap) some chunk was being written. md refuses to start a parity array
 * in that state with a member missing (its parity may be stale where
 * writes were in flight, so a rebuilt block would be wrong): so does pony.
 * Fills info's dirty fields.
 */
static int md_check_dirty(const struct md_sb *ref, const struct md_sb *sbs,
			  const int *sb_of_slot, struct bdev **slot, struct volume_md_info *info)
{
	_cleanup_(freep) uint8_t *bits = NULL;
	size_t nbytes = 0;
	unsigned missing = 0;

	info->dirty = ref->resync_offset != UINT64_MAX;
	for (unsigned i = 0; i < ref->raid_disks; i++) {
		int64_t chunk;

		if (sb_of_slot[i] < 0) {
			missing++;
			continue;
		}
		chunk = md_bitmap_read(slot[i], &sbs[sb_of_slot[i]], &bits, &nbytes);
		if (chunk < 0)
			return (int)chunk;
		if (chunk)
			info->bitmap_chunk = (uint64_t)chunk;
	}
	for (size_t i = 0; i < nbytes; i++)
		info->bitmap_dirty += (unsigned)__builtin_popcount(bits[i]);
	if (info->dirty && missing && ref->level >= 4 && ref->level <= 6 &&
	    (!info->bitmap_chunk || info->bitmap_dirty))
		return -EUCLEAN;
	return 0;
}

static int md_spec_type(unsigned level, enum volume_target_type *t)
{
	switch (level) {
	case 0: *t = VOLUME_STRIPED; return 0;
	case 1: *t = VOLUME_MIRROR; return 0;
	case 4: *t = VOLUME_RAID4; return 0;
	case 5: *t = VOLUME_RAID5; return 0;
	case 6: *t = VOLUME_RAID6; return 0;
	case 10: *t = VOLUME_RAID10; return 0;
	default: return -EOPNOTSUPP;
	}
}

#define MD_RAID0_ORIG_LAYOUT 1u
#define MD_RAID0_ALT_MULTIZONE_LAYOUT 2u

/*
 * raid0 over members of unequal size, as md's create_strip_zones() lays it
 * out: zone k stripes over the members (in role order) larger than the
 * previous zone's end on each member, from that end to the next smallest
 * member's size. Each zone is a striped segment. In the original layout md
 * picks a zone's device from the chunk number in the whole array, not in
 * the zone: that is the zone's device list rotated by its first chunk.
 * 0 and *ret_more true when it added the zones; false when all sizes match.
 */
static int md_raid0_zones(struct volume *v, const struct md_sb *ref, const struct md_sb *sbs,
			  const int *sb_of_slot, struct bdev **slot, const uint64_t *offsets,
			  bool *ret_more)
{
	uint64_t chunk = ref->chunk_sectors * 512ull, size[LAYOUT_MAX_DISKS], prev = 0, start = 0;
	bool unequal = false;
	int r = 0;

	for (unsigned i = 0; i < ref->raid_disks; i++) {
		if (sb_of_slot[i] < 0)
			return -ENODEV;         /* raid0 has no redundancy */
		size[i] = sbs[sb_of_slot[i]].data_size * 512 / chunk * chunk;
		unequal |= size[i] != size[0];
	}
	*ret_more = unequal;
	if (!unequal)
		return 0;
	/* The kernel refuses multi-zone arrays of unknown layout too. */
	if (ref->layout != MD_RAID0_ORIG_LAYOUT && ref->layout != MD_RAID0_ALT_MULTIZONE_LAYOUT)
		return -EOPNOTSUPP;
	while (r >= 0) {
		struct bdev *zdev[LAYOUT_MAX_DISKS], *dev[LAYOUT_MAX_DISKS];
		uint64_t zoff[LAYOUT_MAX_DISKS], off[LAYOUT_MAX_DISKS], end = UINT64_MAX;
		unsigned nb = 0, rot;
		struct volume_target_spec spec = { .type = VOLUME_STRIPED, .chunk = chunk,
						   .devs = dev, .offsets = off };

		for (unsigned i = 0; i < ref->raid_disks; i++)
			if (size[i] > prev) {
				end = MIN(end, size[i]);
				zoff[nb] = offsets[i] + prev;
				zdev[nb++] = slot[i];
			}
		if (!nb)
			break;
		rot = ref->layout == MD_RAID0_ORIG_LAYOUT ? (unsigned)(start / chunk % nb) : 0;
		for (unsigned j = 0; j < nb; j++) {
			dev[j] = zdev[(rot + j) % nb];
			off[j] = zoff[(rot + j) % nb];
		}
		spec.ndevs = nb;
		spec.dev_size = end - prev;
		r = volume_add_segment(v, start, (end - prev) * nb, &spec);
		start += (end - prev) * nb;
		prev = end;
	}
	return r;
}

int volume_md_assemble(struct bdev **devs, unsigned ndevs, struct volume **ret,
		       struct volume_md_info *ret_info)
{
	struct volume_md_info dirty = { 0 };
	bool zoned = false;
	struct md_sb sbs[LAYOUT_MAX_DISKS], *ref = NULL;
	struct bdev *ref_dev = NULL;
	struct bdev *slot[LAYOUT_MAX_DISKS] = { NULL };
	uint64_t offsets[LAYOUT_MAX_DISKS] = { 0 }, dev_size;
	int sb_of_slot[LAYOUT_MAX_DISKS];
	struct volume_target_spec spec = { 0 };
	struct layout_geom g;
	struct volume *v = NULL;
	unsigned badblocks = 0;
	int r;

	if (!ndevs || ndevs > LAYOUT_MAX_DISKS)
		return -EINVAL;
	for (unsigned i = 0; i < ndevs; i++) {
		r = md_sb_read(devs[i], &sbs[i]);
		if (r < 0)
			return r;
		if (!ref || sbs[i].events > ref->events) {
			ref = &sbs[i];
			ref_dev = devs[i];
		}
	}
	for (unsigned i = 0; i < ndevs; i++)
		if (memcmp(sbs[i].set_uuid, ref->set_uuid, 16))
			return -EXDEV;          /* members of different arrays */
	if (ref->feature_map & MD_FEATURE_RESHAPE_ACTIVE)
		return -EOPNOTSUPP;
	if (!ref->raid_disks || ref->raid_disks > LAYOUT_MAX_DISKS)
		return -EBADMSG;
	r = md_spec_type(ref->level, &spec.type);
	if (r < 0)
		return r;
	memset(sb_of_slot, -1, sizeof(sb_of_slot));
	for (unsigned i = 0; i < ndevs; i++) {
		unsigned role = sbs[i].role;

		/* Stale members are left out, as md kicks them. */
		if (role >= ref->raid_disks || !md_member_current(ref_dev, ref, &sbs[i]))
			continue;
		if (slot[role])
			return -EEXIST;         /* two devices claim one role */
		slot[role] = devs[i];
		offsets[role] = sbs[i].data_offset * 512;
		sb_of_slot[role] = (int)i;
	}
	r = md_check_dirty(ref, sbs, sb_of_slot, slot, &dirty);
	if (r < 0)
		return r;
	dev_size = (ref->level == 0 ? ref->data_size : ref->size) * 512;
	if (ref->level != 1)
		dev_size = dev_size / (ref->chunk_sectors * 512ull) * ref->chunk_sectors * 512;
	g = (struct layout_geom){ .level = ref->level, .layout = ref->layout,
				  .ndisks = ref->raid_disks, .chunk = ref->chunk_sectors * 512ull,
				  .dev_size = dev_size };
	if (ref->level == 4)
		g.layout = MD_PARITY_N;
	spec.layout = ref->layout;
	spec.chunk = g.chunk;
	spec.ndevs = ref->raid_disks;
	spec.devs = slot;
	spec.offsets = offsets;
	spec.dev_size = dev_size;
	r = volume_new(&v);
	if (r >= 0 && ref->level == 0)
		r = md_raid0_zones(v, ref, sbs, sb_of_slot, slot, offsets, &zoned);
	if (r >= 0 && !zoned)
		r = volume_add_segment(v, 0, layout_array_size(&g), &spec);
	for (unsigned i = 0; r >= 0 && i < ref->raid_disks; i++)
		if (sb_of_slot[i] >= 0)
			r = md_load_badblocks(slot[i], &sbs[sb_of_slot[i]], v, i, &badblocks);
	if (r < 0) {
		/* The devices are still the caller's: detach them before freeing. */
		if (v && volume_segment_count(v))
			volume_detach_members(v);
		volume_free(v);
		return r;
	}
	/* Devices not used (spares, stale) are freed here: the volume took the rest. */
	for (unsigned i = 0; i < ndevs; i++) {
		bool used = false;

		for (unsigned j = 0; j < ref->raid_disks; j++)
			used |= slot[j] == devs[i];
		if (!used)
			bdev_free(devs[i]);
	}
	if (ret_info) {
		memset(ret_info, 0, sizeof(*ret_info));
		ret_info->level = ref->level;
		ret_info->layout = g.layout;
		ret_info->raid_disks = ref->raid_disks;
		ret_info->chunk = g.chunk;
		ret_info->dev_size = dev_size;
		ret_info->array_size = volume_size(v);
		memcpy(ret_info->uuid, ref->set_uuid, 16);
		memcpy(ret_info->name, ref->name, 32);
		ret_info->events = ref->events;
		ret_info->minor_version = ref->minor;
		ret_info->badblocks = badblocks;
		ret_info->dirty = dirty.dirty;
		ret_info->bitmap_chunk = dirty.bitmap_chunk;
		ret_info->bitmap_dirty = dirty.bitmap_dirty;
	}
	*ret = v;
	return 0;
}

/* Writes member i's v1.2 superblock (4 KiB in) for a new array. */
static int md_sb_write_new(struct bdev *dev, unsigned i, const struct md_sb *a,
			   const uint8_t *dev_uuid, uint64_t now)
{
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(MD_SB_BYTES);
	le64 v64;
	le32 v32;

	if (!b)
		return -ENOMEM;
	memset(b, 0, MD_SB_BYTES);
#define PUT32(off, x) (v32 = cpu_to_le32(x), memcpy(b + (off), &v32, 4))
#define PUT64(off, x) (v64 = cpu_to_le64(x), memcpy(b + (off), &v64, 8))
	PUT32(0, MD_SB_MAGIC);
	PUT32(4, 1);
	memcpy(b + 16, a->set_uuid, 16);
	memcpy(b + 32, a->name, 32);
	PUT64(64, now);
	PUT32(72, a->level);
	PUT32(76, a->layout);
	PUT64(80, a->size);
	PUT32(88, a->chunk_sectors);
	PUT32(92, a->raid_disks);
	PUT64(128, a->data_offset);
	PUT64(136, a->data_size);
	PUT64(144, 8);                          /* super_offset: 1.2 is 4 KiB in */
	PUT32(160, i);
	memcpy(b + 168, dev_uuid, 16);
	PUT64(192, now);
	PUT64(200, 1);                          /* events */
	PUT64(208, UINT64_MAX);                 /* resync_offset: clean, nothing to sync */
	PUT32(220, MD_NEW_MAX_DEV);
	for (unsigned d = 0; d < MD_NEW_MAX_DEV; d++) {
		le16 role = cpu_to_le16(d < a->raid_disks ? (uint16_t)d : MD_ROLE_SPARE);

		memcpy(b + 256 + 2 * d, &role, 2);
	}
	PUT32(216, md_sb_csum(b, MD_NEW_MAX_DEV));
#undef PUT32
#undef PUT64
	return bdev_pwrite(dev, b, MD_SB_BYTES, 4096);
}

int volume_md_create(struct bdev **devs, unsigned ndevs, unsigned level, unsigned layout,
		     uint64_t chunk, const char *name, struct volume **ret,
		     struct volume_md_info *ret_info)
{
	struct md_sb a = { .level = level, .layout = level == 4 ? MD_PARITY_N : layout,
			   .raid_disks = ndevs, .data_offset = MD_NEW_DATA_OFFSET };
	struct layout_geom g = { .level = level, .layout = a.layout, .ndisks = ndevs,
				 .chunk = level == 1 ? 0 : chunk };
	uint64_t min = UINT64_MAX, unit = level == 1 ? 65536 : chunk, now;
	int r;

	for (unsigned i = 0; i < ndevs; i++)
		min = MIN(min, devs[i]->size / 512);
	if (!ndevs || ndevs > LAYOUT_MAX_DISKS || (level != 1 && (!chunk || chunk % 4096)))
		return -EINVAL;
	if (min < MD_NEW_DATA_OFFSET + unit / 512)
		return -ENOSPC;
	a.data_size = min - MD_NEW_DATA_OFFSET;
	a.size = a.data_size / (unit / 512) * (unit / 512);
	a.chunk_sectors = level == 1 ? 0 : (uint32_t)(chunk / 512);
	g.dev_size = a.size * 512;
	if (level == 1)
		g.chunk = 0;
	r = layout_geom_check(&g);
	if (r < 0)
		return r;
	snprintf(a.name, sizeof(a.name), "%s", name ? name : "pony:0");
	util_uuid_generate(a.set_uuid);
	/* One creation time for all: mdadm refuses members whose ctime differs. */
	now = (uint64_t)time(NULL);
	for (unsigned i = 0; i < ndevs && r >= 0; i++) {
		uint8_t dev_uuid[16];

		util_uuid_generate(dev_uuid);
		r = md_sb_write_new(devs[i], i, &a, dev_uuid, now);
		if (r >= 0)
			r = bdev_flush(devs[i]);
	}
	return r < 0 ? r : volume_md_assemble(devs, ndevs, ret, ret_info);
}
