/*
 * vfat.c - FAT12, FAT16 and FAT32. The boot sector has no single magic, so
 * the geometry (media byte, power-of-two cluster and sector sizes, cluster
 * count within the FAT type's range) decides, as in libblkid. The volume
 * label is the root directory's volume-ID entry (LABEL), which tools like
 * mlabel keep current; the boot sector's copy is LABEL_FATBOOT.
 */
#include <string.h>

#include "../probe.h"

/* BIOS parameter block offsets */
#define BS_SECTOR_SIZE 0x0b
#define BS_CLUSTER_SIZE 0x0d
#define BS_RESERVED 0x0e
#define BS_FATS 0x10
#define BS_DIR_ENTRIES 0x11
#define BS_SECTORS 0x13
#define BS_MEDIA 0x15
#define BS_FAT_LENGTH 0x16
#define BS_TOTAL_SECT 0x20
/* FAT12/16 extended boot record */
#define MS_EXT_BOOT_SIGN 0x26
#define MS_SERNO 0x27
#define MS_LABEL 0x2b
#define MS_MAGIC 0x36
/* FAT32 */
#define VS_FAT32_LENGTH 0x24
#define VS_ROOT_CLUSTER 0x2c
#define VS_FSINFO_SECTOR 0x30
#define VS_EXT_BOOT_SIGN 0x42
#define VS_SERNO 0x43
#define VS_LABEL 0x47
#define BS_PMAGIC 0x1fe

#define FAT12_MAX 0xFF4
#define FAT16_MAX 0xFFF4
#define FAT32_MAX 0x0FFFFFF6

#define DIR_ENTRY_SIZE 32
#define ATTR_VOLUME_ID 0x08
#define ATTR_DIR 0x10
#define ATTR_LONG_NAME 0x0f
#define ATTR_MASK 0x3f

struct fat_geom {
	uint32_t cluster_count, fat_size, sect_count;
	uint16_t sector_size, reserved;
};

static bool is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

static bool fat_valid(struct devdb_probe *pr, const struct devdb_magic *mag, const uint8_t *bs,
		      struct fat_geom *g)
{
	uint32_t fat_length, dir_size, max_count, data;
	uint16_t dir_entries;

	if (mag->len <= 2) {
		/* magic-less boot sectors: demand the 55AA and refuse JFS/HPFS */
		if (bs[BS_PMAGIC] != 0x55 || bs[BS_PMAGIC + 1] != 0xAA)
			return false;
		if (!memcmp(bs + MS_MAGIC, "JFS     ", 8) || !memcmp(bs + MS_MAGIC, "HPFS    ", 8))
			return false;
	}
	if (!bs[BS_FATS] || !util_get_le16(bs + BS_RESERVED))
		return false;
	if (!(bs[BS_MEDIA] >= 0xf8 || bs[BS_MEDIA] == 0xf0))
		return false;
	if (!is_pow2(bs[BS_CLUSTER_SIZE]))
		return false;
	g->sector_size = util_get_le16(bs + BS_SECTOR_SIZE);
	if (!is_pow2(g->sector_size) || g->sector_size < 512 || g->sector_size > 4096)
		return false;
	dir_entries = util_get_le16(bs + BS_DIR_ENTRIES);
	g->reserved = util_get_le16(bs + BS_RESERVED);
	g->sect_count = util_get_le16(bs + BS_SECTORS);
	if (!g->sect_count)
		g->sect_count = util_get_le32(bs + BS_TOTAL_SECT);
	fat_length = util_get_le16(bs + BS_FAT_LENGTH);
	if (!fat_length)
		fat_length = util_get_le32(bs + VS_FAT32_LENGTH);
	g->fat_size = fat_length * bs[BS_FATS];
	dir_size = (dir_entries * DIR_ENTRY_SIZE + g->sector_size - 1u) / g->sector_size;
	/* unsigned wrap as in libblkid: a bogus geometry gives a huge count */
	data = g->sect_count - (g->reserved + g->fat_size + dir_size);
	g->cluster_count = data / bs[BS_CLUSTER_SIZE];
	if (!util_get_le16(bs + BS_FAT_LENGTH) && util_get_le32(bs + VS_FAT32_LENGTH))
		max_count = FAT32_MAX;
	else
		max_count = g->cluster_count > FAT12_MAX ? FAT16_MAX : FAT12_MAX;
	if (g->cluster_count > max_count)
		return false;
	return !devdb_probe_is_bitlocker(pr);
}

