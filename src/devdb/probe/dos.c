/*
 * dos.c - DOS/MBR partition tables with extended (logical) partitions. A
 * 55AA sector is also a FAT, exFAT or NTFS boot sector, a GPT's protective
 * MBR or an LVM PV's empty MBR; those are refused first, as libblkid does.
 * Logical partitions are numbered from 5; each partition's PARTUUID is the
 * disk id and its number ("8f8378c0-01").
 */
#include <string.h>

#include "../probe.h"

#define SECTOR 512
#define MBR_ID 440
#define MBR_PT 446
#define P_BOOT 0
#define P_SYS 4
#define P_START 8
#define P_SIZE 12

static const uint8_t *mbr_part(const uint8_t *mbr, int i)
{
	return mbr + MBR_PT + 16 * i;
}

static bool is_extended(const uint8_t *p)
{
	return p[P_SYS] == 0x05 || p[P_SYS] == 0x0f || p[P_SYS] == 0x85;
}

static bool has_start(const struct devdb_pt *pt, uint64_t start)
{
	for (size_t i = 0; i < pt->n; i++)
		if (pt->e[i].start == start)
			return true;
	return false;
}

static int dos_add(struct devdb_pt *pt, unsigned number, uint64_t start, uint64_t size,
		   const uint8_t *p, uint32_t id)
{
	struct devdb_pt_entry e = { .number = number, .start = start, .size = size,
				    .flags = p[P_BOOT] };

	snprintf(e.type, sizeof(e.type), "0x%x", p[P_SYS]);
	if (id)
		snprintf(e.uuid, sizeof(e.uuid), "%08x-%02x", id, number);
	return devdb_pt_add(pt, &e);
}

/* Walks the chain of extended boot records; returns <0 only on ENOMEM. */
static int dos_extended(struct devdb_probe *pr, struct devdb_pt *pt, uint32_t ex_start,
			uint32_t ex_size, unsigned *partno, uint32_t id)
{
	uint64_t ex_end = (uint64_t)ex_start + ex_size;
	uint32_t cur = ex_start, cur_size = ex_size;
	int nodata = 0;

	if (!ex_start)
		return 0;
	while (++nodata <= 100) {
		const uint8_t *d = devdb_probe_get(pr, (uint64_t)cur * SECTOR, SECTOR);
		uint64_t start = 0, size = 0, next;
		int i;

		if (!d || d[510] != 0x55 || d[511] != 0xAA)
			return 0;
		for (i = 0; i < 4; i++) {
			const uint8_t *p = mbr_part(d, i);
			uint64_t abs;

			start = util_get_le32(p + P_START);
			size = util_get_le32(p + P_SIZE);
			if (!size || is_extended(p))
				continue;
			abs = (uint64_t)cur + start;
			if (abs < ex_start || abs + size > ex_end)
				continue;
			if (i >= 2 && start + size > cur_size)
				continue;
			if (has_start(pt, abs))
				continue;
			if (dos_add(pt, (*partno)++, abs, size, p, id) < 0)
				return -1;
			nodata = 0;
		}
		for (i = 0; i < 4; i++) {
			const uint8_t *p = mbr_part(d, i);

			start = util_get_le32(p + P_START);
			size = util_get_le32(p + P_SIZE);
			if (size && is_extended(p) && start)
				break;
		}
		if (i == 4)
			return 0;
		next = (uint64_t)ex_start + start;
		if (next + size > ex_end || next <= cur)
			return 0;
		cur = (uint32_t)next;
		cur_size = (uint32_t)size;
	}
	return 0;
}

static int probe_dos(struct devdb_probe *pr, struct devdb_pt *pt)
{
	const uint8_t *mbr = devdb_probe_get(pr, 0, SECTOR);
	unsigned partno = 5;
	bool empty = true;
	uint32_t id;

	if (!mbr || mbr[510] != 0x55 || mbr[511] != 0xAA)
		return devdb_probe_nothing(pr);
	for (int i = 0; i < 4; i++) {
		const uint8_t *p = mbr_part(mbr, i);

		if (p[P_BOOT] != 0 && p[P_BOOT] != 0x80)
			return 1;
		if (p[P_SYS] == 0xEE)
			return 1;       /* a GPT's protective MBR */
		if (util_get_le32(p + P_SIZE))
			empty = false;
	}
	if (devdb_probe_is_fat(pr) || devdb_probe_is_exfat(pr) || devdb_probe_is_ntfs(pr))
		return devdb_probe_nothing(pr);
	if (empty && devdb_probe_is_lvm2(pr))
		return 1;
	if (pr->io_error)
		return pr->io_error;
	id = util_get_le32(mbr + MBR_ID);
	if (id)
		snprintf(pt->id, sizeof(pt->id), "%08x", id);
	for (int i = 0; i < 4; i++) {
		const uint8_t *p = mbr_part(mbr, i);
		uint32_t size = util_get_le32(p + P_SIZE);

		if (size && dos_add(pt, (unsigned)i + 1, util_get_le32(p + P_START), size, p, id) < 0)
			return -1;
	}
	for (int i = 0; i < 4; i++) {
		const uint8_t *p = mbr_part(mbr, i);

		if (util_get_le32(p + P_SIZE) && is_extended(p) &&
		    dos_extended(pr, pt, util_get_le32(p + P_START), util_get_le32(p + P_SIZE),
				 &partno, id) < 0)
			return -1;
	}
	return 0;
}

const struct devdb_pt_prober devdb_dos_prober = {
	.name = "dos",
	.probe = probe_dos,
};
