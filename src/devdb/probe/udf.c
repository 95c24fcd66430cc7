/*
 * udf.c - UDF (ECMA-167). Finds the volume recognition sequence ("NSR02" or
 * "NSR03") and the anchor at sector 256 (or 512, unclosed media) trying each
 * plausible block size, then reads the volume descriptor sequence for the
 * label (logical volume identifier), the volume set identifier (UUID, cut
 * to 16 hex digits as libblkid does) and the UDF revision (VERSION).
 */
#include <ctype.h>
#include <string.h>

#include "../probe.h"

#define UDF_VSD_OFFSET 0x8000
#define VD_SIZE 512
#define TAG_ID_PVD 1
#define TAG_ID_AVDP 2
#define TAG_ID_IUVD 4
#define TAG_ID_LVD 6
#define TAG_ID_TD 8
#define TAG_ID_LVID 9

/* descriptor offsets */
#define TAG_ID 0
#define TAG_LOCATION 12
#define AVDP_LENGTH 16
#define AVDP_LOCATION 20
#define PVD_IDENT 24            /* dstring32 */
#define PVD_VOLSET_ID 72        /* dstring128 */
#define PVD_DESC_CHARSET 200
#define PVD_APP_ID 345
#define PVD_IMP_ID 389
#define LVD_DESC_CHARSET 20
#define LVD_LOGVOL_ID 84        /* dstring128 */
#define LVD_DOMAIN_ID 217
#define LVD_UDF_REV 240
#define LVD_NUM_PARTITION_MAPS 268
#define LVD_LVID_LENGTH 432
#define LVD_LVID_LOCATION 436
#define LVID_NUM_PARTITIONS 72
#define LVID_IMP_USE_LENGTH 76
#define LVID_HEADER 80
#define LVIDIU_MIN_READ_REV 40
#define LVIDIU_MIN_WRITE_REV 42
#define LVIDIU_SIZE 46
#define IUVD_LVI_ID 21
#define IUVD_CHARSET 52
#define IUVD_LVINFO1 244        /* dstring36 */

static bool charset_is_udf(const uint8_t *cs)
{
	return cs[0] == 0 && !strncmp((const char *)cs + 1, "OSTA Compressed Unicode", 63);
}

static int cid_enc(uint8_t cid)
{
	return cid == 8 ? DEVDB_ENC_LATIN1 : cid == 16 ? DEVDB_ENC_UTF16BE : -1;
}

/* A dstring of size bytes (cid, chars, length byte last): its chars and length. */
static size_t dstring_len(const uint8_t *ds, size_t size)
{
	size_t clen = ds[size - 1];

	if (clen > 0)
		clen--;
	return MIN(clen, size - 2);
}

static int set_dstring(struct devdb_probe *pr, const char *name, const uint8_t *ds, size_t size,
		       bool trim_left, bool *have)
{
	int enc = cid_enc(ds[0]);
	size_t n = dstring_len(ds, size);
	int r;

	if (enc < 0)
		return 0;
	/* as libblkid, an empty (trimmed away) string still counts as found */
	r = devdb_probe_set_utf8(pr, name, ds + 1, n, (enum devdb_enc)enc, trim_left);
	*have = r == 0;
	return r;
}

static int udf_set_uuid(struct devdb_probe *pr, const uint8_t *volset, bool *have)
{
	int enc = cid_enc(volset[0]);
	char buf[17] = { 0 }, uuid[17];
	size_t len, hexlen = 16;

	if (enc < 0)
		return 0;
	len = devdb_to_utf8((enum devdb_enc)enc, buf, sizeof(buf), volset + 1, dstring_len(volset, 128));
	if (len < 8)
		return 0;
	for (size_t i = 0; i < 16; i++)
		if (!isxdigit((unsigned char)buf[i])) {
			hexlen = i;
			break;
		}
	if (hexlen < 8) {
		snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x%02x%02x%02x%02x",
			 (uint8_t)buf[0], (uint8_t)buf[1], (uint8_t)buf[2], (uint8_t)buf[3],
			 (uint8_t)buf[4], (uint8_t)buf[5], (uint8_t)buf[6], (uint8_t)buf[7]);
	} else if (hexlen < 16) {
		for (size_t i = 0; i < 8; i++)
			uuid[i] = (char)tolower((unsigned char)buf[i]);
		snprintf(uuid + 8, 9, "%02x%02x%02x%02x", (uint8_t)buf[8], (uint8_t)buf[9],
			 (uint8_t)buf[10], (uint8_t)buf[11]);
	} else {
		for (size_t i = 0; i < 16; i++)
			uuid[i] = (char)tolower((unsigned char)buf[i]);
		uuid[16] = '\0';
	}
	*have = true;
	return devdb_probe_set_label(pr, "UUID", uuid, 16);
}