static const struct devdb_magic *fat_magic(struct devdb_probe *pr);

bool devdb_probe_is_fat(struct devdb_probe *pr)
{
	const struct devdb_magic *mag = fat_magic(pr);
	const uint8_t *bs = mag ? devdb_probe_get(pr, 0, 512) : NULL;
	struct fat_geom g;

	return bs && fat_valid(pr, mag, bs, &g);
}

/*
 * The volume-ID entry among entries directory entries at off; 1 if found.
 * Read 16 entries at a time: the label is usually the first entry and the
 * directory ends at the first empty one, so a whole 16 KiB root directory
 * is rarely needed.
 */
static int fat_search_label(struct devdb_probe *pr, uint64_t off, uint32_t entries, uint8_t out[11])
{
	for (uint32_t base = 0; base < entries; base += 16) {
		uint32_t n = MIN(16u, entries - base);
		const uint8_t *dir = devdb_probe_get(pr, off + (uint64_t)base * DIR_ENTRY_SIZE,
						     (uint64_t)n * DIR_ENTRY_SIZE);

		if (!dir)
			return 0;
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *e = dir + (size_t)i * DIR_ENTRY_SIZE;

			if (e[0] == 0x00)
				return 0;
			if (e[0] == 0xe5 || util_get_le16(e + 20) || util_get_le16(e + 26) ||
			    (e[11] & ATTR_MASK) == ATTR_LONG_NAME)
				continue;
			if ((e[11] & (ATTR_VOLUME_ID | ATTR_DIR)) == ATTR_VOLUME_ID) {
				memcpy(out, e, 11);
				if (out[0] == 0x05)
					out[0] = 0xE5;
				return 1;
			}
		}
	}
	return 0;
}

/* FAT32: walk the root directory's cluster chain (at most 100 clusters). */
static int fat32_search_label(struct devdb_probe *pr, const uint8_t *bs, const struct fat_geom *g,
			      uint8_t out[11])
{
	uint32_t cluster_bytes = bs[BS_CLUSTER_SIZE] * (uint32_t)g->sector_size;
	uint32_t start = g->reserved + g->fat_size;
	uint32_t entries = (uint32_t)(((uint64_t)util_get_le32(bs + VS_FAT32_LENGTH) * g->sector_size) / 4);
	uint32_t next = util_get_le32(bs + VS_ROOT_CLUSTER);
	int maxloop = 100;

	while (next && next < entries && --maxloop) {
		uint64_t off = ((uint64_t)start + (uint64_t)(next - 2) * bs[BS_CLUSTER_SIZE]) * g->sector_size;
		const uint8_t *fat;

		if (next >= 2 && fat_search_label(pr, off, cluster_bytes / DIR_ENTRY_SIZE, out))
			return 1;
		fat = devdb_probe_get(pr, (uint64_t)g->reserved * g->sector_size + (uint64_t)next * 4, 4);
		if (!fat)
			break;
		next = util_get_le32(fat) & 0x0fffffff;
	}
	return 0;
}

