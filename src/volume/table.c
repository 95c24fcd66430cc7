/*
 * table.c - volume tables in device-mapper's table syntax, so a table that
 * works with dmsetup works with pony: "START LEN TARGET ARGS" per line, in
 * 512-byte sectors, devices by path. Targets: linear, striped, mirror,
 * raid (raid0, raid1, raid4, raid5_xx, raid6_xx, raid10 near/far/offset), zero, error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

#define TABLE_MAX_TOKENS (8 + 4 * LAYOUT_MAX_DISKS)

struct table_line {
	char *tok[TABLE_MAX_TOKENS];
	unsigned n, pos;
};

struct table_ctx {
	volume_open_fn open_dev;
	void *arg;
	struct bdev *devs[LAYOUT_MAX_DISKS];
	uint64_t offsets[LAYOUT_MAX_DISKS];
	unsigned ndevs;
};

static const char *next_tok(struct table_line *l)
{
	return l->pos < l->n ? l->tok[l->pos++] : NULL;
}

static int next_u64(struct table_line *l, uint64_t *v)
{
	const char *t = next_tok(l);
	char *end;

	if (!t || !*t || *t == '-')
		return -EINVAL;
	errno = 0;
	*v = strtoull(t, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

static int next_unsigned(struct table_line *l, unsigned max, unsigned *v)
{
	uint64_t x;
	int r = next_u64(l, &x);

	if (r < 0 || x > max)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

static int default_open(const char *path, struct bdev **ret, void *arg)
{
	return bdev_file_open(path, O_RDWR, ret);
}

/* Opens a device (path) into the next slot; "-" leaves it missing. */
static int ctx_add_dev(struct table_ctx *c, const char *path, uint64_t offset_sectors)
{
	int r = 0;

	if (!path || c->ndevs == LAYOUT_MAX_DISKS)
		return -EINVAL;
	c->devs[c->ndevs] = NULL;
	if (strcmp(path, "-"))
		r = c->open_dev(path, &c->devs[c->ndevs], c->arg);
	if (r < 0)
		return r;
	c->offsets[c->ndevs++] = offset_sectors * 512;
	return 0;
}

static void ctx_free_devs(struct table_ctx *c)
{
	for (unsigned i = 0; i < c->ndevs; i++)
		bdev_free(c->devs[i]);
	c->ndevs = 0;
}

/* "<dev> <offset>" pairs. */
static int parse_dev_pairs(struct table_line *l, struct table_ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const char *path = next_tok(l);
		uint64_t off;
		int r = next_u64(l, &off);

		if (r < 0 || (r = ctx_add_dev(c, path, off)) < 0)
			return r;
	}
	return 0;
}

static int parse_mirror(struct table_line *l, struct table_ctx *c, struct volume_target_spec *s)
{
	unsigned nlog, ndev;
	int r;

	/* <log type> <#log args> <log args...>: pony keeps no dm log. */
	if (!next_tok(l) || next_unsigned(l, 16, &nlog) < 0)
		return -EINVAL;
	for (unsigned i = 0; i < nlog; i++)
		if (!next_tok(l))
			return -EINVAL;
	if (next_unsigned(l, LAYOUT_MAX_DISKS, &ndev) < 0 || ndev < 1)
		return -EINVAL;
	r = parse_dev_pairs(l, c, ndev);
	s->type = VOLUME_MIRROR;
	l->pos = l->n;                  /* optional features: ignored */
	return r;
}

/* dm-raid's raid types -> pony target and md layout. */
static int raid_type(const char *name, struct volume_target_spec *s)
{
	if (!strcmp(name, "raid0")) {
		s->type = VOLUME_STRIPED;
		return 0;
	}
	if (!strcmp(name, "raid1")) {
		s->type = VOLUME_MIRROR;
		return 0;
	}
	if (!strcmp(name, "raid10") || !strcmp(name, "raid10_near")) {
		s->type = VOLUME_RAID10;
		s->layout = 2 | 1 << 8;
		return 0;
	}
	if (!strcmp(name, "raid4") || !strcmp(name, "raid5_0")) {
		s->type = VOLUME_RAID5;   /* dm's raid4 is raid5 with parity first */
		s->layout = MD_PARITY_0;
		return 0;
	}
	if (!strncmp(name, "raid5_", 6) || !strncmp(name, "raid6_", 6)) {
		unsigned level = name[4] - '0';

		s->type = level == 5 ? VOLUME_RAID5 : VOLUME_RAID6;
		if (layout_from_name(level, name, &s->layout) == 0)
			return 0;
		return layout_from_name(level, name + 6, &s->layout);
	}
	return -EOPNOTSUPP;
}

