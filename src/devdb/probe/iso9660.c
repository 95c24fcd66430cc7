/*
 * iso9660.c - ISO 9660 and High Sierra. Walks the volume descriptors after
 * 32 KiB (plus the session offset of a multi-session disc) for the primary,
 * boot and Joliet ones; the root directory's "." entry must point at itself
 * (a lone "CD001" is not enough). Joliet's UTF-16 names are merged with the
 * primary's upper-case ASCII ones, as libblkid does, so LABEL keeps its case.
 */
#include <ctype.h>
#include <string.h>

#include "../probe.h"

#define ISO_SB_OFF 0x8000
#define ISO_SECTOR 2048
#define VD_READ 896
#define VD_BOOT 0
#define VD_PRIMARY 1
#define VD_SUPPLEMENTARY 2
#define VD_END 0xff

#define VD_SYSTEM_ID 8
#define VD_VOLUME_ID 40
#define VD_SPACE_SIZE 80
#define VD_ESCAPE 88
#define VD_BLOCK_SIZE 128
#define BOOT_SYSTEM_ID 7

/* the fields after the common part differ between ISO 9660 and High Sierra */
struct iso_layout {
	unsigned root, volume_set, publisher, preparer, application, created, modified;
	bool has_tz;
};
static const struct iso_layout iso_l = { 156, 190, 318, 446, 574, 813, 830, true };
static const struct iso_layout hs_l = { 172, 206, 334, 462, 590, 782, 798, false };

static size_t merge_utf16be_ascii(uint8_t *out, size_t out_len, const uint8_t *u16,
				  const uint8_t *ascii, size_t len)
{
	size_t o, a, u;

	for (o = 0, a = 0, u = 0; u + 1 < len && a < len && o + 1 < out_len; o += 2, a++, u += 2) {
		if (u16[u] >= 0xD8 && u16[u] <= 0xDB && u + 3 < len && u16[u + 2] >= 0xDC &&
		    u16[u + 2] <= 0xDF) {
			out[o++] = u16[u++];
			out[o++] = u16[u++];
		}
		if (ascii[a] == '_') {
			out[o] = u16[u];
			out[o + 1] = u16[u + 1];
		} else if (u16[u] == 0x00 && u16[u + 1] == '_') {
			out[o] = 0x00;
			out[o + 1] = ascii[a];
		} else if (u16[u] == 0x00 && toupper(ascii[a]) == toupper(u16[u + 1])) {
			out[o] = 0x00;
			out[o + 1] = isupper(ascii[a]) ? u16[u + 1] : ascii[a];
		} else {
			return 0;
		}
	}
	for (; a < len && o + 1 < out_len; o += 2, a++) {
		out[o] = 0x00;
		out[o + 1] = ascii[a];
	}
	return o;
}

static bool str_empty(const uint8_t *s, size_t len)
{
	if (!*s)
		return true;
	for (size_t i = 0; i < len; i++)
		if (!isspace(s[i]))
			return false;
	return true;
}

static bool u16_empty(const uint8_t *s, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		if (s[i] != 0 || !isspace(s[i + 1]))
			return false;
	return true;
}

/* A name from Joliet (merged with the ASCII copy when they agree) or ASCII. */
static int iso_set_name(struct devdb_probe *pr, const char *name, const uint8_t *jol,
			const uint8_t *asc, size_t len, bool label)
{
	uint8_t buf[128 * 5 / 2];
	size_t n;

	if (jol && (n = merge_utf16be_ascii(buf, sizeof(buf), jol, asc, len)) != 0)
		return devdb_probe_set_utf8(pr, name, buf, n, DEVDB_ENC_UTF16BE, !label);
	if (jol)
		return devdb_probe_set_utf8(pr, name, jol, len, DEVDB_ENC_UTF16BE, !label);
	return label ? devdb_probe_set_label(pr, name, asc, len) : devdb_probe_set_id_label(pr, name, asc, len);
}

/* PUBLISHER_ID and friends: an '_' first or blanks mean "not set". */
static int iso_set_id(struct devdb_probe *pr, const char *name, const uint8_t *pvd,
		      const uint8_t *jol, unsigned off, bool hs)
{
	const uint8_t *a = pvd + off, *j = jol ? jol + off : NULL;
	bool ascii_empty = str_empty(a, 128) || a[0] == '_';
	bool uni_empty = !j || u16_empty(j, 128) || (j[0] == 0 && j[1] == '_');
	uint8_t buf[320];
	size_t n;

	if (!uni_empty && !ascii_empty && !hs && (n = merge_utf16be_ascii(buf, sizeof(buf), j, a, 128)))
		return devdb_probe_set_utf8(pr, name, buf, n, DEVDB_ENC_UTF16BE, true);
	if (!uni_empty)
		return devdb_probe_set_utf8(pr, name, j, 128, DEVDB_ENC_UTF16BE, true);
	if (!ascii_empty)
		return devdb_probe_set_id_label(pr, name, a, 128);
	return 0;
}

