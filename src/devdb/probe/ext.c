/*
 * ext.c - ext2, ext3, ext4, ext4dev and the external journal (jbd). All share
 * one superblock at 1 KiB; the feature bits decide which name libblkid gives,
 * so the five probers differ only in their feature test. A metadata_csum
 * superblock must pass its CRC32C, or a stale copy would be taken for real.
 */
#include <string.h>

#include "../probe.h"

#define EXT_SB_OFF 1024
#define EXT_SB_SIZE 1024

/* superblock offsets (ext4.h) */
#define S_BLOCKS_COUNT 0x04
#define S_LOG_BLOCK_SIZE 0x18
#define S_MINOR_REV 0x3e
#define S_REV_LEVEL 0x4c
#define S_FEATURE_COMPAT 0x5c
#define S_FEATURE_INCOMPAT 0x60
#define S_FEATURE_RO_COMPAT 0x64
#define S_UUID 0x68
#define S_VOLUME_NAME 0x78
#define S_JOURNAL_UUID 0xd0
#define S_BLOCKS_COUNT_HI 0x150
#define S_FLAGS 0x160
#define S_CHECKSUM 0x3fc

#define COMPAT_HAS_JOURNAL 0x0004
#define RO_COMPAT_METADATA_CSUM 0x0400
#define INCOMPAT_JOURNAL_DEV 0x0008
#define INCOMPAT_64BIT 0x0080
#define FLAGS_TEST_FILESYS 0x0004

/* What ext2 and ext3 understand; anything else makes it ext4. */
#define EXT2_RO_COMPAT_SUPP 0x0007
#define EXT2_INCOMPAT_SUPP 0x0012
#define EXT3_RO_COMPAT_SUPP 0x0007
#define EXT3_INCOMPAT_SUPP 0x0016

struct ext_features {
	uint32_t compat, incompat, ro_compat;
};

static const uint8_t *ext_get_super(struct devdb_probe *pr, struct ext_features *f)
{
	const uint8_t *es = devdb_probe_get(pr, EXT_SB_OFF, EXT_SB_SIZE);

	if (!es)
		return NULL;
	f->compat = util_get_le32(es + S_FEATURE_COMPAT);
	f->incompat = util_get_le32(es + S_FEATURE_INCOMPAT);
	f->ro_compat = util_get_le32(es + S_FEATURE_RO_COMPAT);
	if (f->ro_compat & RO_COMPAT_METADATA_CSUM) {
		uint32_t csum = util_crc32c(0, es, S_CHECKSUM);

		/* ext4 stores the raw register: crc32c(~0) without the final inversion */
		if (~csum != util_get_le32(es + S_CHECKSUM))
			return NULL;
	} else if (util_get_le32(es + S_LOG_BLOCK_SIZE) >= 256) {
		return NULL;
	}
	return es;
}

static int ext_set_info(struct devdb_probe *pr, const uint8_t *es, int ver,
			const struct ext_features *f)
{
	uint32_t log = util_get_le32(es + S_LOG_BLOCK_SIZE);
	uint64_t last = util_get_le32(es + S_BLOCKS_COUNT);
	uint32_t bs = 0;
	int r = 0;

	if (es[S_VOLUME_NAME])
		r |= devdb_probe_set_label(pr, "LABEL", es + S_VOLUME_NAME, 16);
	r |= devdb_probe_set_uuid(pr, "UUID", es + S_UUID);
	if (f->compat & COMPAT_HAS_JOURNAL)
		r |= devdb_probe_set_uuid(pr, "EXT_JOURNAL", es + S_JOURNAL_UUID);
	if (ver != 2 && !(f->incompat & ~(uint32_t)EXT2_INCOMPAT_SUPP))
		r |= devdb_probe_set(pr, "SEC_TYPE", "ext2");
	r |= devdb_probe_set(pr, "VERSION", "%u.%u", util_get_le32(es + S_REV_LEVEL),
			     util_get_le16(es + S_MINOR_REV));
	if (log < 32) {
		bs = 1024u << log;
		r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", bs);
		r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", bs);
	}
	if (f->incompat & INCOMPAT_64BIT)
		last |= (uint64_t)util_get_le32(es + S_BLOCKS_COUNT_HI) << 32;
	r |= devdb_probe_set_u64(pr, "FSLASTBLOCK", last);
	/* libblkid multiplies the low 32 bits only; match it */
	r |= devdb_probe_set_u64(pr, "FSSIZE", (uint64_t)bs * util_get_le32(es + S_BLOCKS_COUNT));
	return r ? -1 : 0;
}