/*
 * dm-raid's raid10 layout word (raid10_format_to_md_layout()): near puts
 * the copies side by side; far and offset spread them in far sets of
 * copies devices (md layout bit 18, RAID10_USE_FAR_SETS).
 */
static int raid10_dm_layout(const char *fmt, unsigned copies, unsigned *ret)
{
	if (!copies)
		copies = 2;
	if (!strcmp(fmt, "near"))
		*ret = copies | 1u << 8;
	else if (!strcmp(fmt, "far"))
		*ret = 1u | copies << 8 | 1u << 18;
	else if (!strcmp(fmt, "offset"))
		*ret = 1u | copies << 8 | 1u << 16 | 1u << 18;
	else
		return -EOPNOTSUPP;
	return 0;
}

static int parse_raid(struct table_line *l, struct table_ctx *c, struct volume_target_spec *s)
{
	const char *type = next_tok(l);
	unsigned nparams, ndev, copies = 0;
	uint64_t chunk, data_offset = 0, v;
	const char *format = "near";
	int r = type ? raid_type(type, s) : -EINVAL;

	if (r < 0 || next_unsigned(l, 64, &nparams) < 0 || nparams < 1 || next_u64(l, &chunk) < 0)
		return r < 0 ? r : -EINVAL;
	for (unsigned i = 1; i < nparams; i++) {
		const char *key = next_tok(l);

		if (!key)
			return -EINVAL;
		if (!strcmp(key, "sync") || !strcmp(key, "nosync"))
			continue;
		i++;
		if (!strcmp(key, "raid10_format")) {
			format = next_tok(l);
			if (!format)
				return -EINVAL;
		} else if (next_u64(l, &v) < 0) {
			return -EINVAL;
		} else if (!strcmp(key, "raid10_copies")) {
			copies = (unsigned)v;
		} else if (!strcmp(key, "data_offset")) {
			data_offset = v;
		}
	}
	if (s->type == VOLUME_RAID10 && (r = raid10_dm_layout(format, copies, &s->layout)) < 0)
		return r;
	if (next_unsigned(l, LAYOUT_MAX_DISKS, &ndev) < 0 || ndev < 1)
		return -EINVAL;
	for (unsigned i = 0; i < ndev; i++) {
		const char *meta = next_tok(l);

		if (!meta || strcmp(meta, "-"))
			return meta ? -EOPNOTSUPP : -EINVAL;    /* dm-raid metadata devices */
		r = ctx_add_dev(c, next_tok(l), data_offset);
		if (r < 0)
			return r;
	}
	s->chunk = chunk * 512;
	return 0;
}

static int parse_target(struct table_line *l, struct table_ctx *c, struct volume_target_spec *s)
{
	const char *name = next_tok(l);
	unsigned n;
	uint64_t chunk;
	int r;

	if (!name)
		return -EINVAL;
	if (!strcmp(name, "linear")) {
		s->type = VOLUME_LINEAR;
		return parse_dev_pairs(l, c, 1);
	}
	if (!strcmp(name, "striped")) {
		s->type = VOLUME_STRIPED;
		if (next_unsigned(l, LAYOUT_MAX_DISKS, &n) < 0 || n < 1 || next_u64(l, &chunk) < 0)
			return -EINVAL;
		s->chunk = chunk * 512;
		return parse_dev_pairs(l, c, n);
	}
	if (!strcmp(name, "mirror"))
		return parse_mirror(l, c, s);
	if (!strcmp(name, "raid"))
		return parse_raid(l, c, s);
	if (!strcmp(name, "zero") || !strcmp(name, "error")) {
		r = volume_target_from_name(name, &s->type);
		return r;
	}
	return -EOPNOTSUPP;
}

static int table_split(char *line, struct table_line *l)
{
	char *save = NULL;

	memset(l, 0, sizeof(*l));
	for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (*t == '#')
			break;
		if (l->n == TABLE_MAX_TOKENS)
			return -E2BIG;
		l->tok[l->n++] = t;
	}
	return 0;
}

static int table_add_line(struct volume *v, char *line, struct table_ctx *c)
{
	struct volume_target_spec spec = { 0 };
	struct table_line l;
	uint64_t start, len;
	int r = table_split(line, &l);

	if (r < 0 || l.n == 0)
		return r;
	c->ndevs = 0;
	if (next_u64(&l, &start) < 0 || next_u64(&l, &len) < 0)
		return -EINVAL;
	r = parse_target(&l, c, &spec);
	if (r >= 0 && l.pos != l.n)
		r = -EINVAL;            /* arguments left over */
	if (r >= 0) {
		spec.ndevs = c->ndevs;
		spec.devs = c->devs;
		spec.offsets = c->offsets;
		r = volume_add_segment(v, start * 512, len * 512, &spec);
	}
	if (r < 0)
		ctx_free_devs(c);
	return r;
}