/* The block size whose anchor is found; 0 if none, <0 on error. */
static int64_t udf_find_anchor(struct devdb_probe *pr, const uint8_t **ret_avdp)
{
	static const uint32_t pbs[] = { 512, 1024, 2048, 4096 };
	uint64_t s = pr->session_offset;
	int vsd_2048 = -1;

	for (size_t i = 0; i < ARRAY_SIZE(pbs); i++) {
		uint32_t vsd_len = pbs[i] > 2048 ? pbs[i] : 2048;
		bool nsr = false;

		if (s % pbs[i])
			continue;
		if (s == 0 && vsd_len == 2048 && vsd_2048 == 0)
			continue;
		if (s == 0 && vsd_len == 2048 && vsd_2048 == 1) {
			nsr = true;
		} else {
			for (uint32_t b = 0; b < 64; b++) {
				const uint8_t *v = devdb_probe_get(pr, s + UDF_VSD_OFFSET + (uint64_t)b * vsd_len, 7);

				if (!v)
					return pr->io_error;
				if (v[1] == '\0')
					break;
				if (!memcmp(v + 1, "NSR02", 5) || !memcmp(v + 1, "NSR03", 5)) {
					nsr = true;
					break;
				}
				if (memcmp(v + 1, "BEA01", 5) && memcmp(v + 1, "BOOT2", 5) &&
				    memcmp(v + 1, "CD001", 5) && memcmp(v + 1, "CDW02", 5) &&
				    memcmp(v + 1, "TEA01", 5))
					break;
			}
			if (s == 0 && vsd_len == 2048)
				vsd_2048 = nsr;
		}
		if (!nsr)
			continue;
		for (int k = 1; k <= 2; k++) {
			uint64_t sect = s / pbs[i] + 256u * (unsigned)k;
			const uint8_t *vd = devdb_probe_get(pr, sect * pbs[i] - s + s, VD_SIZE);

			if (!vd) {
				if (pr->io_error)
					return pr->io_error;
				continue;
			}
			if (util_get_le32(vd + TAG_LOCATION) == sect && util_get_le16(vd + TAG_ID) == TAG_ID_AVDP) {
				*ret_avdp = vd;
				return pbs[i];
			}
		}
	}
	return 0;
}

struct udf_state {
	bool is_udf, volid, uuid, volsetid, logvolid, label, appid, publisher;
	uint16_t udf_rev;
	uint32_t lvid_len, lvid_loc;
};

static int udf_pvd(struct devdb_probe *pr, const uint8_t *vd, struct udf_state *st)
{
	bool udfcs = charset_is_udf(vd + PVD_DESC_CHARSET);
	int r = 0;

	if (!st->volid && udfcs)
		r |= set_dstring(pr, "VOLUME_ID", vd + PVD_IDENT, 32, true, &st->volid);
	if (!st->uuid && udfcs)
		r |= udf_set_uuid(pr, vd + PVD_VOLSET_ID, &st->uuid);
	if (!st->volsetid && udfcs)
		r |= set_dstring(pr, "VOLUME_SET_ID", vd + PVD_VOLSET_ID, 128, true, &st->volsetid);
	if (!st->appid) {
		const uint8_t *id = vd + PVD_APP_ID;
		size_t n = strnlen((const char *)id, 23);

		if (n && id[0] == '*')
			id++, n--;
		if (!n) {
			id = vd + PVD_IMP_ID;
			n = strnlen((const char *)id, 23);
			if (n && id[0] == '*')
				id++, n--;
		}
		if (n) {
			r |= devdb_probe_set_id_label(pr, "APPLICATION_ID", id, n);
			st->appid = true;
		}
	}
	return r;
}

static int udf_lvd(struct devdb_probe *pr, const uint8_t *vd, struct udf_state *st)
{
	int r = 0;

	if ((!st->lvid_len || !st->lvid_loc) && util_get_le32(vd + LVD_NUM_PARTITION_MAPS)) {
		st->lvid_len = util_get_le32(vd + LVD_LVID_LENGTH);
		st->lvid_loc = util_get_le32(vd + LVD_LVID_LOCATION);
	}
	if ((!st->is_udf || !st->udf_rev) &&
	    !strncmp((const char *)vd + LVD_DOMAIN_ID, "*OSTA UDF Compliant", 23)) {
		st->is_udf = true;
		if (!st->udf_rev)
			st->udf_rev = util_get_le16(vd + LVD_UDF_REV);
	}
	if ((!st->logvolid || !st->label) && charset_is_udf(vd + LVD_DESC_CHARSET)) {
		if (!st->label)
			r |= set_dstring(pr, "LABEL", vd + LVD_LOGVOL_ID, 128, false, &st->label);
		if (!st->logvolid)
			r |= set_dstring(pr, "LOGICAL_VOLUME_ID", vd + LVD_LOGVOL_ID, 128, true, &st->logvolid);
	}
	return r;
}

