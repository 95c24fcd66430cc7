/*
 * exfat.c - exFAT. The boot region's checksum (11 sectors summed, repeated
 * through the 12th) is verified before anything is believed; the label is
 * the root directory's label entry, in UTF-16LE.
 */
#include <string.h>

#include "../probe.h"

#define SB_MUST_BE_ZERO 11
#define SB_VOLUME_LENGTH 72
#define SB_FAT_OFFSET 80
#define SB_FAT_LENGTH 84
#define SB_HEAP_OFFSET 88
#define SB_CLUSTER_COUNT 92
#define SB_ROOT_CLUSTER 96
#define SB_SERIAL 100
#define SB_REV_MINOR 104
#define SB_REV_MAJOR 105
#define SB_SECTOR_SHIFT 108
#define SB_CLUSTER_SHIFT 109
#define SB_NUMBER_OF_FATS 110
#define SB_BOOT_SIGNATURE 510

#define ENTRY_SIZE 32
#define ENTRY_EOD 0x00
#define ENTRY_LABEL 0x83
#define MAX_DIR_ENTRIES (256 * 1024 * 1024 / ENTRY_SIZE)

static uint64_t cluster_offset(const uint8_t *sb, uint32_t cluster)
{
	return ((uint64_t)util_get_le32(sb + SB_HEAP_OFFSET) +
		((uint64_t)(cluster - 2) << sb[SB_CLUSTER_SHIFT])) << sb[SB_SECTOR_SHIFT];
}

static bool exfat_checksum_ok(struct devdb_probe *pr, uint32_t sector)
{
	const uint8_t *d = devdb_probe_get(pr, 0, (uint64_t)sector * 12);
	uint32_t sum = 0;

	if (!d)
		return false;
	for (size_t i = 0; i < (size_t)sector * 11; i++) {
		if (i == 106 || i == 107 || i == 112)
			continue;
		sum = ((sum & 1) ? 0x80000000u : 0) + (sum >> 1) + d[i];
	}
	for (size_t i = 0; i < sector / 4; i++)
		if (util_get_le32(d + (size_t)sector * 11 + i * 4) != sum)
			return false;
	return true;
}

static bool exfat_valid(struct devdb_probe *pr, const uint8_t *sb)
{
	uint32_t fat_off = util_get_le32(sb + SB_FAT_OFFSET);
	uint32_t fat_len = util_get_le32(sb + SB_FAT_LENGTH);
	uint32_t heap = util_get_le32(sb + SB_HEAP_OFFSET);
	uint8_t nfats = sb[SB_NUMBER_OF_FATS], sshift = sb[SB_SECTOR_SHIFT];
	uint32_t root = util_get_le32(sb + SB_ROOT_CLUSTER);

	if (util_get_le16(sb + SB_BOOT_SIGNATURE) != 0xAA55 || memcmp(sb, "\xEB\x76\x90", 3) ||
	    memcmp(sb + 3, "EXFAT   ", 8) || !devdb_is_zero(sb + SB_MUST_BE_ZERO, 53))
		return false;
	if (nfats < 1 || nfats > 2 || sshift < 9 || sshift > 12 ||
	    sb[SB_CLUSTER_SHIFT] > 25 - sshift)
		return false;
	if (fat_off < 24 || fat_off > heap - fat_len * nfats)
		return false;
	if (heap < fat_off + fat_len * nfats || heap > 1u << 31)
		return false;
	if (root < 2 || root > util_get_le32(sb + SB_CLUSTER_COUNT) + 1)
		return false;
	return exfat_checksum_ok(pr, 1u << sshift);
}

bool devdb_probe_is_exfat(struct devdb_probe *pr)
{
	const uint8_t *sb = devdb_probe_get(pr, 0, 512);

	return sb && !memcmp(sb + 3, "EXFAT   ", 8) && exfat_valid(pr, sb);
}

static const uint8_t *exfat_find_label(struct devdb_probe *pr, const uint8_t *sb)
{
	uint32_t cluster = util_get_le32(sb + SB_ROOT_CLUSTER);
	uint64_t csize = (uint64_t)1 << (sb[SB_SECTOR_SHIFT] + sb[SB_CLUSTER_SHIFT]);
	uint64_t off = cluster_offset(sb, cluster);

	for (size_t i = 0; i < MAX_DIR_ENTRIES; i++) {
		const uint8_t *e = devdb_probe_get(pr, off, ENTRY_SIZE);

		if (!e || e[0] == ENTRY_EOD)
			return NULL;
		if (e[0] == ENTRY_LABEL)
			return e;
		off += ENTRY_SIZE;
		if (off % csize == 0) {
			const uint8_t *next = devdb_probe_get(pr,
				((uint64_t)util_get_le32(sb + SB_FAT_OFFSET) << sb[SB_SECTOR_SHIFT]) +
				(uint64_t)cluster * 4, 4);

			if (!next)
				return NULL;
			cluster = util_get_le32(next);
			if (cluster < 2 || cluster > 0xffffff6)
				return NULL;
			off = cluster_offset(sb, cluster);
		}
	}
	return NULL;
}

static int probe_exfat(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, 0, 512), *label;
	uint32_t bs;
	int r = 0;

	if (!sb || !exfat_valid(pr, sb))
		return devdb_probe_nothing(pr);
	label = exfat_find_label(pr, sb);
	if (pr->io_error)
		return pr->io_error;
	if (label)
		r |= devdb_probe_set_utf8(pr, "LABEL", label + 2, MIN((size_t)label[1] * 2, 22),
					  DEVDB_ENC_UTF16LE, false);
	if (!devdb_is_zero(sb + SB_SERIAL, 4))
		r |= devdb_probe_set(pr, "UUID", "%02X%02X-%02X%02X", sb[SB_SERIAL + 3],
				     sb[SB_SERIAL + 2], sb[SB_SERIAL + 1], sb[SB_SERIAL]);
	r |= devdb_probe_set(pr, "VERSION", "%u.%u", sb[SB_REV_MAJOR], sb[SB_REV_MINOR]);
	bs = 1u << sb[SB_SECTOR_SHIFT];
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", bs);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", bs);
	r |= devdb_probe_set_u64(pr, "FSSIZE", bs * util_get_le64(sb + SB_VOLUME_LENGTH));
	return r ? -1 : 0;
}

const struct devdb_prober devdb_exfat_prober = {
	.name = "exfat",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_exfat,
	.magics = { { .bytes = "EXFAT   ", .len = 8, .sboff = 3 } },
};
