/*
 * gpt.c - GUID partition tables. Needs a protective MBR; the primary header
 * at LBA 1 must pass its CRC32, name its own LBA and carry an entry array
 * whose CRC32 matches; if it does not, the backup header in the last sector
 * is used, so a disk whose first sectors were damaged still lists its
 * partitions.
 */
#include <string.h>

#include "../probe.h"

#define SECTOR 512
#define GPT_PRIMARY_LBA 1
#define H_SIGNATURE 0
#define H_HEADER_SIZE 12
#define H_HEADER_CRC 16
#define H_MY_LBA 24
#define H_FIRST_USABLE 40
#define H_LAST_USABLE 48
#define H_DISK_GUID 56
#define H_ENTRIES_LBA 72
#define H_NUM_ENTRIES 80
#define H_ENTRY_SIZE 84
#define H_ENTRIES_CRC 88
#define H_MIN_SIZE 92
#define E_TYPE 0
#define E_UUID 16
#define E_START 32
#define E_END 40
#define E_ATTRS 48
#define E_NAME 56
#define E_SIZE 128

static uint32_t gpt_crc32(const uint8_t *buf, size_t len, size_t skip, size_t skiplen)
{
	static const uint8_t zeros[4];
	uint32_t crc = devdb_crc32(~0u, buf, skip);

	crc = devdb_crc32(crc, zeros, skiplen);
	return ~devdb_crc32(crc, buf + skip + skiplen, len - skip - skiplen);
}

/* EFI GUIDs store their first three fields little-endian. */
static void gpt_guid(char out[40], const uint8_t *g)
{
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

static bool pmbr_valid(struct devdb_probe *pr)
{
	const uint8_t *mbr = devdb_probe_get(pr, 0, SECTOR);

	if (!mbr || mbr[510] != 0x55 || mbr[511] != 0xAA)
		return false;
	for (int i = 0; i < 4; i++)
		if (mbr[446 + 16 * i + 4] == 0xEE)
			return true;
	return false;
}

static const uint8_t *gpt_header(struct devdb_probe *pr, uint64_t lba, uint64_t lastlba,
				 const uint8_t **ret_ents)
{
	const uint8_t *h = devdb_probe_get(pr, lba * SECTOR, SECTOR), *ents;
	uint32_t hsz;
	uint64_t fu, lu, esz;

	if (!h || memcmp(h + H_SIGNATURE, "EFI PART", 8))
		return NULL;
	hsz = util_get_le32(h + H_HEADER_SIZE);
	if (hsz > SECTOR || hsz < H_MIN_SIZE)
		return NULL;
	if (gpt_crc32(h, hsz, H_HEADER_CRC, 4) != util_get_le32(h + H_HEADER_CRC))
		return NULL;
	if (util_get_le64(h + H_MY_LBA) != lba)
		return NULL;
	fu = util_get_le64(h + H_FIRST_USABLE);
	lu = util_get_le64(h + H_LAST_USABLE);
	if (lu < fu || fu > lastlba || lu > lastlba || (fu < lba && lba < lu))
		return NULL;
	esz = (uint64_t)util_get_le32(h + H_NUM_ENTRIES) * util_get_le32(h + H_ENTRY_SIZE);
	if (esz == 0 || esz >= UINT32_MAX || util_get_le32(h + H_ENTRY_SIZE) != E_SIZE)
		return NULL;
	if (util_get_le64(h + H_ENTRIES_LBA) > UINT64_MAX / SECTOR)
		return NULL;
	ents = devdb_probe_get(pr, util_get_le64(h + H_ENTRIES_LBA) * SECTOR, esz);
	if (!ents || gpt_crc32(ents, esz, 0, 0) != util_get_le32(h + H_ENTRIES_CRC))
		return NULL;
	*ret_ents = ents;
	return h;
}

static int probe_gpt(struct devdb_probe *pr, struct devdb_pt *pt)
{
	uint64_t lastlba, fu, lu;
	const uint8_t *h, *e;
	uint32_t n;

	if (pr->size < SECTOR || !pmbr_valid(pr))
		return devdb_probe_nothing(pr);
	lastlba = pr->size / SECTOR - 1;
	h = gpt_header(pr, GPT_PRIMARY_LBA, lastlba, &e);
	if (!h && !pr->io_error)
		h = gpt_header(pr, lastlba, lastlba, &e);
	if (!h)
		return devdb_probe_nothing(pr);
	gpt_guid(pt->id, h + H_DISK_GUID);
	fu = util_get_le64(h + H_FIRST_USABLE);
	lu = util_get_le64(h + H_LAST_USABLE);
	n = util_get_le32(h + H_NUM_ENTRIES);
	for (uint32_t i = 0; i < n; i++, e += E_SIZE) {
		struct devdb_pt_entry pe = { .number = i + 1 };
		uint64_t start = util_get_le64(e + E_START), end = util_get_le64(e + E_END);

		if (devdb_is_zero(e + E_TYPE, 16))
			continue;
		if (end < start || start < fu || end > lu)
			continue;       /* outside the usable area, as libblkid ignores it */
		pe.start = start;
		pe.size = end - start + 1;
		devdb_to_utf8(DEVDB_ENC_UTF16LE, pe.name, sizeof(pe.name), e + E_NAME, 72);
		for (size_t k = strlen(pe.name); k && (pe.name[k - 1] == ' ' || pe.name[k - 1] == '\t'); k--)
			pe.name[k - 1] = '\0';
		gpt_guid(pe.uuid, e + E_UUID);
		gpt_guid(pe.type, e + E_TYPE);
		pe.flags = util_get_le64(e + E_ATTRS);
		if (devdb_pt_add(pt, &pe) < 0)
			return -1;
	}
	return 0;
}

const struct devdb_pt_prober devdb_gpt_prober = {
	.name = "gpt",
	.probe = probe_gpt,
};
