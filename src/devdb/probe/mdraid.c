/*
 * mdraid.c - Linux MD RAID members (linux_raid_member): v0.90 superblocks
 * 64 KiB before the end (either byte order), v1.0 near the end, v1.1 at 0,
 * v1.2 at 4 KiB. A v1 superblock must name its own sector and pass its
 * checksum, so stale copies from a previous array are not reported.
 */
#include <string.h>

#include "../probe.h"

#define MD_RESERVED_BYTES 0x10000
#define MD_SB_MAGIC 0xa92b4efcu

/* v0.90 */
#define P0_SIZE 64
#define P0_MAJOR 4
#define P0_MINOR 8
#define P0_PATCH 12
#define P0_UUID0 20
#define P0_DEVSIZE 32
#define P0_UUID1 52

/* v1 */
#define P1_SIZE 256
#define P1_MAJOR 4
#define P1_SET_UUID 16
#define P1_SET_NAME 32
#define P1_SUPER_OFFSET 144
#define P1_DEVICE_UUID 168
#define P1_SB_CSUM 216
#define P1_MAX_DEV 220

static int probe_md0(struct devdb_probe *pr, uint64_t off)
{
	const uint8_t *sb = devdb_probe_get(pr, off, P0_SIZE);
	uint32_t (*get)(const void *);
	uint8_t uuid[16] = { 0 };
	uint32_t minor;
	uint64_t size;
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	if (util_get_le32(sb) == MD_SB_MAGIC)
		get = util_get_le32;
	else if (util_get_be32(sb) == MD_SB_MAGIC)
		get = util_get_be32;
	else
		return 1;
	minor = get(sb + P0_MINOR);
	/* the UUID words are printed most significant byte first */
	for (int w = 0; w < 4; w++) {
		uint32_t v;

		if (w && minor < 90)
			break;
		v = get(sb + (w ? P0_UUID1 + (w - 1) * 4 : P0_UUID0));
		uuid[w * 4] = (uint8_t)(v >> 24);
		uuid[w * 4 + 1] = (uint8_t)(v >> 16);
		uuid[w * 4 + 2] = (uint8_t)(v >> 8);
		uuid[w * 4 + 3] = (uint8_t)v;
	}
	size = (uint64_t)get(sb + P0_DEVSIZE) << 10;
	if (pr->size < size + MD_RESERVED_BYTES || off < size)
		return 1;
	r |= devdb_probe_set(pr, "VERSION", "%u.%u.%u", get(sb + P0_MAJOR), minor, get(sb + P0_PATCH));
	r |= devdb_probe_set_uuid(pr, "UUID", uuid);
	return r ? -1 : 0;
}

static bool md1_csum_ok(struct devdb_probe *pr, uint64_t off, const uint8_t *sb)
{
	uint64_t len = P1_SIZE + (uint64_t)util_get_le32(sb + P1_MAX_DEV) * 2;
	const uint8_t *d = devdb_probe_get(pr, off, len);
	uint64_t csum = 0;

	if (!d)
		return false;
	csum -= util_get_le32(d + P1_SB_CSUM);
	for (; len >= 4; len -= 4, d += 4)
		csum += util_get_le32(d);
	if (len == 2)
		csum += util_get_le16(d);
	csum = (csum >> 32) + (uint32_t)csum;
	return csum == util_get_le32(sb + P1_SB_CSUM);
}

static int probe_md1(struct devdb_probe *pr, uint64_t off)
{
	const uint8_t *sb = devdb_probe_get(pr, off, P1_SIZE);
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	if (util_get_le32(sb) != MD_SB_MAGIC || util_get_le32(sb + P1_MAJOR) != 1 ||
	    util_get_le64(sb + P1_SUPER_OFFSET) != off >> 9)
		return 1;
	if (!md1_csum_ok(pr, off, sb))
		return devdb_probe_nothing(pr);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + P1_SET_UUID);
	r |= devdb_probe_set_uuid(pr, "UUID_SUB", sb + P1_DEVICE_UUID);
	r |= devdb_probe_set_label(pr, "LABEL", sb + P1_SET_NAME, 32);
	return r ? -1 : 0;
}

static int probe_mdraid(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const char *ver = NULL;
	int r = 1;

	if (pr->size > MD_RESERVED_BYTES) {
		r = probe_md0(pr, (pr->size & ~(uint64_t)(MD_RESERVED_BYTES - 1)) - MD_RESERVED_BYTES);
		if (r < 1)
			return r;
		r = probe_md1(pr, (pr->size & ~(uint64_t)0xfff) - 0x2000);
		if (r < 0)
			return r;
		if (r == 0)
			ver = "1.0";
	}
	if (!ver) {
		r = probe_md1(pr, 0);
		if (r == 0)
			ver = "1.1";
		else if (r == 1 && (r = probe_md1(pr, 0x1000)) == 0)
			ver = "1.2";
	}
	if (!ver)
		return r;
	return devdb_probe_set(pr, "VERSION", "%s", ver) ? -1 : 0;
}

const struct devdb_prober devdb_mdraid_prober = {
	.name = "linux_raid_member",
	.usage = DEVDB_USAGE_RAID,
	.probe = probe_mdraid,
};
