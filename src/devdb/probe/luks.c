/*
 * luks.c - LUKS 1 and 2 (crypto_LUKS). The primary header is at 0; LUKS2's
 * must name its own offset. As in libblkid's safe probe, the secondary
 * LUKS2 headers are not searched: a device whose start was overwritten by a
 * new filesystem is that filesystem, not an encrypted volume.
 */
#include <string.h>

#include "../probe.h"

#define HDR_SIZE 4096
#define HDR_VERSION 6
#define V1_UUID 168
#define V2_LABEL 24
#define V2_UUID 168
#define V2_SUBSYSTEM 208
#define V2_HDR_OFFSET 256
#define UUID_LEN 40
#define LABEL_LEN 48

static int probe_luks(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *h = devdb_probe_get(pr, 0, 512);
	uint16_t version;
	int r = 0;

	if (!h)
		return devdb_probe_nothing(pr);
	if (memcmp(h, "LUKS\xba\xbe", 6))
		return 1;
	version = util_get_be16(h + HDR_VERSION);
	if (version == 2 && util_get_be64(h + V2_HDR_OFFSET) != 0)
		return 1;
	r |= devdb_probe_set(pr, "VERSION", "%d", version);
	if (version == 1) {
		if (h[V1_UUID])
			r |= devdb_probe_set_label(pr, "UUID", h + V1_UUID, UUID_LEN);
	} else if (version == 2) {
		if (h[V2_UUID])
			r |= devdb_probe_set_label(pr, "UUID", h + V2_UUID, UUID_LEN);
		r |= devdb_probe_set_label(pr, "LABEL", h + V2_LABEL, LABEL_LEN);
		r |= devdb_probe_set_id_label(pr, "SUBSYSTEM", h + V2_SUBSYSTEM, LABEL_LEN);
	}
	return r ? -1 : 0;
}

const struct devdb_prober devdb_luks_prober = {
	.name = "crypto_LUKS",
	.usage = DEVDB_USAGE_CRYPTO,
	.probe = probe_luks,
};
