/*
 * lvm2.c - LVM2 physical volumes (LVM2_member). The label is in one of the
 * first four sectors; it must name its own sector and pass LVM's CRC, and
 * the PV UUID is printed in LVM's 6-4-4-4-4-4-6 grouping.
 */
#include <string.h>

#include "../probe.h"

#define LABEL_SIZE 512
#define L_SECTOR 8
#define L_CRC 16
#define L_OFFSET 20
#define L_PV_UUID 32
#define ID_LEN 32

static uint32_t lvm2_crc(const uint8_t *buf, size_t size)
{
	static const uint32_t tab[] = {
		0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
		0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
		0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
	};
	uint32_t crc = 0xf597a6cf;

	for (size_t i = 0; i < size; i++) {
		crc ^= buf[i];
		crc = (crc >> 4) ^ tab[crc & 0xf];
		crc = (crc >> 4) ^ tab[crc & 0xf];
	}
	return crc;
}

/* The label at sector (0..3), or NULL. */
static const uint8_t *lvm2_label(struct devdb_probe *pr, unsigned *ret_sector)
{
	for (unsigned s = 0; s < 4; s++) {
		const uint8_t *l = devdb_probe_get(pr, (uint64_t)s * 512, LABEL_SIZE);

		if (!l || memcmp(l, "LABELONE", 8) || memcmp(l + 24, "LVM2 001", 8))
			continue;
		if (util_get_le64(l + L_SECTOR) != s)
			continue;
		if (lvm2_crc(l + L_OFFSET, LABEL_SIZE - L_OFFSET) != util_get_le32(l + L_CRC))
			continue;
		*ret_sector = s;
		return l;
	}
	return NULL;
}

bool devdb_probe_is_lvm2(struct devdb_probe *pr)
{
	unsigned s;

	return lvm2_label(pr, &s) != NULL;
}

static int probe_lvm2(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	unsigned s;
	const uint8_t *l = lvm2_label(pr, &s);
	char uuid[ID_LEN + 7], *p = uuid;
	int r = 0;

	if (!l)
		return devdb_probe_nothing(pr);
	for (unsigned i = 0, b = 1; i < ID_LEN; i++, b <<= 1) {
		if (b & 0x4444440)
			*p++ = '-';
		*p++ = (char)l[L_PV_UUID + i];
	}
	*p = '\0';
	if (!devdb_is_zero(l + L_PV_UUID, ID_LEN))
		r |= devdb_probe_set(pr, "UUID", "%s", uuid);
	r |= devdb_probe_set(pr, "VERSION", "LVM2 001");
	return r ? -1 : 0;
}

const struct devdb_prober devdb_lvm2_prober = {
	.name = "LVM2_member",
	.usage = DEVDB_USAGE_RAID,
	.probe = probe_lvm2,
	.magics = {
		{ .bytes = "LVM2 001", .len = 8, .sboff = 0x218 },
		{ .bytes = "LVM2 001", .len = 8, .sboff = 0x018 },
		{ .bytes = "LVM2 001", .len = 8, .kboff = 1, .sboff = 0x018 },
		{ .bytes = "LVM2 001", .len = 8, .kboff = 1, .sboff = 0x218 },
	},
};
