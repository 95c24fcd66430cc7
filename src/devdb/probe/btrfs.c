/*
 * btrfs.c - btrfs. The superblock sits at 64 KiB; its CRC32C (over the
 * 4 KiB superblock after the checksum field) is checked, so a reformatted
 * device with an old btrfs copy left at 64 KiB is not reported as btrfs.
 */
#include <string.h>

#include "../probe.h"

#define BTRFS_SB_OFF (64 * 1024)
#define BTRFS_SB_SIZE 4096
#define SB_CSUM 0x00
#define SB_FSID 0x20
#define SB_TOTAL_BYTES 0x70
#define SB_SECTORSIZE 0x90
#define SB_CSUM_TYPE 0xc4
#define SB_DEV_ITEM_UUID (0xc9 + 0x42)
#define SB_LABEL 0x12b

static int probe_btrfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, BTRFS_SB_OFF, BTRFS_SB_SIZE);
	uint32_t ss;
	unsigned log;
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	/* crc32c is csum_type 0; other checksums (xxhash, sha256, blake2) are not verified */
	if (util_get_le16(sb + SB_CSUM_TYPE) == 0 &&
	    util_crc32c(0, sb + 0x20, BTRFS_SB_SIZE - 0x20) != util_get_le32(sb + SB_CSUM))
		return 1;
	ss = util_get_le32(sb + SB_SECTORSIZE);
	if (!ss)
		return 1;
	if (sb[SB_LABEL])
		r |= devdb_probe_set_label(pr, "LABEL", sb + SB_LABEL, 256);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_FSID);
	r |= devdb_probe_set_uuid(pr, "UUID_SUB", sb + SB_DEV_ITEM_UUID);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", ss);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", ss);
	log = 31u - (unsigned)__builtin_clz(ss);
	r |= devdb_probe_set_u64(pr, "FSLASTBLOCK", util_get_le64(sb + SB_TOTAL_BYTES) >> log);
	r |= devdb_probe_set_u64(pr, "FSSIZE", util_get_le64(sb + SB_TOTAL_BYTES));
	return r ? -1 : 0;
}

const struct devdb_prober devdb_btrfs_prober = {
	.name = "btrfs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.minsz = 1024 * 1024,
	.probe = probe_btrfs,
	.magics = { { .bytes = "_BHRfS_M", .len = 8, .kboff = 64, .sboff = 0x40 } },
};
