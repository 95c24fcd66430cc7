/*
 * probe.h - what the probers in src/devdb/probe/ share with the probe engine
 * (probe.c): the prober tables, the bounded read call and the setters that
 * give values libblkid's exact form (trimmed labels, formatted UUIDs).
 */
#ifndef DEVDB_PROBE_H
#define DEVDB_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pony/devdb.h"
#include "pony/util.h"

enum {
	DEVDB_USAGE_FILESYSTEM = 1 << 1,
	DEVDB_USAGE_RAID = 1 << 2,
	DEVDB_USAGE_CRYPTO = 1 << 3,
	DEVDB_USAGE_OTHER = 1 << 4,
};

/* A prober whose match does not make a second match ambivalent (iso9660, udf). */
#define DEVDB_PROBER_TOLERANT (1u << 0)

/* A magic string at kboff KiB (negative: from the end) plus sboff bytes. */
struct devdb_magic {
	const char *bytes;
	unsigned len;
	int64_t kboff;
	uint32_t sboff;
	bool session;           /* add the session_offset hint */
};

struct devdb_probe;

/*
 * A superblock prober. probe() returns 0 on a match (values set), 1 for
 * "not this format", -errno on error. mag is the magic that matched, or NULL
 * for probers without magics (called on every device).
 */
struct devdb_prober {
	const char *name;       /* the TYPE libblkid prints */
	unsigned usage;
	unsigned flags;
	uint64_t minsz;
	int (*probe)(struct devdb_probe *pr, const struct devdb_magic *mag);
	struct devdb_magic magics[12];  /* ended by len 0 */
};

/* One entry a partition-table prober found; sectors of 512 bytes. */
struct devdb_pt_entry {
	unsigned number;
	uint64_t start, size;
	char type[40];          /* "0x83" or a GUID */
	char uuid[40];
	char name[256];         /* UTF-8, GPT only */
	uint64_t flags;
};

struct devdb_pt {
	char type[8];           /* "dos", "gpt" */
	char id[40];            /* PTUUID */
	size_t n, cap;
	struct devdb_pt_entry *e;
};

struct devdb_pt_prober {
	const char *name;
	int (*probe)(struct devdb_probe *pr, struct devdb_pt *pt);      /* as above */
};

/*
 * The engine's state while probing one window [base, base + size) of a
 * reader. Buffers it hands out stay valid until the current prober returns.
 */
struct devdb_probe {
	const struct devdb_reader *rd;
	uint64_t base, size;
	uint64_t session_offset;
	bool tiny;              /* <= 1.44 MB, as libblkid: no RAID, first match wins */
	int io_error;           /* -errno of the first failed read */
	struct probe_buf *bufs;
	struct devdb_tags vals;
	uint64_t bytes_read;
	unsigned reads;
};

/*
 * len bytes at off of the device, or NULL when any of it lies outside the
 * device (or past 16 MiB in one call) or the read failed (pr->io_error).
 */
const uint8_t *devdb_probe_get(struct devdb_probe *pr, uint64_t off, uint64_t len);
/* Frees every buffer devdb_probe_get() handed out. */
void devdb_probe_release(struct devdb_probe *pr);
/* 1 for "not this format", or the read error that stopped the prober. */
static inline int devdb_probe_nothing(const struct devdb_probe *pr)
{
	return pr->io_error ? pr->io_error : 1;
}
/* The device offset a magic refers to. */
uint64_t devdb_magic_offset(const struct devdb_probe *pr, const struct devdb_magic *mag);

/* Values. Each returns 0 or -ENOMEM; empty labels and all-zero UUIDs set nothing. */
int devdb_probe_set(struct devdb_probe *pr, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A label of at most len bytes, cut at NUL, trailing whitespace trimmed. */
int devdb_probe_set_label(struct devdb_probe *pr, const char *name, const void *data, size_t len);
/* The same, leading whitespace trimmed too (libblkid's set_id_label). */
int devdb_probe_set_id_label(struct devdb_probe *pr, const char *name, const void *data,
			     size_t len);
enum devdb_enc { DEVDB_ENC_UTF16LE, DEVDB_ENC_UTF16BE, DEVDB_ENC_LATIN1 };
/* A label in enc converted to UTF-8; trim_left as set_id_label. */
int devdb_probe_set_utf8(struct devdb_probe *pr, const char *name, const void *data, size_t len,
			 enum devdb_enc enc, bool trim_left);
/* A DCE UUID from 16 bytes ("UUID", "UUID_SUB", "LOGUUID", ...). */
int devdb_probe_set_uuid(struct devdb_probe *pr, const char *name, const uint8_t uuid[16]);
/* True when len bytes are all zero (libblkid then sets no UUID). */
bool devdb_is_zero(const void *data, size_t len);
/* Converts count bytes of src in enc to UTF-8 in dest (len bytes, NUL-terminated). */
size_t devdb_to_utf8(enum devdb_enc enc, char *dest, size_t len, const uint8_t *src, size_t count);
/* FSSIZE, FSLASTBLOCK, FSBLOCKSIZE, BLOCK_SIZE, in that spelling. */
int devdb_probe_set_u64(struct devdb_probe *pr, const char *name, uint64_t v);

/* CRC32 (zlib polynomial, no final inversion, as util-linux's ul_crc32). */
uint32_t devdb_crc32(uint32_t seed, const void *buf, size_t len);
/* CRC32C over buf with [skip, skip + skiplen) read as zeros; no pre/post inversion. */
uint32_t devdb_crc32c_skip(uint32_t seed, const uint8_t *buf, size_t len, size_t skip,
			   size_t skiplen);

/* Used by dos.c to refuse an MBR that is really a FAT/exFAT/NTFS boot sector. */
bool devdb_probe_is_fat(struct devdb_probe *pr);
bool devdb_probe_is_exfat(struct devdb_probe *pr);
bool devdb_probe_is_ntfs(struct devdb_probe *pr);
bool devdb_probe_is_bitlocker(struct devdb_probe *pr);
bool devdb_probe_is_lvm2(struct devdb_probe *pr);

/* Adds an entry; 0 or -ENOMEM. */
int devdb_pt_add(struct devdb_pt *pt, const struct devdb_pt_entry *e);

extern const struct devdb_prober devdb_ext2_prober, devdb_ext3_prober, devdb_ext4_prober,
	devdb_ext4dev_prober, devdb_jbd_prober, devdb_xfs_prober, devdb_btrfs_prober,
	devdb_vfat_prober, devdb_exfat_prober, devdb_ntfs_prober, devdb_swap_prober,
	devdb_luks_prober, devdb_mdraid_prober, devdb_lvm2_prober, devdb_iso9660_prober,
	devdb_udf_prober, devdb_squashfs_prober, devdb_squashfs3_prober, devdb_erofs_prober,
	devdb_f2fs_prober, devdb_bcache_prober, devdb_zfs_prober, devdb_bitlocker_prober,
	devdb_ponyvol_prober, devdb_ponyfs_prober;
extern const struct devdb_pt_prober devdb_gpt_prober, devdb_dos_prober;

#endif
