/*
 * bitlocker.c - BitLocker (Vista, 7 and To Go). The boot sector mimics FAT or
 * NTFS, so vfat asks devdb_probe_is_bitlocker() before claiming it; the FVE
 * metadata block gives the version, the volume GUID and the description
 * (LABEL, UTF-16LE).
 */
#include <string.h>

#include "../probe.h"

#define BDE_MAGIC_VISTA "\xeb\x52\x90-FVE-FS-"
#define BDE_MAGIC_WIN7 "\xeb\x58\x90-FVE-FS-"
#define BDE_MAGIC_TOGO "\xeb\x58\x90MSWIN4.1"
#define WIN7_FVE_OFFSET 176
#define TOGO_FVE_OFFSET 440
#define FVE_BLOCK_HEADER 64     /* signature, version at 10 */
#define FVE_HEADER 48           /* size, version, header_size, size_copy, volume GUID at 16 */
#define ENTRY_HEADER 8          /* size, entry type, value type, version */
#define ENTRY_DESCRIPTION 0x0007
#define VALUE_STRING 0x0002

/* 0: BitLocker; *ret_fve the metadata (NULL for Vista); 1: not; <0 error */
static int bde_headers(struct devdb_probe *pr, const uint8_t **ret_fve)
{
	const uint8_t *buf = devdb_probe_get(pr, 0, 512), *fve;
	uint64_t off;

	*ret_fve = NULL;
	if (!buf)
		return devdb_probe_nothing(pr);
	if (!memcmp(buf, BDE_MAGIC_VISTA, 11))
		return 0;
	if (!memcmp(buf, BDE_MAGIC_WIN7, 11))
		off = util_get_le64(buf + WIN7_FVE_OFFSET);
	else if (!memcmp(buf, BDE_MAGIC_TOGO, 11))
		off = util_get_le64(buf + TOGO_FVE_OFFSET);
	else
		return 1;
	if (!off || off % 64)
		return 1;
	fve = devdb_probe_get(pr, off, FVE_BLOCK_HEADER + FVE_HEADER);
	if (!fve)
		return devdb_probe_nothing(pr);
	if (memcmp(fve, "-FVE-FS-", 8))
		return 1;
	fve = devdb_probe_get(pr, off, FVE_BLOCK_HEADER + (uint64_t)util_get_le32(fve + FVE_BLOCK_HEADER));
	if (!fve)
		return devdb_probe_nothing(pr);
	*ret_fve = fve;
	return 0;
}

bool devdb_probe_is_bitlocker(struct devdb_probe *pr)
{
	const uint8_t *fve;

	return bde_headers(pr, &fve) == 0;
}

static int probe_bitlocker(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *fve, *h, *g;
	uint32_t size;
	int r = bde_headers(pr, &fve);

	if (r || !fve)
		return r;
	r = devdb_probe_set(pr, "VERSION", "%d", util_get_le16(fve + 10));
	h = fve + FVE_BLOCK_HEADER;
	size = util_get_le32(h);
	for (uint32_t off = FVE_HEADER; off + ENTRY_HEADER < size;) {
		const uint8_t *e = h + off;
		uint16_t esize = util_get_le16(e);

		if (off % 2 || esize < ENTRY_HEADER || off + esize > size)
			return 1;       /* libblkid: an error; here: not a valid BitLocker */
		if (util_get_le16(e + 2) == ENTRY_DESCRIPTION && util_get_le16(e + 4) == VALUE_STRING) {
			r |= devdb_probe_set_utf8(pr, "LABEL", e + ENTRY_HEADER, esize - ENTRY_HEADER,
						  DEVDB_ENC_UTF16LE, false);
			break;
		}
		off += esize;
	}
	g = h + 16;
	if (!devdb_is_zero(g, 16))
		r |= devdb_probe_set(pr, "UUID",
			"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11],
			g[12], g[13], g[14], g[15]);
	return r ? -1 : 0;
}

const struct devdb_prober devdb_bitlocker_prober = {
	.name = "BitLocker",
	.usage = DEVDB_USAGE_CRYPTO,
	.probe = probe_bitlocker,
	.magics = {
		{ .bytes = BDE_MAGIC_VISTA, .len = 11 },
		{ .bytes = BDE_MAGIC_WIN7, .len = 11 },
		{ .bytes = BDE_MAGIC_TOGO, .len = 11 },
	},
};