static int probe_jbd(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	struct ext_features f;
	const uint8_t *es = ext_get_super(pr, &f);

	if (!es || !(f.incompat & INCOMPAT_JOURNAL_DEV))
		return devdb_probe_nothing(pr);
	if (ext_set_info(pr, es, 2, &f) < 0 || devdb_probe_set_uuid(pr, "LOGUUID", es + S_UUID) < 0)
		return -1;
	return 0;
}

static int probe_ext2(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	struct ext_features f;
	const uint8_t *es = ext_get_super(pr, &f);

	if (!es || (f.compat & COMPAT_HAS_JOURNAL) ||
	    (f.ro_compat & ~(uint32_t)EXT2_RO_COMPAT_SUPP) || (f.incompat & ~(uint32_t)EXT2_INCOMPAT_SUPP))
		return devdb_probe_nothing(pr);
	return ext_set_info(pr, es, 2, &f);
}

static int probe_ext3(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	struct ext_features f;
	const uint8_t *es = ext_get_super(pr, &f);

	if (!es || !(f.compat & COMPAT_HAS_JOURNAL) ||
	    (f.ro_compat & ~(uint32_t)EXT3_RO_COMPAT_SUPP) || (f.incompat & ~(uint32_t)EXT3_INCOMPAT_SUPP))
		return devdb_probe_nothing(pr);
	return ext_set_info(pr, es, 3, &f);
}

static int probe_ext4dev(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	struct ext_features f;
	const uint8_t *es = ext_get_super(pr, &f);

	if (!es || (f.incompat & INCOMPAT_JOURNAL_DEV) ||
	    !(util_get_le32(es + S_FLAGS) & FLAGS_TEST_FILESYS))
		return devdb_probe_nothing(pr);
	return ext_set_info(pr, es, 4, &f);
}

static int probe_ext4(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	struct ext_features f;
	const uint8_t *es = ext_get_super(pr, &f);

	if (!es || (f.incompat & INCOMPAT_JOURNAL_DEV))
		return devdb_probe_nothing(pr);
	/* ext4 has at least one feature ext3 lacks */
	if (!(f.ro_compat & ~(uint32_t)EXT3_RO_COMPAT_SUPP) && !(f.incompat & ~(uint32_t)EXT3_INCOMPAT_SUPP))
		return 1;
	if (util_get_le32(es + S_FLAGS) & FLAGS_TEST_FILESYS)
		return 1;
	return ext_set_info(pr, es, 4, &f);
}

#define EXT_MAGICS { { .bytes = "\123\357", .len = 2, .kboff = 1, .sboff = 0x38 } }

const struct devdb_prober devdb_jbd_prober = {
	.name = "jbd", .usage = DEVDB_USAGE_OTHER, .probe = probe_jbd, .magics = EXT_MAGICS,
};
const struct devdb_prober devdb_ext2_prober = {
	.name = "ext2", .usage = DEVDB_USAGE_FILESYSTEM, .probe = probe_ext2, .magics = EXT_MAGICS,
};
const struct devdb_prober devdb_ext3_prober = {
	.name = "ext3", .usage = DEVDB_USAGE_FILESYSTEM, .probe = probe_ext3, .magics = EXT_MAGICS,
};
const struct devdb_prober devdb_ext4_prober = {
	.name = "ext4", .usage = DEVDB_USAGE_FILESYSTEM, .probe = probe_ext4, .magics = EXT_MAGICS,
};
const struct devdb_prober devdb_ext4dev_prober = {
	.name = "ext4dev", .usage = DEVDB_USAGE_FILESYSTEM, .probe = probe_ext4dev,
	.magics = EXT_MAGICS,
};
