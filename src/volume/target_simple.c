/*
 * target_simple.c - the targets without redundancy: linear (one device
 * range), striped (md raid0 / dm striped: chunks round-robin over devices),
 * zero (reads zeros, swallows writes) and error (fails everything).
 */
#include <errno.h>
#include <string.h>

#include "pony/util.h"
#include "internal.h"

/* Without redundancy a failed member fails the I/O. */
static int plain_read(struct volume_seg *s, unsigned m, uint8_t *buf, size_t len, uint64_t off)
{
	int r = volume_mread(s, m, buf, len, off);

	if (r < 0 && r != -EINVAL)
		volume_mfail(s, m, "read", s->m[m].offset + off, r);
	return r;
}

static int plain_write(struct volume_seg *s, unsigned m, const uint8_t *buf, size_t len,
		       uint64_t off)
{
	if (volume_mstate(s, m) != VOLUME_MEMBER_OK)
		return -EIO;
	return volume_mwrite(s, m, buf, len, off);
}

static int linear_check(struct volume_seg *s)
{
	if (s->nmembers != 1)
		return -EINVAL;
	return s->len <= s->geom.dev_size ? 0 : -ENOSPC;
}

/* Member m's [off, off+len) for a target without redundancy: len or -errno. */
static ssize_t plain_io(struct volume_seg *s, unsigned m, bool write, uint8_t *buf, size_t len,
			uint64_t off)
{
	int r = write ? plain_write(s, m, buf, len, off) : plain_read(s, m, buf, len, off);

	return r < 0 ? r : (ssize_t)len;
}

/* linear and striped: the piece volume_seg_place() names (a chunk, or what is left of it). */
static ssize_t plain_target_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len,
			       uint64_t off)
{
	struct volume_place pl;

	volume_seg_place(s, off, len, &pl);
	return plain_io(s, pl.disk[0], write, buf, (size_t)pl.len, pl.dev_off[0]);
}

const struct volume_target_ops volume_linear_ops = {
	.name = "linear",
	.check = linear_check,
	.io = plain_target_io,
};

static int striped_check(struct volume_seg *s)
{
	int r = layout_geom_check(&s->geom);

	if (r < 0 || s->nmembers < 1)
		return r < 0 ? r : -EINVAL;
	return s->len <= s->geom.dev_size * s->nmembers ? 0 : -ENOSPC;
}

const struct volume_target_ops volume_striped_ops = {
	.name = "striped",
	.check = striped_check,
	.io = plain_target_io,
};

static int none_check(struct volume_seg *s)
{
	return s->nmembers ? -EINVAL : 0;
}

/* Reads zeros, swallows writes. */
static ssize_t zero_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	if (!write)
		memset(buf, 0, len);
	return (ssize_t)len;
}

const struct volume_target_ops volume_zero_ops = {
	.name = "zero",
	.check = none_check,
	.io = zero_io,
};

static ssize_t error_io(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	return -EIO;
}

const struct volume_target_ops volume_error_ops = {
	.name = "error",
	.check = none_check,
	.io = error_io,
};
