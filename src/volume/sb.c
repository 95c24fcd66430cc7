/*
 * sb.c - encoding, checking and placing pony's member superblock: 4096
 * little-endian bytes, CRC32C-checksummed, one copy at the start of the
 * member and one in its last 4 KiB, so losing either end loses nothing.
 * Field offsets are documented in docs/volume-format.md; never reorder,
 * add from the reserved tail.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/bdev.h"
#include "sb.h"

#define SB_MAGIC "PONYVOL"

static void put32(uint8_t *b, uint32_t v) { le32 x = cpu_to_le32(v); memcpy(b, &x, 4); }
static void put64(uint8_t *b, uint64_t v) { le64 x = cpu_to_le64(v); memcpy(b, &x, 8); }

enum {
	SB_MAGIC_OFF = 0x000, SB_VERSION = 0x008, SB_CRC = 0x00c, SB_EVENTS = 0x010,
	SB_VOLUME_UUID = 0x018, SB_MEMBER_UUID = 0x028, SB_MEMBER_INDEX = 0x038,
	SB_NMEMBERS = 0x03c, SB_MEMBER_SIZE = 0x040, SB_DATA_OFFSET = 0x048,
	SB_DATA_SIZE = 0x050, SB_BITMAP_OFFSET = 0x058, SB_BITMAP_BYTES = 0x060,
	SB_BITMAP_SHIFT = 0x064, SB_FLAGS = 0x068, SB_NSEGS = 0x06c, SB_REBUILD_SEG = 0x070,
	SB_NBAD = 0x074, SB_REBUILD_OFF = 0x078, SB_MEMBER_STATE = 0x080,
	SB_MEMBER_UUIDS = 0x0c0, SB_SEGS = 0x4c0, SB_SEG_SIZE = 48, SB_NAME = 0x640,
	SB_BAD = 0x680, SB_END_COPY = 0xe80, SB_SCRUB_SEG = 0xe88, SB_SCRUB_OFF = 0xe90,
	SB_NSPARES = 0xe98, SB_SPARE_UUIDS = 0xea0, SB_BITMAP_EVENTS = 0xf20, SB_TAIL = 0xf28,
};

_Static_assert(SB_SEGS == SB_MEMBER_UUIDS + VOLUME_SB_MAX_MEMBERS * 16, "uuids end at segs");
_Static_assert(SB_NAME == SB_SEGS + VOLUME_SB_MAX_SEGS * SB_SEG_SIZE, "segs end at name");
_Static_assert(SB_END_COPY == SB_BAD + VOLUME_SB_MAX_BAD * 16, "bad list ends at end_copy");
_Static_assert(SB_BITMAP_EVENTS == SB_SPARE_UUIDS + VOLUME_SB_MAX_SPARES * 16,
	       "spare uuids end at bitmap_events");

void volume_sb_encode(const struct volume_sb *sb, uint8_t *b)
{
	memset(b, 0, VOLUME_SB_SIZE);
	memcpy(b + SB_MAGIC_OFF, SB_MAGIC, 8);
	put32(b + SB_VERSION, VOLUME_SB_VERSION);
	put64(b + SB_EVENTS, sb->events);
	memcpy(b + SB_VOLUME_UUID, sb->volume_uuid, 16);
	memcpy(b + SB_MEMBER_UUID, sb->member_uuid, 16);
	put32(b + SB_MEMBER_INDEX, sb->member_index);
	put32(b + SB_NMEMBERS, sb->nmembers);
	put64(b + SB_MEMBER_SIZE, sb->member_size);
	put64(b + SB_DATA_OFFSET, sb->data_offset);
	put64(b + SB_DATA_SIZE, sb->data_size);
	put64(b + SB_BITMAP_OFFSET, sb->bitmap_offset);
	put32(b + SB_BITMAP_BYTES, sb->bitmap_bytes);
	put32(b + SB_BITMAP_SHIFT, sb->bitmap_shift);
	put32(b + SB_FLAGS, sb->flags);
	put32(b + SB_NSEGS, sb->nsegs);
	put32(b + SB_REBUILD_SEG, sb->rebuild_seg);
	put32(b + SB_NBAD, sb->nbad);
	put64(b + SB_REBUILD_OFF, sb->rebuild_off);
	memcpy(b + SB_MEMBER_STATE, sb->member_state, VOLUME_SB_MAX_MEMBERS);
	memcpy(b + SB_MEMBER_UUIDS, sb->member_uuids, sizeof(sb->member_uuids));
	for (unsigned i = 0; i < sb->nsegs && i < VOLUME_SB_MAX_SEGS; i++) {
		uint8_t *s = b + SB_SEGS + i * SB_SEG_SIZE;

		put32(s, sb->segs[i].type);
		put32(s + 4, sb->segs[i].layout);
		put64(s + 8, sb->segs[i].chunk);
		put64(s + 16, sb->segs[i].start);
		put64(s + 24, sb->segs[i].len);
		put64(s + 32, sb->segs[i].member_off);
		put32(s + 40, sb->segs[i].cls);
	}
	memcpy(b + SB_NAME, sb->name, sizeof(sb->name));
	for (unsigned i = 0; i < sb->nbad && i < VOLUME_SB_MAX_BAD; i++) {
		put64(b + SB_BAD + i * 16, sb->bad[i].off);
		put64(b + SB_BAD + i * 16 + 8, sb->bad[i].len);
	}
	put64(b + SB_END_COPY, sb->end_copy);
	put32(b + SB_SCRUB_SEG, sb->scrub_seg);
	put64(b + SB_SCRUB_OFF, sb->scrub_off);
	put32(b + SB_NSPARES, sb->nspares);
	memcpy(b + SB_SPARE_UUIDS, sb->spare_uuids, sizeof(sb->spare_uuids));
	put64(b + SB_BITMAP_EVENTS, sb->bitmap_events);
	put32(b + SB_CRC, util_crc32c(0, b, VOLUME_SB_SIZE));
}

int volume_sb_decode(const uint8_t *b, struct volume_sb *sb)
{
	uint8_t tmp[VOLUME_SB_SIZE];

	if (memcmp(b, SB_MAGIC, 8))
		return -EBADMSG;
	memcpy(tmp, b, VOLUME_SB_SIZE);
	memset(tmp + SB_CRC, 0, 4);
	if (util_crc32c(0, tmp, VOLUME_SB_SIZE) != util_get_le32(b + SB_CRC))
		return -EBADMSG;
	if (util_get_le32(b + SB_VERSION) != VOLUME_SB_VERSION)
		return -EPROTONOSUPPORT;
	memset(sb, 0, sizeof(*sb));
	sb->events = util_get_le64(b + SB_EVENTS);
	memcpy(sb->volume_uuid, b + SB_VOLUME_UUID, 16);
	memcpy(sb->member_uuid, b + SB_MEMBER_UUID, 16);
	sb->member_index = util_get_le32(b + SB_MEMBER_INDEX);
	sb->nmembers = util_get_le32(b + SB_NMEMBERS);
	sb->member_size = util_get_le64(b + SB_MEMBER_SIZE);
	sb->data_offset = util_get_le64(b + SB_DATA_OFFSET);
	sb->data_size = util_get_le64(b + SB_DATA_SIZE);
	sb->bitmap_offset = util_get_le64(b + SB_BITMAP_OFFSET);
	sb->bitmap_bytes = util_get_le32(b + SB_BITMAP_BYTES);
	sb->bitmap_shift = util_get_le32(b + SB_BITMAP_SHIFT);
	sb->flags = util_get_le32(b + SB_FLAGS);
	sb->nsegs = util_get_le32(b + SB_NSEGS);
	sb->rebuild_seg = util_get_le32(b + SB_REBUILD_SEG);
	sb->nbad = util_get_le32(b + SB_NBAD);
	sb->rebuild_off = util_get_le64(b + SB_REBUILD_OFF);
	memcpy(sb->member_state, b + SB_MEMBER_STATE, VOLUME_SB_MAX_MEMBERS);
	memcpy(sb->member_uuids, b + SB_MEMBER_UUIDS, sizeof(sb->member_uuids));
	sb->nspares = util_get_le32(b + SB_NSPARES);
	memcpy(sb->spare_uuids, b + SB_SPARE_UUIDS, sizeof(sb->spare_uuids));
	sb->bitmap_events = util_get_le64(b + SB_BITMAP_EVENTS);
	if (sb->nmembers == 0 || sb->nmembers > VOLUME_SB_MAX_MEMBERS ||
	    sb->nspares > VOLUME_SB_MAX_SPARES ||
	    sb->member_index >= sb->nmembers + sb->nspares || sb->nsegs == 0 ||
	    sb->nsegs > VOLUME_SB_MAX_SEGS || sb->nbad > VOLUME_SB_MAX_BAD ||
	    sb->bitmap_shift > 62)
		return -EBADMSG;
	for (unsigned i = 0; i < sb->nsegs; i++) {
		const uint8_t *s = b + SB_SEGS + i * SB_SEG_SIZE;

		sb->segs[i] = (struct volume_sb_seg){
			.type = util_get_le32(s), .layout = util_get_le32(s + 4),
			.chunk = util_get_le64(s + 8), .start = util_get_le64(s + 16),
			.len = util_get_le64(s + 24), .member_off = util_get_le64(s + 32),
			.cls = util_get_le32(s + 40),
		};
	}
	memcpy(sb->name, b + SB_NAME, sizeof(sb->name));
	sb->name[sizeof(sb->name) - 1] = 0;
	for (unsigned i = 0; i < sb->nbad; i++) {
		sb->bad[i].off = util_get_le64(b + SB_BAD + i * 16);
		sb->bad[i].len = util_get_le64(b + SB_BAD + i * 16 + 8);
	}
	sb->end_copy = util_get_le64(b + SB_END_COPY);
	sb->scrub_seg = util_get_le32(b + SB_SCRUB_SEG);
	sb->scrub_off = util_get_le64(b + SB_SCRUB_OFF);
	return 0;
}

uint64_t volume_sb_end_copy(uint64_t size)
{
	return (size - VOLUME_SB_SIZE) / VOLUME_SB_SIZE * VOLUME_SB_SIZE;
}

int volume_sb_read(struct bdev *dev, struct volume_sb *sb)
{
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(VOLUME_SB_SIZE);
	uint64_t where[2];
	int r, bad = 0, ioerr = 0;

	if (!b)
		return -ENOMEM;
	if (dev->size < 2 * VOLUME_SB_SIZE)
		return -ENODATA;
	where[0] = 0;
	where[1] = volume_sb_end_copy(dev->size);
	for (int i = 0; i < 2; i++) {
		/* A copy that cannot be read is as good as absent: the other may be read. */
		r = bdev_pread(dev, b, VOLUME_SB_SIZE, where[i]);
		if (r < 0) {
			ioerr = r;
			continue;
		}
		if (memcmp(b, SB_MAGIC, 8))
			continue;
		r = volume_sb_decode(b, sb);
		if (r == 0)
			return 0;
		bad = r;
	}
	return ioerr ? ioerr : bad ? bad : -ENODATA;
}

