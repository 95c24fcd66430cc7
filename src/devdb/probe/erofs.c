/*
 * erofs.c - EROFS. Superblock at 1 KiB; with the SB_CSUM feature its CRC32C
 * over the rest of the first block is verified.
 */
#include <string.h>

#include "../probe.h"

#define EROFS_SB_OFF 1024
#define SB_CHECKSUM 4
#define SB_FEATURE_COMPAT 8
#define SB_BLKSZBITS 12
#define SB_BLOCKS 36
#define SB_UUID 48
#define SB_VOLUME_NAME 64
#define SB_SIZE 128
#define FEATURE_SB_CSUM 1

static int probe_erofs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, EROFS_SB_OFF, SB_SIZE);
	unsigned bits;
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	bits = sb[SB_BLKSZBITS];
	if (bits < 9 || bits > 16)
		return 1;
	if (util_get_le32(sb + SB_FEATURE_COMPAT) & FEATURE_SB_CSUM) {
		size_t len;
		const uint8_t *c;

		if ((1u << bits) <= EROFS_SB_OFF)
			return 1;
		len = (1u << bits) - EROFS_SB_OFF;
		c = devdb_probe_get(pr, EROFS_SB_OFF, len);
		if (!c)
			return devdb_probe_nothing(pr);
		if (devdb_crc32c_skip(~0u, c, len, SB_CHECKSUM, 4) != util_get_le32(c + SB_CHECKSUM))
			return 1;
	}
	if (sb[SB_VOLUME_NAME])
		r |= devdb_probe_set_label(pr, "LABEL", sb + SB_VOLUME_NAME, 16);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_UUID);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", 1u << bits);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", 1u << bits);
	r |= devdb_probe_set_u64(pr, "FSSIZE", (uint64_t)(1u << bits) * util_get_le32(sb + SB_BLOCKS));
	return r ? -1 : 0;
}

const struct devdb_prober devdb_erofs_prober = {
	.name = "erofs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_erofs,
	.magics = { { .bytes = "\xe2\xe1\xf5\xe0", .len = 4, .kboff = 1 } },
};
