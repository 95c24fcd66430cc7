/*
 * layout.c - md's data and parity placement. The raid4/5/6 switch follows
 * raid5_compute_sector() case by case; Q's block order follows md's syndrome
 * slots (raid6_idx_to_slot: disk order from the disk after Q, or disk index
 * for DDF layouts). raid10 follows raid10_find_phys() and calc_sectors().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layout.h"

static bool layout_is_ddf(unsigned layout)
{
	return layout >= MD_ROTATING_ZERO_RESTART && layout <= MD_ROTATING_N_CONTINUE;
}

static bool layout_raid5_known(unsigned a)
{
	return a <= MD_PARITY_N;
}

static bool layout_raid6_known(unsigned a)
{
	return a <= MD_PARITY_N || layout_is_ddf(a) ||
	       (a >= MD_LEFT_ASYMMETRIC_6 && a <= MD_PARITY_0_6);
}

/*
 * setup_geo()'s far_set_size: the devices a chunk's far copies rotate in.
 * Layout bits 17-18: 0 the whole array (mdadm's f2/o2), 1 the old "far sets"
 * (disks / far copies), 2 far sets of near * far devices (dm-raid's
 * raid10_format far/offset).
 */
static unsigned raid10_far_set_size(const struct layout_geom *g)
{
	unsigned nc = layout_raid10_near(g->layout), fc = layout_raid10_far(g->layout);

	switch (g->layout >> 17) {
	case 1: return fc ? g->ndisks / fc : 0;
	case 2: return fc * nc;
	default: return g->ndisks;
	}
}

