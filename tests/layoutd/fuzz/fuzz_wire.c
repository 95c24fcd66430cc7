/*
 * fuzz_wire.c - libFuzzer target for the layout control socket's decoder
 * (scripts/fuzz.sh): any bytes given to layoutd_layout_decode() either
 * decode into a page whose every index stays inside its arrays, checked
 * here by following them, and which encodes back to the same bytes, or
 * are refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pony/layoutd.h"

static struct vfs_layout_extent ext[LAYOUTD_MAX_EXTENTS];
static uint32_t csums[LAYOUTD_MAX_CSUMS];
static struct vfs_layout_piece pieces[LAYOUTD_MAX_PIECES];
static uint8_t again[LAYOUTD_MAX_PAYLOAD];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfs_layout l = { .extents = ext, .max_extents = LAYOUTD_MAX_EXTENTS,
				.csums = csums, .max_csums = LAYOUTD_MAX_CSUMS,
				.pieces = pieces, .max_pieces = LAYOUTD_MAX_PIECES };
	volatile uint64_t sink = 0;

	if (size > LAYOUTD_MAX_PAYLOAD || layoutd_layout_decode(data, size, &l) < 0)
		return 0;
	for (uint32_t i = 0; i < l.nextents; i++) {
		for (uint32_t k = 0; k < ext[i].npieces; k++)
			sink += pieces[ext[i].first_piece + k].member_offset;
		if (ext[i].state == VFS_LAYOUT_DATA && l.block_size)
			for (uint64_t b = 0; b < ext[i].length / l.block_size; b++)
				sink += csums[ext[i].first_csum + b];
	}
	if (layoutd_layout_encode(&l, again) != size || memcmp(again, data, size))
		abort();
	(void)sink;
	return 0;
}
