/*
 * swap.c - Linux swap, version 0 ("SWAP-SPACE") and 1 ("SWAPSPACE2"), for
 * every page size from 4 KiB to 64 KiB (the magic ends the first page), in
 * either byte order. TuxOnIce images reuse the magic and are refused.
 */
#include <string.h>

#include "../probe.h"

#define HDR_OFF 1024
#define HDR_VERSION 0
#define HDR_LASTPAGE 4
#define HDR_UUID 12
#define HDR_VOLUME 28
#define HDR_PADDING32 (44 + 32 * 4)
#define HDR_SIZE 512
#define TOI_MAGIC "\xed\xc3\x02\xe9\x98\x56\xe5\x0c"

static int swap_v1(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *h = devdb_probe_get(pr, HDR_OFF, HDR_SIZE);
	uint32_t pagesize = mag->sboff + mag->len, lastpage;
	bool le;
	int r = 0;

	if (!h)
		return devdb_probe_nothing(pr);
	if (util_get_le32(h + HDR_VERSION) == 1)
		le = true;
	else if (util_get_be32(h + HDR_VERSION) == 1)
		le = false;
	else
		return 1;
	lastpage = le ? util_get_le32(h + HDR_LASTPAGE) : util_get_be32(h + HDR_LASTPAGE);
	if (!lastpage)
		return 1;
	r |= devdb_probe_set(pr, "ENDIANNESS", le ? "LITTLE" : "BIG");
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", pagesize);
	r |= devdb_probe_set_u64(pr, "FSSIZE", (uint64_t)pagesize * lastpage);
	r |= devdb_probe_set_u64(pr, "FSLASTBLOCK", (uint64_t)lastpage + 1);
	/* old mkswap left garbage here; only a clean padding vouches for uuid/label */
	if (devdb_is_zero(h + HDR_PADDING32, 8)) {
		if (h[HDR_VOLUME])
			r |= devdb_probe_set_label(pr, "LABEL", h + HDR_VOLUME, 16);
		r |= devdb_probe_set_uuid(pr, "UUID", h + HDR_UUID);
	}
	r |= devdb_probe_set(pr, "VERSION", "1");
	return r ? -1 : 0;
}

static int probe_swap(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *b = devdb_probe_get(pr, 0, 8);

	if (!b)
		return devdb_probe_nothing(pr);
	if (!memcmp(b, TOI_MAGIC, 8))
		return 1;
	if (!memcmp(mag->bytes, "SWAP-SPACE", 10))
		return devdb_probe_set(pr, "VERSION", "0") ? -1 : 0;
	return swap_v1(pr, mag);
}

#define SWAP_MAGICS(off) \
	{ .bytes = "SWAP-SPACE", .len = 10, .sboff = (off) }, \
	{ .bytes = "SWAPSPACE2", .len = 10, .sboff = (off) }

const struct devdb_prober devdb_swap_prober = {
	.name = "swap",
	.usage = DEVDB_USAGE_OTHER,
	.minsz = 10 * 4096,
	.probe = probe_swap,
	.magics = { SWAP_MAGICS(0xff6), SWAP_MAGICS(0x1ff6), SWAP_MAGICS(0x3ff6),
		    SWAP_MAGICS(0x7ff6), SWAP_MAGICS(0xfff6) },
};
