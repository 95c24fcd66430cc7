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
		volume_mfail(s, m);
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

static int linear_read(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	return plain_read(s, 0, buf, len, off);
}

static int linear_write(struct volume_seg *s, const uint8_t *buf, size_t len, uint64_t off)
{
	return plain_write(s, 0, buf, len, off);
}

const struct volume_target_ops volume_linear_ops = {
	.name = "linear",
	.check = linear_check,
	.read = linear_read,
	.write = linear_write,
};

static int striped_check(struct volume_seg *s)
{
	int r = layout_geom_check(&s->geom);

	if (r < 0 || s->nmembers < 1)
		return r < 0 ? r : -EINVAL;
	return s->len <= s->geom.dev_size * s->nmembers ? 0 : -ENOSPC;
}

static int striped_rw(struct volume_seg *s, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	const struct layout_geom *g = &s->geom;

	while (len) {
		uint64_t c = off / g->chunk, in = off % g->chunk;
		unsigned disk = (unsigned)(c % g->ndisks);
		uint64_t doff = c / g->ndisks * g->chunk + in;
		size_t n = (size_t)MIN((uint64_t)len, g->chunk - in);
		int r = write ? plain_write(s, disk, buf, n, doff) : plain_read(s, disk, buf, n, doff);

		if (r < 0)
			return r;
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int striped_read(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	return striped_rw(s, false, buf, len, off);
}

static int striped_write(struct volume_seg *s, const uint8_t *buf, size_t len, uint64_t off)
{
	return striped_rw(s, true, (uint8_t *)buf, len, off);
}

const struct volume_target_ops volume_striped_ops = {
	.name = "striped",
	.check = striped_check,
	.read = striped_read,
	.write = striped_write,
};

static int none_check(struct volume_seg *s)
{
	return s->nmembers ? -EINVAL : 0;
}

static int zero_read(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	memset(buf, 0, len);
	return 0;
}

static int zero_write(struct volume_seg *s, const uint8_t *buf, size_t len, uint64_t off)
{
	return 0;
}

const struct volume_target_ops volume_zero_ops = {
	.name = "zero",
	.check = none_check,
	.read = zero_read,
	.write = zero_write,
};

static int error_read(struct volume_seg *s, uint8_t *buf, size_t len, uint64_t off)
{
	return -EIO;
}

static int error_write(struct volume_seg *s, const uint8_t *buf, size_t len, uint64_t off)
{
	return -EIO;
}

const struct volume_target_ops volume_error_ops = {
	.name = "error",
	.check = none_check,
	.read = error_read,
	.write = error_write,
};