/*
 * Crash tests (tests/volume/vol_sbcrash.sh): with PONY_VOLUME_CRASH_AT=N in
 * the environment the process kills itself (SIGKILL: no cleanup, as a
 * crash) just before its Nth superblock copy write, counted from 1 over the
 * process. A test walks every point of a command's superblock writes, one
 * run each, where kills after a delay would hit them by chance.
 */
static void sb_crash_point(void)
{
	static uint64_t at, count;
	static bool known;

	if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
		const char *e = getenv("PONY_VOLUME_CRASH_AT");

		__atomic_store_n(&at, e ? strtoull(e, NULL, 10) : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&known, true, __ATOMIC_RELEASE);
	}
	if (at && __atomic_add_fetch(&count, 1, __ATOMIC_ACQ_REL) == at)
		kill(getpid(), SIGKILL);
}

int volume_sb_write(struct bdev *dev, const struct volume_sb *sb)
{
	_cleanup_(freep) uint8_t *b = util_aligned_alloc(VOLUME_SB_SIZE);
	int r;

	if (!b)
		return -ENOMEM;
	volume_sb_encode(sb, b);
	sb_crash_point();
	r = bdev_pwrite(dev, b, VOLUME_SB_SIZE, 0);
	if (r >= 0) {
		sb_crash_point();
		r = bdev_pwrite(dev, b, VOLUME_SB_SIZE, volume_sb_end_copy(dev->size));
	}
	return r;
}
