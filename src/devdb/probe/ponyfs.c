/*
 * ponyfs.c - a ponyfs made on one image (docs/ponyfs-format.md): its
 * superblock at offset 0, "PONYFS1\0", version 1, CRC32C over the 4 KiB
 * with its own field zeroed. TYPE ponyfs, UUID and LABEL the filesystem's,
 * so `pony mount LABEL=...` finds a single image with an index hit, and
 * `pony mkfs` can say what it is about to overwrite. (A ponyfs on a volume
 * is found through its members: pony_volume_member.)
 */
#include <string.h>

#include "../probe.h"

#define SB_SIZE 4096
#define SB_VERSION 0x08
#define SB_CRC 0x0c
#define SB_UUID 0x10
#define SB_LABEL 0x50
#define SB_LABEL_LEN 32

static int probe_ponyfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, 0, SB_SIZE);
	int r = 0;

	if (!sb || util_get_le32(sb + SB_VERSION) != 1 ||
	    devdb_crc32c_skip(~0u, sb, SB_SIZE, SB_CRC, 4) != ~util_get_le32(sb + SB_CRC))
		return devdb_probe_nothing(pr);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_UUID);
	if (sb[SB_LABEL])
		r |= devdb_probe_set_label(pr, "LABEL", sb + SB_LABEL, SB_LABEL_LEN);
	r |= devdb_probe_set(pr, "VERSION", "1");
	r |= devdb_probe_set(pr, "BLOCK_SIZE", "4096");
	return r ? -1 : 0;
}

const struct devdb_prober devdb_ponyfs_prober = {
	.name = "ponyfs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.minsz = 2 * SB_SIZE,
	.magics = { { .bytes = "PONYFS1\0", .len = 8 } },
	.probe = probe_ponyfs,
};