/* The LVID's implementation use may raise the revision (min read/write). */
static void udf_lvid(struct devdb_probe *pr, uint32_t bs, struct udf_state *st)
{
	const uint8_t *vd, *iu;
	uint64_t off;
	uint16_t rev;

	if (!st->lvid_loc || st->lvid_len < 440)
		return;
	vd = devdb_probe_get(pr, (uint64_t)st->lvid_loc * bs, VD_SIZE);
	if (!vd || util_get_le16(vd + TAG_ID) != TAG_ID_LVID ||
	    util_get_le32(vd + TAG_LOCATION) != st->lvid_loc ||
	    util_get_le32(vd + LVID_IMP_USE_LENGTH) < LVIDIU_SIZE)
		return;
	off = (uint64_t)st->lvid_loc * bs + LVID_HEADER + 8ull * util_get_le32(vd + LVID_NUM_PARTITIONS);
	iu = devdb_probe_get(pr, off, LVIDIU_SIZE);
	if (!iu)
		return;
	rev = util_get_le16(iu + LVIDIU_MIN_READ_REV);
	if (rev && st->udf_rev < rev)
		st->udf_rev = rev;
	rev = util_get_le16(iu + LVIDIU_MIN_WRITE_REV);
	if (rev && st->udf_rev < rev)
		st->udf_rev = rev;
}

static int probe_udf(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *avdp = NULL;
	struct udf_state st = { 0 };
	int64_t bs = udf_find_anchor(pr, &avdp);
	uint32_t count, loc;
	int r = 0;

	if (bs <= 0)
		return bs < 0 ? (int)bs : 1;
	count = (uint32_t)(util_get_le32(avdp + AVDP_LENGTH) / bs);
	count = MIN(count, 64u);
	loc = util_get_le32(avdp + AVDP_LOCATION);
	for (uint32_t b = 0; b < count; b++) {
		const uint8_t *vd = devdb_probe_get(pr, ((uint64_t)loc + b) * (uint64_t)bs, VD_SIZE);
		uint16_t type;

		if (!vd)
			return devdb_probe_nothing(pr);
		type = util_get_le16(vd + TAG_ID);
		if (type == 0 || util_get_le32(vd + TAG_LOCATION) != loc + b || type == TAG_ID_TD)
			break;
		if (type == TAG_ID_PVD)
			r |= udf_pvd(pr, vd, &st);
		else if (type == TAG_ID_LVD)
			r |= udf_lvd(pr, vd, &st);
		else if (type == TAG_ID_IUVD && !st.publisher &&
			 !strncmp((const char *)vd + IUVD_LVI_ID, "*UDF LV Info", 23) &&
			 charset_is_udf(vd + IUVD_CHARSET))
			r |= set_dstring(pr, "PUBLISHER_ID", vd + IUVD_LVINFO1, 36, true, &st.publisher);
		if (st.is_udf && st.volid && st.uuid && st.volsetid && st.logvolid && st.label &&
		    st.lvid_len && st.lvid_loc && st.appid && st.publisher)
			break;
	}
	if (!st.is_udf)
		return 1;
	udf_lvid(pr, (uint32_t)bs, &st);
	if (pr->io_error)
		return pr->io_error;
	if (st.udf_rev)
		r |= devdb_probe_set(pr, "VERSION", "%x.%02x", st.udf_rev >> 8, st.udf_rev & 0xff);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", (uint64_t)bs);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", (uint64_t)bs);
	return r ? -1 : 0;
}

#define UDF_MAGIC(m) { .bytes = m, .len = 5, .kboff = 32, .sboff = 1, .session = true }

const struct devdb_prober devdb_udf_prober = {
	.name = "udf",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.flags = DEVDB_PROBER_TOLERANT,
	.probe = probe_udf,
	.magics = { UDF_MAGIC("BEA01"), UDF_MAGIC("BOOT2"), UDF_MAGIC("CD001"), UDF_MAGIC("CDW02"),
		    UDF_MAGIC("NSR02"), UDF_MAGIC("NSR03"), UDF_MAGIC("TEA01") },
};
