/*
 * f2fs.c - F2FS. Superblock at 1 KiB; versions after 1.0 carry a CRC32 at
 * checksum_offset, verified before the label (UTF-16LE) and UUID are used.
 */
#include <string.h>

#include "../probe.h"

#define F2FS_SB_OFF 1024
#define SB_MAJOR 4
#define SB_MINOR 6
#define SB_LOG_BLOCKSIZE 0x10
#define SB_CHECKSUM_OFFSET 0x20
#define SB_BLOCK_COUNT 0x24
#define SB_UUID 0x6c
#define SB_VOLUME_NAME 0x7c
#define SB_SIZE (0x7c + 1024)

static int probe_f2fs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, F2FS_SB_OFF, SB_SIZE);
	uint16_t major, minor;
	uint32_t csum_off, log;
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	major = util_get_le16(sb + SB_MAJOR);
	minor = util_get_le16(sb + SB_MINOR);
	if (major == 1 && minor == 0)
		return 0;
	csum_off = util_get_le32(sb + SB_CHECKSUM_OFFSET);
	if (csum_off) {
		const uint8_t *c;

		if (csum_off % 4 || csum_off + 4 > 4096)
			return 1;
		c = devdb_probe_get(pr, F2FS_SB_OFF, csum_off + 4);
		if (!c)
			return devdb_probe_nothing(pr);
		if (devdb_crc32(0xF2F52010, c, csum_off) != util_get_le32(c + csum_off))
			return 1;
	}
	if (sb[SB_VOLUME_NAME])
		r |= devdb_probe_set_utf8(pr, "LABEL", sb + SB_VOLUME_NAME, 1024, DEVDB_ENC_UTF16LE,
					  false);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_UUID);
	r |= devdb_probe_set(pr, "VERSION", "%u.%u", major, minor);
	log = util_get_le32(sb + SB_LOG_BLOCKSIZE);
	if (log <= 16) {
		r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", 1u << log);
		r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", 1u << log);
		r |= devdb_probe_set_u64(pr, "FSSIZE", util_get_le64(sb + SB_BLOCK_COUNT) << log);
	}
	return r ? -1 : 0;
}

const struct devdb_prober devdb_f2fs_prober = {
	.name = "f2fs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_f2fs,
	.magics = { { .bytes = "\x10\x20\xF5\xF2", .len = 4, .kboff = 1 } },
};
