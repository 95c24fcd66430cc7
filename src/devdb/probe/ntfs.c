/*
 * ntfs.c - NTFS. The boot sector's BPB must have NTFS's zeros where FAT has
 * counts, and the $MFT and $Volume records must start with "FILE"; the
 * label is $Volume's VOLUME_NAME attribute (UTF-16LE).
 */
#include <string.h>

#include "../probe.h"

#define BS_SECTOR_SIZE 0x0b
#define BS_SECTORS_PER_CLUSTER 0x0d
#define BS_RESERVED 0x0e
#define BS_FATS 0x10
#define BS_ROOT_ENTRIES 0x11
#define BS_SECTORS 0x13
#define BS_SECTORS_PER_FAT 0x16
#define BS_LARGE_SECTORS 0x20
#define BS_NUMBER_OF_SECTORS 0x28
#define BS_MFT_CLUSTER 0x30
#define BS_MFT_MIRROR_CLUSTER 0x38
#define BS_CLUSTERS_PER_MFT 0x40
#define BS_VOLUME_SERIAL 0x48

#define MFT_RECORD_VOLUME 3
#define ATTR_VOLUME_NAME 0x60
#define ATTR_END 0xffffffffu

static int ntfs_probe(struct devdb_probe *pr, bool save)
{
	const uint8_t *ns = devdb_probe_get(pr, 0, 512), *mft;
	uint32_t spc, rec_size, attr_off;
	uint16_t ss;
	int8_t cpm;
	uint64_t nr_clusters, off;
	int r = 0;

	if (!ns)
		return devdb_probe_nothing(pr);
	ss = util_get_le16(ns + BS_SECTOR_SIZE);
	if (ss < 256 || ss > 4096 || (ss & (ss - 1)))
		return 1;
	spc = ns[BS_SECTORS_PER_CLUSTER];
	switch (spc) {
	case 1: case 2: case 4: case 8: case 16: case 32: case 64: case 128:
		break;
	default:
		if (spc < 240 || spc > 249)
			return 1;
		spc = 1u << (256 - spc);
	}
	if ((uint32_t)ss * spc > 2 * 1024 * 1024)
		return 1;
	if (util_get_le16(ns + BS_RESERVED) || util_get_le16(ns + BS_ROOT_ENTRIES) ||
	    util_get_le16(ns + BS_SECTORS) || util_get_le16(ns + BS_SECTORS_PER_FAT) ||
	    util_get_le32(ns + BS_LARGE_SECTORS) || ns[BS_FATS])
		return 1;
	cpm = (int8_t)ns[BS_CLUSTERS_PER_MFT];
	if ((uint8_t)cpm < 0xe1 || (uint8_t)cpm > 0xf7) {
		switch (cpm) {
		case 1: case 2: case 4: case 8: case 16: case 32: case 64:
			break;
		default:
			return 1;
		}
	}
	if (cpm > 0) {
		rec_size = (uint32_t)cpm * spc * ss;
	} else {
		int shift = -cpm;

		if (shift < 0 || shift >= 31)
			return 1;
		rec_size = 1u << shift;
	}
	nr_clusters = util_get_le64(ns + BS_NUMBER_OF_SECTORS) / spc;
	if (util_get_le64(ns + BS_MFT_CLUSTER) > nr_clusters ||
	    util_get_le64(ns + BS_MFT_MIRROR_CLUSTER) > nr_clusters)
		return 1;
	off = util_get_le64(ns + BS_MFT_CLUSTER) * ss * spc;
	if (rec_size < 4)
		return 1;
	mft = devdb_probe_get(pr, off, rec_size);
	if (!mft || memcmp(mft, "FILE", 4))
		return devdb_probe_nothing(pr);
	off += MFT_RECORD_VOLUME * (uint64_t)rec_size;
	mft = devdb_probe_get(pr, off, rec_size);
	if (!mft || memcmp(mft, "FILE", 4))
		return devdb_probe_nothing(pr);
	if (!save)
		return 0;
	if (rec_size < 28)
		return 1;
	attr_off = util_get_le16(mft + 20);
	while ((uint64_t)attr_off + 22 <= rec_size && attr_off <= util_get_le32(mft + 28)) {
		const uint8_t *a = mft + attr_off;
		uint32_t alen = util_get_le32(a + 4), type = util_get_le32(a);

		if (!alen || type == ATTR_END)
			break;
		if (type == ATTR_VOLUME_NAME) {
			uint32_t voff = util_get_le16(a + 20), vlen = util_get_le32(a + 16);

			if (voff <= rec_size - attr_off && vlen <= rec_size - attr_off - voff)
				r |= devdb_probe_set_utf8(pr, "LABEL", a + voff, vlen, DEVDB_ENC_UTF16LE,
							  false);
			break;
		}
		if (alen > rec_size)
			break;
		attr_off += alen;
	}
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", (uint64_t)ss * spc);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", ss);
	r |= devdb_probe_set_u64(pr, "FSSIZE", util_get_le64(ns + BS_NUMBER_OF_SECTORS) * ss);
	if (!devdb_is_zero(ns + BS_VOLUME_SERIAL, 8))
		r |= devdb_probe_set(pr, "UUID", "%016llX",
				     (unsigned long long)util_get_le64(ns + BS_VOLUME_SERIAL));
	return r ? -1 : 0;
}

static int probe_ntfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	return ntfs_probe(pr, true);
}

bool devdb_probe_is_ntfs(struct devdb_probe *pr)
{
	const uint8_t *b = devdb_probe_get(pr, 3, 8);

	return b && !memcmp(b, "NTFS    ", 8) && ntfs_probe(pr, false) == 0;
}

const struct devdb_prober devdb_ntfs_prober = {
	.name = "ntfs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_ntfs,
	.magics = { { .bytes = "NTFS    ", .len = 8, .sboff = 3 } },
};