int layout_geom_check(const struct layout_geom *g)
{
	unsigned nc, fc;

	if (g->ndisks == 0 || g->ndisks > LAYOUT_MAX_DISKS)
		return -EINVAL;
	if (g->level != 1 && (g->chunk < 512 || g->chunk % 512 || g->dev_size % g->chunk))
		return -EINVAL;
	switch (g->level) {
	case 0:
	case 1:
		return 0;
	case 4:
		return g->ndisks >= 2 && g->ndisks - 1 <= PARITY_MAX_DATA ? 0 : -EINVAL;
	case 5:
		return g->ndisks >= 2 && layout_raid5_known(g->layout) ? 0 : -EINVAL;
	case 6:
		return g->ndisks >= 4 && layout_raid6_known(g->layout) ? 0 : -EINVAL;
	case 10:
		nc = layout_raid10_near(g->layout);
		fc = layout_raid10_far(g->layout);
		if (g->layout >> 17 > 2)
			return -EINVAL;         /* setup_geo() knows sets 0, 1, 2 only */
		if (nc < 1 || fc < 1 || nc * fc < 2 || nc * fc > g->ndisks || nc > g->ndisks)
			return -EINVAL;
		return raid10_far_set_size(g) >= 1 ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

unsigned layout_ndata(const struct layout_geom *g)
{
	switch (g->level) {
	case 4:
	case 5:
		return g->ndisks - 1;
	case 6:
		return g->ndisks - 2;
	case 1:
		return 1;
	default:
		return g->ndisks;
	}
}

unsigned layout_redundancy(const struct layout_geom *g)
{
	switch (g->level) {
	case 1:
		return g->ndisks - 1;
	case 4:
	case 5:
		return 1;
	case 6:
		return 2;
	case 10:
		return layout_raid10_near(g->layout) * layout_raid10_far(g->layout) - 1;
	default:
		return 0;
	}
}

/* raid10's calc_sectors(): chunks used per device and the far stride, in chunks. */
static void raid10_sizes(const struct layout_geom *g, uint64_t *ret_array_chunks,
			 uint64_t *ret_stride)
{
	unsigned nc = layout_raid10_near(g->layout), fc = layout_raid10_far(g->layout);
	uint64_t size = g->dev_size / g->chunk;

	size /= fc;
	size *= g->ndisks;
	size /= nc;
	*ret_array_chunks = size;
	size *= (uint64_t)nc * fc;
	size = (size + g->ndisks - 1) / g->ndisks;
	*ret_stride = layout_raid10_offset(g->layout) ? 1 : size / fc;
}

uint64_t layout_array_size(const struct layout_geom *g)
{
	uint64_t chunks, stride;

	switch (g->level) {
	case 1:
		return g->dev_size;
	case 10:
		raid10_sizes(g, &chunks, &stride);
		return chunks * g->chunk;
	default:
		return g->dev_size * layout_ndata(g);
	}
}

/* raid5_compute_sector()'s switch: the disk of data block dd in stripe s. */
static unsigned raid456_place(const struct layout_geom *g, uint64_t s, unsigned dd,
			      int *pd, int *qd)
{
	unsigned n = g->ndisks, k = layout_ndata(g);

	*qd = -1;
	if (g->level == 4) {
		*pd = (int)k;
		return dd;
	}
	if (g->level == 5) {
		switch (g->layout) {
		case MD_LEFT_ASYMMETRIC:
			*pd = (int)(k - s % n);
			return dd >= (unsigned)*pd ? dd + 1 : dd;
		case MD_RIGHT_ASYMMETRIC:
			*pd = (int)(s % n);
			return dd >= (unsigned)*pd ? dd + 1 : dd;
		case MD_LEFT_SYMMETRIC:
			*pd = (int)(k - s % n);
			return (unsigned)(*pd + 1 + dd) % n;
		case MD_RIGHT_SYMMETRIC:
			*pd = (int)(s % n);
			return (unsigned)(*pd + 1 + dd) % n;
		case MD_PARITY_0:
			*pd = 0;
			return dd + 1;
		default:        /* MD_PARITY_N */
			*pd = (int)k;
			return dd;
		}
	}
	switch (g->layout) {
	case MD_LEFT_ASYMMETRIC:
	case MD_RIGHT_ASYMMETRIC:
	case MD_ROTATING_ZERO_RESTART:
	case MD_ROTATING_N_RESTART:
		if (g->layout == MD_LEFT_ASYMMETRIC)
			*pd = (int)(n - 1 - s % n);
		else if (g->layout == MD_ROTATING_N_RESTART)
			*pd = (int)(n - 1 - (s + 1) % n);
		else
			*pd = (int)(s % n);
		if ((unsigned)*pd == n - 1) {
			*qd = 0;
			return dd + 1;
		}
		*qd = *pd + 1;
		return dd >= (unsigned)*pd ? dd + 2 : dd;
	case MD_LEFT_SYMMETRIC:
	case MD_RIGHT_SYMMETRIC:
		*pd = (int)(g->layout == MD_LEFT_SYMMETRIC ? n - 1 - s % n : s % n);
		*qd = (int)((unsigned)(*pd + 1) % n);
		return (unsigned)(*pd + 2 + dd) % n;
	case MD_PARITY_0:
		*pd = 0;
		*qd = 1;
		return dd + 2;
	case MD_PARITY_N:
		*pd = (int)k;
		*qd = (int)k + 1;
		return dd;
	case MD_ROTATING_N_CONTINUE:
		*pd = (int)(n - 1 - s % n);
		*qd = (int)((unsigned)(*pd + n - 1) % n);
		return (unsigned)(*pd + 1 + dd) % n;
	case MD_LEFT_ASYMMETRIC_6:
	case MD_RIGHT_ASYMMETRIC_6:
		*pd = (int)(g->layout == MD_LEFT_ASYMMETRIC_6 ? k - s % (n - 1) : s % (n - 1));
		*qd = (int)n - 1;
		return dd >= (unsigned)*pd ? dd + 1 : dd;
	case MD_LEFT_SYMMETRIC_6:
	case MD_RIGHT_SYMMETRIC_6:
		*pd = (int)(g->layout == MD_LEFT_SYMMETRIC_6 ? k - s % (n - 1) : s % (n - 1));
		*qd = (int)n - 1;
		return (unsigned)(*pd + 1 + dd) % (n - 1);
	default:        /* MD_PARITY_0_6 */
		*pd = 0;
		*qd = (int)n - 1;
		return dd + 1;
	}
}

void layout_raid456_stripe(const struct layout_geom *g, uint64_t s, struct layout_stripe *ret)
{
	int slot_of_disk[LAYOUT_MAX_DISKS];
	unsigned n = g->ndisks;

	ret->ndata = layout_ndata(g);
	for (unsigned dd = 0; dd < ret->ndata; dd++)
		ret->disk[dd] = raid456_place(g, s, dd, &ret->pd, &ret->qd);
	if (ret->qd < 0)
		return;
	/* Q's slots: DDF numbers every disk; md counts data disks from after Q. */
	if (layout_is_ddf(g->layout)) {
		for (unsigned i = 0; i < n; i++)
			slot_of_disk[i] = (int)i;
	} else {
		int slot = 0;

		for (unsigned j = 0, d = (unsigned)(ret->qd + 1) % n; j < n; j++, d = (d + 1) % n)
			slot_of_disk[d] = (int)d == ret->pd || (int)d == ret->qd ? -1 : slot++;
	}
	for (unsigned dd = 0; dd < ret->ndata; dd++)
		ret->qexp[dd] = (uint8_t)slot_of_disk[ret->disk[dd]];
}

unsigned layout_raid10_copies(const struct layout_geom *g, uint64_t c, unsigned *disk,
			      uint64_t *dev_off)
{
	unsigned nc = layout_raid10_near(g->layout), fc = layout_raid10_far(g->layout);
	unsigned set_size = raid10_far_set_size(g);
	/* The last set takes the devices left over: it is larger. */
	unsigned last_start = (g->ndisks / set_size - 1) * set_size;
	unsigned last_size = set_size + g->ndisks % set_size;
	uint64_t chunks, stride, stripe, sector;
	unsigned dev, slot = 0;

	raid10_sizes(g, &chunks, &stride);
	c *= nc;
	stripe = c / g->ndisks;
	dev = (unsigned)(c % g->ndisks);
	if (layout_raid10_offset(g->layout))
		stripe *= fc;
	sector = stripe;                /* in chunks */
	for (unsigned i = 0; i < nc; i++) {
		unsigned d = dev;
		uint64_t s = sector;

		disk[slot] = d;
		dev_off[slot++] = s * g->chunk;
		for (unsigned f = 1; f < fc; f++) {
			unsigned set = d / set_size;

			d += nc;
			if (g->ndisks % set_size && d > last_start)
				d = (d - last_start) % last_size + last_start;
			else
				d = d % set_size + set_size * set;
			s += stride;
			disk[slot] = d;
			dev_off[slot++] = s * g->chunk;
		}
		if (++dev >= g->ndisks) {
			dev = 0;
			sector++;
		}
	}
	return slot;
}

/*
 * Searched rather than solved: every copy of chunk c sits on its base row
 * (c * near / ndisks, times far for the offset layout), that row plus one
 * (near copies wrapping past the last disk), or those plus a multiple of
 * the far stride. So the chunks that can own row R lie in a few windows of
 * about ndisks / near chunks each, and layout_raid10_copies(), the one
 * definition of the layout, decides which one does.
 */
int layout_raid10_chunk_at(const struct layout_geom *g, unsigned disk, uint64_t dev_off,
			   uint64_t *ret_chunk, unsigned *ret_copy)
{
	unsigned nc = layout_raid10_near(g->layout), fc = layout_raid10_far(g->layout);
	uint64_t chunks, stride, row = dev_off / g->chunk;
	unsigned cdisk[LAYOUT_MAX_DISKS * 4];
	uint64_t coff[LAYOUT_MAX_DISKS * 4];

	if (!nc || !fc || (size_t)nc * fc > sizeof(cdisk) / sizeof(cdisk[0]))
		return -EINVAL;
	raid10_sizes(g, &chunks, &stride);
	for (unsigned f = 0; f < fc; f++)
		for (unsigned wrap = 0; wrap < 2; wrap++) {
			uint64_t base, lo, hi;

			if (row < (uint64_t)f * stride + wrap)
				continue;
			base = row - (uint64_t)f * stride - wrap;
			if (layout_raid10_offset(g->layout))
				base /= fc;
			lo = base * g->ndisks / nc;
			hi = ((base + 1) * g->ndisks + nc - 1) / nc;
			if (hi > chunks)
				hi = chunks;
			for (uint64_t c = lo; c < hi; c++) {
				unsigned n = layout_raid10_copies(g, c, cdisk, coff);

				for (unsigned i = 0; i < n; i++)
					if (cdisk[i] == disk && coff[i] / g->chunk == row) {
						*ret_chunk = c;
						*ret_copy = i;
						return 0;
					}
			}
		}
	return -ENOENT;
}

struct layout_name_entry {
	unsigned level;                 /* 5 also covers 4; 6 */
	unsigned layout;
	const char *names[3];
};

static const struct layout_name_entry layout_names[] = {
	{ 5, MD_LEFT_ASYMMETRIC, { "left-asymmetric", "la", "raid5_la" } },
	{ 5, MD_RIGHT_ASYMMETRIC, { "right-asymmetric", "ra", "raid5_ra" } },
	{ 5, MD_LEFT_SYMMETRIC, { "left-symmetric", "ls", "raid5_ls" } },
	{ 5, MD_RIGHT_SYMMETRIC, { "right-symmetric", "rs", "raid5_rs" } },
	{ 5, MD_PARITY_0, { "parity-first", "raid5_0", "raid4" } },
	{ 5, MD_PARITY_N, { "parity-last", "raid5_n", NULL } },
	{ 6, MD_LEFT_ASYMMETRIC, { "left-asymmetric", "la", NULL } },
	{ 6, MD_RIGHT_ASYMMETRIC, { "right-asymmetric", "ra", NULL } },
	{ 6, MD_LEFT_SYMMETRIC, { "left-symmetric", "ls", NULL } },
	{ 6, MD_RIGHT_SYMMETRIC, { "right-symmetric", "rs", NULL } },
	{ 6, MD_PARITY_0, { "parity-first", NULL, NULL } },
	{ 6, MD_PARITY_N, { "parity-last", "raid6_n_6", NULL } },
	{ 6, MD_ROTATING_ZERO_RESTART, { "ddf-zero-restart", "raid6_zr", NULL } },
	{ 6, MD_ROTATING_N_RESTART, { "ddf-N-restart", "raid6_nr", NULL } },
	{ 6, MD_ROTATING_N_CONTINUE, { "ddf-N-continue", "raid6_nc", NULL } },
	{ 6, MD_LEFT_ASYMMETRIC_6, { "left-asymmetric-6", "raid6_la_6", NULL } },
	{ 6, MD_RIGHT_ASYMMETRIC_6, { "right-asymmetric-6", "raid6_ra_6", NULL } },
	{ 6, MD_LEFT_SYMMETRIC_6, { "left-symmetric-6", "raid6_ls_6", NULL } },
	{ 6, MD_RIGHT_SYMMETRIC_6, { "right-symmetric-6", "raid6_rs_6", NULL } },
	{ 6, MD_PARITY_0_6, { "parity-first-6", NULL, NULL } },
};

static int raid10_layout_from_name(const char *name, unsigned *ret_layout)
{
	char *end;
	unsigned long copies;

	if (!strchr("nfo", name[0]) || !name[1])
		return -EINVAL;
	copies = strtoul(name + 1, &end, 10);
	if (*end || copies < 1 || copies > 255)
		return -EINVAL;
	switch (name[0]) {
	case 'n':
		*ret_layout = (unsigned)copies | 1 << 8;
		break;
	case 'f':
		*ret_layout = 1 | (unsigned)copies << 8;
		break;
	default:
		*ret_layout = 1 | (unsigned)copies << 8 | 1 << 16;
	}
	return 0;
}

int layout_from_name(unsigned level, const char *name, unsigned *ret_layout)
{
	if (level == 10)
		return raid10_layout_from_name(name, ret_layout);
	if (level == 4 && (!strcmp(name, "parity-last") || !strcmp(name, "raid4"))) {
		*ret_layout = MD_PARITY_N;
		return 0;
	}
	for (size_t i = 0; i < sizeof(layout_names) / sizeof(layout_names[0]); i++) {
		const struct layout_name_entry *e = &layout_names[i];

		if (e->level != (level == 4 ? 5 : level))
			continue;
		for (int j = 0; j < 3; j++)
			if (e->names[j] && !strcasecmp(e->names[j], name)) {
				*ret_layout = e->layout;
				return 0;
			}
	}
	return -EINVAL;
}

const char *layout_name(unsigned level, unsigned layout)
{
	static __thread char buf[16];

	if (level == 10) {
		unsigned nc = layout_raid10_near(layout), fc = layout_raid10_far(layout);
		char kind = layout_raid10_offset(layout) ? 'o' : fc > 1 ? 'f' : 'n';

		snprintf(buf, sizeof(buf), "%c%u", kind, fc > 1 ? fc : nc);
		return buf;
	}
	if (level == 4)
		return "parity-last";
	for (size_t i = 0; i < sizeof(layout_names) / sizeof(layout_names[0]); i++)
		if (layout_names[i].level == level && layout_names[i].layout == layout)
			return layout_names[i].names[0];
	return "unknown";
}