static int probe_vfat(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *bs = devdb_probe_get(pr, 0, 512);
	const uint8_t *boot_label = NULL, *serno = NULL;
	uint8_t label[11];
	bool have_label = false;
	const char *version = NULL;
	struct fat_geom g;
	int r = 0;

	if (!bs || !fat_valid(pr, mag, bs, &g))
		return devdb_probe_nothing(pr);
	if (util_get_le16(bs + BS_FAT_LENGTH)) {
		uint64_t root = ((uint64_t)g.reserved + g.fat_size) * g.sector_size;

		have_label = fat_search_label(pr, root, util_get_le16(bs + BS_DIR_ENTRIES), label);
		bs = devdb_probe_get(pr, 0, 512);
		if (!bs)
			return devdb_probe_nothing(pr);
		if (bs[MS_EXT_BOOT_SIGN] == 0x29)
			boot_label = bs + MS_LABEL;
		if (bs[MS_EXT_BOOT_SIGN] == 0x28 || bs[MS_EXT_BOOT_SIGN] == 0x29)
			serno = bs + MS_SERNO;
		r |= devdb_probe_set(pr, "SEC_TYPE", "msdos");
		if (g.cluster_count < FAT12_MAX)
			version = "FAT12";
		else if (g.cluster_count < FAT16_MAX)
			version = "FAT16";
	} else if (util_get_le32(bs + VS_FAT32_LENGTH)) {
		uint16_t fsinfo;

		have_label = fat32_search_label(pr, bs, &g, label);
		bs = devdb_probe_get(pr, 0, 512);
		if (!bs)
			return devdb_probe_nothing(pr);
		version = "FAT32";
		if (bs[VS_EXT_BOOT_SIGN] == 0x29)
			boot_label = bs + VS_LABEL;
		serno = bs + VS_SERNO;
		fsinfo = util_get_le16(bs + VS_FSINFO_SECTOR);
		if (fsinfo) {
			const uint8_t *fi = devdb_probe_get(pr, (uint64_t)fsinfo * g.sector_size, 512);

			if (!fi)
				return devdb_probe_nothing(pr);
			if (memcmp(fi, "RRaA", 4) && memcmp(fi, "RRdA", 4) && !devdb_is_zero(fi, 4))
				return 1;
			if (memcmp(fi + 484, "rrAa", 4) && !devdb_is_zero(fi + 484, 4))
				return 1;
			bs = devdb_probe_get(pr, 0, 512);
			if (!bs)
				return devdb_probe_nothing(pr);
			boot_label = bs[VS_EXT_BOOT_SIGN] == 0x29 ? bs + VS_LABEL : NULL;
			serno = bs + VS_SERNO;
		}
	}
	if (boot_label && memcmp(boot_label, "NO NAME    ", 11))
		r |= devdb_probe_set_id_label(pr, "LABEL_FATBOOT", boot_label, 11);
	if (have_label)
		r |= devdb_probe_set_label(pr, "LABEL", label, 11);
	if (serno && !devdb_is_zero(serno, 4))
		r |= devdb_probe_set(pr, "UUID", "%02X%02X-%02X%02X", serno[3], serno[2], serno[1],
				     serno[0]);
	if (version)
		r |= devdb_probe_set(pr, "VERSION", "%s", version);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", (uint64_t)bs[BS_CLUSTER_SIZE] * g.sector_size);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", g.sector_size);
	r |= devdb_probe_set_u64(pr, "FSSIZE", (uint64_t)g.sector_size * g.sect_count);
	return r ? -1 : 0;
}

const struct devdb_prober devdb_vfat_prober = {
	.name = "vfat",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_vfat,
	.magics = {
		{ .bytes = "MSWIN", .len = 5, .sboff = 0x52 },
		{ .bytes = "FAT32   ", .len = 8, .sboff = 0x52 },
		{ .bytes = "MSDOS", .len = 5, .sboff = 0x36 },
		{ .bytes = "FAT16   ", .len = 8, .sboff = 0x36 },
		{ .bytes = "FAT12   ", .len = 8, .sboff = 0x36 },
		{ .bytes = "FAT     ", .len = 8, .sboff = 0x36 },
		{ .bytes = "\353", .len = 1 },
		{ .bytes = "\351", .len = 1 },
		{ .bytes = "\125\252", .len = 2, .sboff = 0x1fe },
	},
};

static const struct devdb_magic *fat_magic(struct devdb_probe *pr)
{
	for (const struct devdb_magic *m = devdb_vfat_prober.magics; m->len; m++) {
		const uint8_t *b = devdb_probe_get(pr, devdb_magic_offset(pr, m), m->len);

		if (b && !memcmp(b, m->bytes, m->len))
			return m;
	}
	return NULL;
}
