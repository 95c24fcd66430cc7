/*
 * ponyvol.c - members of a pony volume (docs/volume-format.md): a 4 KiB
 * superblock at the start and a copy at the end, each with its CRC32C.
 * TYPE pony_volume_member, UUID the volume's (so assembly finds every member
 * of a volume with one index hit), UUID_SUB the member's, LABEL the
 * volume's name.
 */
#include <string.h>

#include "../probe.h"

#define SB_SIZE 4096
#define SB_VERSION 0x08
#define SB_CRC 0x0c
#define SB_VOLUME_UUID 0x18
#define SB_MEMBER_UUID 0x28
#define SB_MEMBER_INDEX 0x38
#define SB_NAME 0x640
#define SB_NAME_LEN 64

static const uint8_t *ponyvol_sb(struct devdb_probe *pr, uint64_t off)
{
	/* the magic first: this prober runs on every device, and the end copy
	 * is not in the head buffer, so a 4 KiB read per device would be waste */
	const uint8_t *sb = devdb_probe_get(pr, off, 8);

	if (!sb || memcmp(sb, "PONYVOL\0", 8))
		return NULL;
	sb = devdb_probe_get(pr, off, SB_SIZE);
	if (!sb || util_get_le32(sb + SB_VERSION) != 1)
		return NULL;
	if (devdb_crc32c_skip(~0u, sb, SB_SIZE, SB_CRC, 4) != ~util_get_le32(sb + SB_CRC))
		return NULL;
	return sb;
}

static int probe_ponyvol(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = ponyvol_sb(pr, 0);
	int r = 0;

	/* the start copy, else the end copy (at size - 4096, rounded down) */
	if (!sb && !pr->io_error && pr->size >= 2 * SB_SIZE)
		sb = ponyvol_sb(pr, (pr->size - SB_SIZE) & ~(uint64_t)(SB_SIZE - 1));
	if (!sb)
		return devdb_probe_nothing(pr);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_VOLUME_UUID);
	r |= devdb_probe_set_uuid(pr, "UUID_SUB", sb + SB_MEMBER_UUID);
	if (sb[SB_NAME])
		r |= devdb_probe_set_label(pr, "LABEL", sb + SB_NAME, SB_NAME_LEN);
	r |= devdb_probe_set(pr, "VERSION", "1");
	r |= devdb_probe_set(pr, "MEMBER_INDEX", "%u", util_get_le32(sb + SB_MEMBER_INDEX));
	return r ? -1 : 0;
}

const struct devdb_prober devdb_ponyvol_prober = {
	.name = "pony_volume_member",
	.usage = DEVDB_USAGE_RAID,
	.minsz = 2 * SB_SIZE,
	.probe = probe_ponyvol,
};
