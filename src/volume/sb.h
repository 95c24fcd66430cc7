/*
 * sb.h - pony's member superblock (docs/volume-format.md): what every member
 * of a pony volume carries so the volume assembles from its members alone.
 */
#ifndef PONY_VOLUME_SB_H
#define PONY_VOLUME_SB_H

#include <stdint.h>

#include "pony/util.h"

#define VOLUME_SB_SIZE 4096
#define VOLUME_SB_VERSION 1
#define VOLUME_SB_MAX_MEMBERS 64
#define VOLUME_SB_MAX_SEGS 8
#define VOLUME_SB_MAX_BAD 128
#define VOLUME_SB_MAX_SPARES 8
#define VOLUME_SB_BITMAP_OFFSET 4096u
#define VOLUME_SB_BITMAP_BYTES (60u * 1024)
#define VOLUME_SB_DATA_OFFSET (1u << 20)
#define VOLUME_SB_CLEAN 1u
#define VOLUME_SB_NO_REBUILD UINT64_MAX

struct volume_sb_seg {
	uint32_t type;                  /* enum volume_target_type */
	uint32_t layout;
	uint64_t chunk;
	uint64_t start, len;            /* in the volume */
	uint64_t member_off;            /* past data_offset, on every member */
	uint32_t cls;                   /* enum volume_region_class */
};

struct volume_sb_bad {
	uint64_t off, len;              /* bytes on the member device */
};

/* Decoded superblock. */
struct volume_sb {
	uint64_t events;
	uint8_t volume_uuid[16], member_uuid[16];
	uint32_t member_index, nmembers;
	uint64_t member_size, data_offset, data_size, end_copy;
	uint64_t bitmap_offset;
	uint32_t bitmap_bytes, bitmap_shift, flags, nsegs, rebuild_seg, nbad;
	uint64_t rebuild_off;
	uint32_t scrub_seg;
	uint64_t scrub_off;             /* VOLUME_SB_NO_REBUILD: none */
	uint8_t member_state[VOLUME_SB_MAX_MEMBERS];
	uint8_t member_uuids[VOLUME_SB_MAX_MEMBERS][16];
	struct volume_sb_seg segs[VOLUME_SB_MAX_SEGS];
	char name[64];
	struct volume_sb_bad bad[VOLUME_SB_MAX_BAD];
	uint32_t nspares;               /* idle hot spares; index nmembers + i is spare i */
	uint8_t spare_uuids[VOLUME_SB_MAX_SPARES][16];
	/* events of the commit after the bitmap was last zeroed: a member whose
	 * own events are at least this missed only writes the bitmap marks
	 * (re-add). 0: unknown (made before the field), re-add refused. */
	uint64_t bitmap_events;
};

void volume_sb_encode(const struct volume_sb *sb, uint8_t *buf);
/* 0, or -EBADMSG (bad magic, checksum or field), -EPROTONOSUPPORT (version). */
int volume_sb_decode(const uint8_t *buf, struct volume_sb *sb);
/* Where the end copy lives on a device of size bytes. */
uint64_t volume_sb_end_copy(uint64_t size);
/* Reads the first good copy (start, then end): 0, -ENODATA (none), -EBADMSG (both bad). */
int volume_sb_read(struct bdev *dev, struct volume_sb *sb);
/* Writes both copies. */
int volume_sb_write(struct bdev *dev, const struct volume_sb *sb);

#endif
