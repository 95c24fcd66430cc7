/*
 * zfs.c - ZFS pool members (zfs_member). Four vdev labels (two at the start,
 * two at the end) each hold an XDR-encoded nvlist; the first label naming a
 * live pool (guid, state, txg) gives the pool name (LABEL), pool_guid
 * (UUID), the vdev guid (UUID_SUB), ashift and the pool version.
 */
#include <string.h>

#include "../probe.h"

#define VDEV_LABEL_NVPAIR (16 * 1024)
#define VDEV_LABEL_SIZE (256 * 1024)
#define VDEV_PHYS_SIZE (112 * 1024)
#define ZFS_MINDEVSIZE (64ull << 20)
#define NVL_PAIRS 12            /* encoding, endian, reserved, version, flags */
#define NVP_HEADER 12           /* size, decoded size, name length */
#define DATA_TYPE_UNKNOWN 0
#define DATA_TYPE_UINT64 8
#define DATA_TYPE_STRING 9
#define DATA_TYPE_DIRECTORY 19
#define POOL_STATE_SPARE 3
#define POOL_STATE_L2CACHE 4
#define POOL_STATE_LAST 7

struct zfs_walk {
	bool find;              /* first pass: only check the label is live */
	uint64_t state, guid, txg;
	int found;
};

static bool name_is(const uint8_t *name, uint32_t len, const char *key)
{
	return strlen(key) == len && !memcmp(name, key, len);
}

/* One name=value; false stops the walk (malformed, or everything found). */
static bool zfs_value(struct devdb_probe *pr, struct zfs_walk *w, const uint8_t *name,
		      uint32_t namelen, const uint8_t *v, size_t vmax, unsigned level)
{
	uint32_t type = util_get_be32(v);
	bool is_u64 = type == DATA_TYPE_UINT64, has_u = is_u64 && vmax >= 16;
	uint64_t u = has_u ? util_get_be64(v + 8) : 0;
	int r = 0;

	if (w->find) {
		uint64_t *dst = NULL;

		if (level || !is_u64)
			return true;
		if (name_is(name, namelen, "guid"))
			dst = &w->guid;
		else if (name_is(name, namelen, "state"))
			dst = &w->state;
		else if (name_is(name, namelen, "txg"))
			dst = &w->txg;
		if (dst && !has_u)
			return false;
		if (dst)
			*dst = u;
		return true;
	}
	if (is_u64 && !has_u && (name_is(name, namelen, "guid") || name_is(name, namelen, "pool_guid") ||
				 name_is(name, namelen, "ashift") || name_is(name, namelen, "version")))
		return false;
	if (name_is(name, namelen, "name") && type == DATA_TYPE_STRING && !level) {
		uint32_t len;

		if (vmax < 12)
			return false;
		len = util_get_be32(v + 8);
		if ((uint64_t)len + 12 > vmax)
			return false;
		r = devdb_probe_set_label(pr, "LABEL", v + 12, len);
	} else if (name_is(name, namelen, "guid") && type == DATA_TYPE_UINT64 && !level) {
		r = devdb_probe_set(pr, "UUID_SUB", "%llu", (unsigned long long)u);
	} else if (name_is(name, namelen, "pool_guid") && type == DATA_TYPE_UINT64 && !level) {
		if (u)
			r = devdb_probe_set(pr, "UUID", "%llu", (unsigned long long)u);
	} else if (name_is(name, namelen, "ashift") && type == DATA_TYPE_UINT64) {
		if (u < 32) {
			r |= devdb_probe_set_u64(pr, "FSBLOCKSIZE", 1u << u);
			r |= devdb_probe_set_u64(pr, "BLOCK_SIZE", 1u << u);
		}
	} else if (name_is(name, namelen, "version") && type == DATA_TYPE_UINT64 && !level) {
		r = devdb_probe_set(pr, "VERSION", "%llu", (unsigned long long)u);
	} else {
		return true;
	}
	if (r)
		return false;
	return ++w->found < 5;
}

static bool zfs_walk(struct devdb_probe *pr, const uint8_t *buf, size_t size, struct zfs_walk *w)
{
	const uint8_t *p = buf + NVL_PAIRS;
	unsigned level = 0;

	size -= NVL_PAIRS;
	while (size > NVP_HEADER) {
		uint32_t nvp_size = util_get_be32(p), namelen = util_get_be32(p + 8);
		uint64_t namesize = ((uint64_t)namelen + 3) & ~3ull;

		if (!nvp_size) {
			if (!level)
				break;
			level--;
			nvp_size = 8;
		} else {
			const uint8_t *v;
			size_t vmax;
			uint32_t type;

			if (nvp_size > size || namesize + NVP_HEADER + 4 > nvp_size)
				return false;
			vmax = nvp_size - (namesize + NVP_HEADER);
			v = p + NVP_HEADER + namesize;
			type = util_get_be32(v);
			if (type == DATA_TYPE_UNKNOWN)
				return false;
			if (type == DATA_TYPE_DIRECTORY) {
				if (vmax < 16)
					return false;
				nvp_size = (uint32_t)(NVP_HEADER + namesize + 16);
				level++;
			} else if (!zfs_value(pr, w, p + NVP_HEADER, namelen, v, vmax, level)) {
				return false;
			}
		}
		if (nvp_size > size)
			return false;
		size -= nvp_size;
		p += nvp_size;
	}
	return w->find && w->guid && w->state <= POOL_STATE_LAST &&
	       (w->state == POOL_STATE_L2CACHE || w->state == POOL_STATE_SPARE || w->txg > 0);
}

static uint64_t label_offset(uint64_t size, int l)
{
	uint64_t align = size % VDEV_LABEL_SIZE;

	return (uint64_t)l * VDEV_LABEL_SIZE + (l < 2 ? 0 : size - 4 * VDEV_LABEL_SIZE - align);
}

static int probe_zfs(struct devdb_probe *pr, const struct devdb_magic *mag)
{
	const uint8_t *label = NULL;
	struct zfs_walk w = { 0 };
	bool swapped = false;

	for (int l = 0; l < 4; l++) {
		uint64_t off = label_offset(pr->size, l) + VDEV_LABEL_NVPAIR;
		/* the 16-byte header first: most devices are not ZFS, and a label is 112 KiB */
		const uint8_t *b = devdb_probe_get(pr, off, 16);

		if (!b || b[0] != 1 || !util_get_be32(b + 12) || b[1] > 1)
			continue;
		b = devdb_probe_get(pr, off, VDEV_PHYS_SIZE);
		if (!b)
			continue;
		swapped = b[1] != 1;    /* 1: little-endian host order */
		w = (struct zfs_walk){ .find = true, .state = UINT64_MAX };
		if (zfs_walk(pr, b, VDEV_PHYS_SIZE, &w)) {
			label = b;
			break;
		}
	}
	if (!label)
		return devdb_probe_nothing(pr);
	w = (struct zfs_walk){ 0 };
	zfs_walk(pr, label, VDEV_PHYS_SIZE, &w);
	return devdb_probe_set(pr, "ENDIANNESS", swapped ? "BIG" : "LITTLE") ? -1 : 0;
}

const struct devdb_prober devdb_zfs_prober = {
	.name = "zfs_member",
	.usage = DEVDB_USAGE_FILESYSTEM,
	.minsz = ZFS_MINDEVSIZE,
	.probe = probe_zfs,
};