/* UUID from a date "YYYYMMDDhhmmsscc"; 0 if the date is all zeros. */
static int iso_set_uuid(struct devdb_probe *pr, const uint8_t *d, uint8_t tz, int *r)
{
	unsigned zeros = 0;

	for (int i = 0; i < 16; i++)
		zeros += d[i] == '0';
	if (zeros == 16 && tz == 0)
		return 0;
	if (devdb_is_zero(d, 16))
		return 1;
	*r |= devdb_probe_set(pr, "UUID", "%.4s-%.2s-%.2s-%.2s-%.2s-%.2s-%.2s", d, d + 4, d + 6,
			      d + 8, d + 10, d + 12, d + 14);
	return 1;
}

static bool iso_root_ok(struct devdb_probe *pr, const uint8_t *rdr, uint16_t bs)
{
	uint32_t lba = util_get_le32(rdr + 2), len = util_get_le32(rdr + 10);
	const uint8_t *d;

	if (len < 34)
		return false;
	d = devdb_probe_get(pr, (uint64_t)lba * bs, len < 2048 ? len : 2048);
	return d && d[0] >= 34 && d[32] == 1 && d[33] == 0 && util_get_le32(d + 2) == lba;
}

static int probe_iso9660(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *boot = NULL, *pvd = NULL, *jol = NULL;
	bool hs = !memcmp(mag->bytes, "CDROM", 5);
	const struct iso_layout *l = hs ? &hs_l : &iso_l;
	uint64_t off = pr->session_offset;
	uint16_t bs;
	int r = 0;

	if (off % ISO_SECTOR)
		return 1;
	off += ISO_SB_OFF;
	for (int i = 0; i < 16 && (!boot || !pvd || (!hs && !jol)); i++, off += ISO_SECTOR) {
		const uint8_t *d = devdb_probe_get(pr, off + (hs ? 8 : 0), VD_READ);

		if (!d || d[0] == VD_END)
			break;
		if (!boot && d[0] == VD_BOOT)
			boot = d;
		else if (!pvd && d[0] == VD_PRIMARY)
			pvd = d;
		else if (!hs && !jol && d[0] == VD_SUPPLEMENTARY &&
			 (!memcmp(d + VD_ESCAPE, "%/@", 3) || !memcmp(d + VD_ESCAPE, "%/C", 3) ||
			  !memcmp(d + VD_ESCAPE, "%/E", 3)))
			jol = d;
	}
	if (!pvd)
		return devdb_probe_nothing(pr);
	bs = util_get_le16(pvd + VD_BLOCK_SIZE);
	if (!bs || !iso_root_ok(pr, pvd + l->root, bs))
		return devdb_probe_nothing(pr);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", bs);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", bs);
	r |= devdb_probe_set_u64(pr, "FSSIZE", (uint64_t)util_get_le32(pvd + VD_SPACE_SIZE) * bs);
	r |= iso_set_name(pr, "SYSTEM_ID", jol ? jol + VD_SYSTEM_ID : NULL, pvd + VD_SYSTEM_ID, 32, false);
	r |= iso_set_name(pr, "VOLUME_SET_ID", jol ? jol + iso_l.volume_set : NULL,
			  pvd + l->volume_set, 128, false);
	r |= iso_set_id(pr, "PUBLISHER_ID", pvd, jol, l->publisher, hs);
	r |= iso_set_id(pr, "DATA_PREPARER_ID", pvd, jol, l->preparer, hs);
	r |= iso_set_id(pr, "APPLICATION_ID", pvd, jol, l->application, hs);
	if (!iso_set_uuid(pr, pvd + l->modified, l->has_tz ? pvd[l->modified + 16] : 0, &r))
		iso_set_uuid(pr, pvd + l->created, l->has_tz ? pvd[l->created + 16] : 0, &r);
	if (boot)
		r |= devdb_probe_set_id_label(pr, "BOOT_SYSTEM_ID", boot + BOOT_SYSTEM_ID, 32);
	if (jol)
		r |= devdb_probe_set(pr, "VERSION", "Joliet Extension");
	else if (hs)
		r |= devdb_probe_set(pr, "VERSION", "High Sierra");
	r |= iso_set_name(pr, "LABEL", jol ? jol + VD_VOLUME_ID : NULL, pvd + VD_VOLUME_ID, 32, true);
	return r ? -1 : 0;
}

const struct devdb_prober devdb_iso9660_prober = {
	.name = "iso9660",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.flags = DEVDB_PROBER_TOLERANT,
	.probe = probe_iso9660,
	.magics = {
		{ .bytes = "CD001", .len = 5, .kboff = 32, .sboff = 1, .session = true },
		{ .bytes = "CDROM", .len = 5, .kboff = 32, .sboff = 9, .session = true },
	},
};
