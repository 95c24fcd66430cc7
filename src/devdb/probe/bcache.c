/*
 * bcache.c - bcache backing and cache devices. The superblock at 4 KiB is
 * trusted only if its CRC64 (ECMA-182, as bcache computes it) matches and it
 * names its own sector.
 */
#include <string.h>

#include "../probe.h"

#define BCACHE_SB_OFF 4096
#define SB_CSUM 0
#define SB_OFFSET 8
#define SB_VERSION 16
#define SB_UUID 40
#define SB_LABEL 72
#define SB_BLOCK_SIZE 192
#define SB_KEYS 206
#define SB_D 208
#define SB_JOURNAL_BUCKETS 256

static uint64_t crc64_we(const uint8_t *p, size_t len)
{
	uint64_t crc = ~0ull;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint64_t)p[i] << 56;
		for (int k = 0; k < 8; k++)
			crc = (crc & (1ull << 63)) ? (crc << 1) ^ 0x42F0E1EBA9EA3693ull : crc << 1;
	}
	return ~crc;
}

static int probe_bcache(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, BCACHE_SB_OFF, SB_D);
	uint16_t keys;
	size_t len;
	int r = 0;

	if (!sb)
		return devdb_probe_nothing(pr);
	keys = util_get_le16(sb + SB_KEYS);
	if (keys > SB_JOURNAL_BUCKETS)
		return 1;
	len = SB_D + (size_t)keys * 8;
	sb = devdb_probe_get(pr, BCACHE_SB_OFF, len);
	if (!sb)
		return devdb_probe_nothing(pr);
	if (crc64_we(sb + 8, len - 8) != util_get_le64(sb + SB_CSUM))
		return 1;
	if (util_get_le64(sb + SB_OFFSET) != BCACHE_SB_OFF / 512)
		return 1;
	r |= devdb_probe_set(pr, "VERSION", "%llu", (unsigned long long)util_get_le64(sb + SB_VERSION));
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_UUID);
	r |= devdb_probe_set_label(pr, "LABEL", sb + SB_LABEL, 32);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", (uint64_t)util_get_le16(sb + SB_BLOCK_SIZE) * 512);
	return r ? -1 : 0;
}

const struct devdb_prober devdb_bcache_prober = {
	.name = "bcache",
	.usage = DEVDB_USAGE_OTHER,
	.minsz = 8192,
	.probe = probe_bcache,
	.magics = { { .bytes = "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81",
		      .len = 16, .kboff = 4, .sboff = 24 } },
};
