/*
 * squashfs.c - squashfs 4 ("squashfs") and the older 1-3 ("squashfs3", either
 * byte order); libblkid gives them different TYPEs, so two probers.
 */
#include <string.h>

#include "../probe.h"

#define SQ_BLOCK_SIZE 12
#define SQ_VERSION_MAJOR 28
#define SQ_VERSION_MINOR 30
#define SQ_BYTES_USED 40
#define SQ_SIZE 96

static int probe_squashfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sq = devdb_probe_get(pr, 0, SQ_SIZE);
	uint16_t major, minor;
	int r = 0;

	if (!sq)
		return devdb_probe_nothing(pr);
	major = util_get_le16(sq + SQ_VERSION_MAJOR);
	minor = util_get_le16(sq + SQ_VERSION_MINOR);
	if (major < 4)
		return 1;
	r |= devdb_probe_set(pr, "VERSION", "%u.%u", major, minor);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", util_get_le32(sq + SQ_BLOCK_SIZE));
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", util_get_le32(sq + SQ_BLOCK_SIZE));
	r |= devdb_probe_set_u64(pr, "FSSIZE", util_get_le64(sq + SQ_BYTES_USED));
	return r ? -1 : 0;
}

static int probe_squashfs3(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sq = devdb_probe_get(pr, 0, SQ_SIZE);
	bool be = !memcmp(mag->bytes, "sqsh", 4);
	uint16_t major, minor;
	int r = 0;

	if (!sq)
		return devdb_probe_nothing(pr);
	major = be ? util_get_be16(sq + SQ_VERSION_MAJOR) : util_get_le16(sq + SQ_VERSION_MAJOR);
	minor = be ? util_get_be16(sq + SQ_VERSION_MINOR) : util_get_le16(sq + SQ_VERSION_MINOR);
	if (major > 3)
		return 1;
	r |= devdb_probe_set(pr, "VERSION", "%u.%u", major, minor);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", 1024);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", 1024);
	r |= devdb_probe_set(pr, "ENDIANNESS", be ? "BIG" : "LITTLE");
	return r ? -1 : 0;
}

const struct devdb_prober devdb_squashfs_prober = {
	.name = "squashfs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_squashfs,
	.magics = { { .bytes = "hsqs", .len = 4 } },
};

const struct devdb_prober devdb_squashfs3_prober = {
	.name = "squashfs3",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_squashfs3,
	.magics = { { .bytes = "sqsh", .len = 4 }, { .bytes = "hsqs", .len = 4 } },
};