int volume_table_parse(const char *text, volume_open_fn open_dev, void *arg,
		       struct volume **ret, unsigned *ret_line)
{
	_cleanup_(freep) char *copy = strdup(text);
	_cleanup_(volume_freep) struct volume *v = NULL;
	struct table_ctx c = { .open_dev = open_dev ? open_dev : default_open, .arg = arg };
	char *save = NULL;
	unsigned lineno = 0;
	int r;

	if (!copy)
		return -ENOMEM;
	r = volume_new(&v);
	if (r < 0)
		return r;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		r = table_add_line(v, line, &c);
		if (r < 0) {
			if (ret_line)
				*ret_line = lineno;
			return r;
		}
	}
	if (!volume_size(v))
		return -ENODATA;
	*ret = TAKE_PTR(v);
	return 0;
}

/* The part after "raid5_" / "raid6_": dm's names, md's short names where dm has none. */
static const char *dm_layout_suffix(const struct volume_seg *s)
{
	static const char *const r5[] = { "la", "ra", "ls", "rs", "0", "n" };
	static const char *const r6[] = {
		[0] = "la", [1] = "ra", [2] = "ls", [3] = "rs", [5] = "n_6", [8] = "zr", [9] = "nr",
		[10] = "nc", [16] = "la_6", [17] = "ra_6", [18] = "ls_6", [19] = "rs_6",
	};
	unsigned l = s->geom.layout;

	if (s->type == VOLUME_RAID5 && l < ARRAY_SIZE(r5))
		return r5[l];
	if (s->type == VOLUME_RAID6 && l < ARRAY_SIZE(r6) && r6[l])
		return r6[l];
	return layout_name(s->geom.level, l);
}

static void format_devs(FILE *f, const struct volume_seg *s, bool pairs)
{
	for (unsigned i = 0; i < s->nmembers; i++) {
		const char *name = s->m[i].dev ? s->m[i].dev->name : "-";

		if (pairs)
			fprintf(f, " %s %llu", name, (unsigned long long)(s->m[i].offset / 512));
		else
			fprintf(f, " - %s", name);
	}
}

/* "[data_offset N] <#devs> - dev ...": dm-raid takes one data offset for all. */
static void format_raid_tail(FILE *f, const struct volume_seg *s, uint64_t off)
{
	if (off)
		fprintf(f, " data_offset %llu", (unsigned long long)off);
	fprintf(f, " %u", s->nmembers);
	format_devs(f, s, false);
}

char *volume_table_format(const struct volume *v)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (unsigned i = 0; i < volume_segment_count(v); i++) {
		const struct volume_seg *s = volume_seg_get(v, i);
		unsigned long long chunk = s->geom.chunk / 512;
		uint64_t off = s->nmembers ? s->m[0].offset / 512 : 0;

		fprintf(f, "%llu %llu ", (unsigned long long)(s->start / 512),
			(unsigned long long)(s->len / 512));
		switch (s->type) {
		case VOLUME_LINEAR:
			fputs("linear", f);
			format_devs(f, s, true);
			break;
		case VOLUME_STRIPED:
			fprintf(f, "striped %u %llu", s->nmembers, chunk);
			format_devs(f, s, true);
			break;
		case VOLUME_MIRROR:
			fprintf(f, "mirror core 1 1024 %u", s->nmembers);
			format_devs(f, s, true);
			break;
		case VOLUME_RAID10:
			/* Far and offset copies: exact for dm-raid's far sets; md's
			 * whole-array rotation (mdadm f2/o2) has no dm spelling. */
			if (layout_raid10_far(s->geom.layout) > 1)
				fprintf(f, "raid raid10 %u %llu raid10_copies %u raid10_format %s",
					off ? 7 : 5, chunk, layout_raid10_far(s->geom.layout),
					layout_raid10_offset(s->geom.layout) ? "offset" : "far");
			else
				fprintf(f, "raid raid10 %u %llu raid10_copies %u", off ? 5 : 3, chunk,
					layout_raid10_near(s->geom.layout));
			format_raid_tail(f, s, off);
			break;
		case VOLUME_RAID4:
		case VOLUME_RAID5:
		case VOLUME_RAID6:
			fprintf(f, "raid %s%s %u %llu", s->type == VOLUME_RAID6 ? "raid6_" : "raid5_",
				s->type == VOLUME_RAID4 ? "n" : dm_layout_suffix(s), off ? 3 : 1, chunk);
			format_raid_tail(f, s, off);
			break;
		default:
			fputs(volume_target_name(s->type), f);
		}
		fputc('\n', f);
	}
	fclose(f);
	return out;
}
