/*
 * xfs.c - XFS. The superblock is big-endian at offset 0; its geometry is
 * checked as libblkid does (the magic alone matches stale copies), and a v5
 * superblock must pass its CRC32C over the whole sector.
 */
#include <string.h>

#include "../probe.h"

/* xfs_sb offsets (xfs_format.h) */
#define SB_BLOCKSIZE 4
#define SB_DBLOCKS 8
#define SB_UUID 32
#define SB_LOGSTART 48
#define SB_REXTSIZE 80
#define SB_AGBLOCKS 84
#define SB_AGCOUNT 88
#define SB_LOGBLOCKS 96
#define SB_VERSIONNUM 100
#define SB_SECTSIZE 102
#define SB_INODESIZE 104
#define SB_FNAME 108
#define SB_BLOCKLOG 120
#define SB_SECTLOG 121
#define SB_INODELOG 122
#define SB_INOPBLOG 123
#define SB_IMAX_PCT 127
#define SB_FEATURES2 200
#define SB_CRC 224
#define SB_SIZE 264

static bool xfs_sb_valid(struct devdb_probe *pr, const uint8_t *sb)
{
	uint32_t blocksize = util_get_be32(sb + SB_BLOCKSIZE);
	uint64_t dblocks = util_get_be64(sb + SB_DBLOCKS);
	uint32_t agcount = util_get_be32(sb + SB_AGCOUNT);
	uint32_t agblocks = util_get_be32(sb + SB_AGBLOCKS);
	uint32_t rextsize = util_get_be32(sb + SB_REXTSIZE);
	uint16_t sectsize = util_get_be16(sb + SB_SECTSIZE);
	uint16_t inodesize = util_get_be16(sb + SB_INODESIZE);
	uint16_t version = util_get_be16(sb + SB_VERSIONNUM);
	uint8_t blocklog = sb[SB_BLOCKLOG], sectlog = sb[SB_SECTLOG];
	uint8_t inodelog = sb[SB_INODELOG], inopblog = sb[SB_INOPBLOG];
	uint64_t rtext = (uint64_t)rextsize * blocksize;

	if (agcount == 0 || sectsize < 512 || sectsize > 32768 || sectlog < 9 || sectlog > 15 ||
	    sectsize != 1u << sectlog || blocksize < 512 || blocksize > 65536 || blocklog < 9 ||
	    blocklog > 16 || blocksize != 1u << blocklog || inodesize < 256 || inodesize > 2048 ||
	    inodelog < 8 || inodelog > 11 || inodesize != 1u << inodelog ||
	    blocklog - inodelog != inopblog || rtext > (1u << 30) || rtext < 4096 ||
	    sb[SB_IMAX_PCT] > 100 || dblocks == 0 || dblocks > (uint64_t)agcount * agblocks ||
	    dblocks < (uint64_t)(agcount - 1) * agblocks + 64)
		return false;
	if ((version & 0x0f) == 5) {
		const uint8_t *sect;

		if (!(version & 0x8000) || !(util_get_be32(sb + SB_FEATURES2) & 0x100))
			return false;
		sect = devdb_probe_get(pr, 0, sectsize);
		if (!sect)
			return false;
		if (~devdb_crc32c_skip(~0u, sect, sectsize, SB_CRC, 4) != util_get_le32(sect + SB_CRC))
			return false;
	}
	return true;
}

static int probe_xfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *sb = devdb_probe_get(pr, 0, SB_SIZE);
	uint64_t dblocks, logblocks;
	uint32_t bs;
	int r = 0;

	if (!sb || !xfs_sb_valid(pr, sb))
		return devdb_probe_nothing(pr);
	sb = devdb_probe_get(pr, 0, SB_SIZE);   /* the sector read may have replaced it */
	if (!sb)
		return devdb_probe_nothing(pr);
	dblocks = util_get_be64(sb + SB_DBLOCKS);
	bs = util_get_be32(sb + SB_BLOCKSIZE);
	logblocks = util_get_be64(sb + SB_LOGSTART) ? util_get_be32(sb + SB_LOGBLOCKS) : 0;
	if (sb[SB_FNAME])
		r |= devdb_probe_set_label(pr, "LABEL", sb + SB_FNAME, 12);
	r |= devdb_probe_set_uuid(pr, "UUID", sb + SB_UUID);
	r |= devdb_probe_set_u64(pr, "FSSIZE", (dblocks - logblocks) * bs);
	r |= devdb_probe_set_u64(pr, "FSLASTBLOCK", dblocks);
	r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", bs);
	r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", util_get_be16(sb + SB_SECTSIZE));
	return r ? -1 : 0;
}

const struct devdb_prober devdb_xfs_prober = {
	.name = "xfs",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.probe = probe_xfs,
	.magics = { { .bytes = "XFSB", .len = 4 } },
};
