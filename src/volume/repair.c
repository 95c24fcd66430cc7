/*
 * repair.c - a read that leaves one member out, a read of one mirror
 * member's own copy, a rebuild of one member over a small range, and the
 * repair of data that failed its checksum from them
 * (include/pony/volume_repair.h). The first and the rebuild reuse the
 * targets' own degraded-read and rebuild paths: the member is marked
 * failed for the length of the read, exactly what a degraded read sees.
 * A repair writes back only the bytes its checksum vouches for.
 */
#include <errno.h>

#include "internal.h"
#include "pony/util.h"
#include "pony/volume_repair.h"

static struct volume_seg *seg_at(const struct volume *v, uint64_t off)
{
	const struct volume_seg *s;

	for (unsigned i = 0; (s = volume_seg_get(v, i)); i++)
		if (off >= s->start && off - s->start < s->len)
			return (struct volume_seg *)s;
	return NULL;
}

unsigned volume_members_at(const struct volume *v, uint64_t off)
{
	const struct volume_seg *s = seg_at(v, off);

	return s ? s->nmembers : 0;
}

int volume_seg_at(const struct volume *v, uint64_t off)
{
	const struct volume_seg *s = seg_at(v, off);

	return s ? (int)s->index : -ENOENT;
}

static int check(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len)
{
	if (!s || len > s->len - (off - s->start) || off % VOLUME_SECTOR || len % VOLUME_SECTOR)
		return -EINVAL;
	if (!s->ops->rebuild || !s->ops->unit)
		return -EOPNOTSUPP;
	if (m >= s->nmembers || !s->m[m].dev || volume_mstate(s, m) != VOLUME_MEMBER_OK)
		return -ENODEV;
	return 0;
}

int volume_read_without(struct volume *v, unsigned m, void *buf, size_t len, uint64_t off)
{
	struct volume_seg *s = seg_at(v, off);
	int r = check(s, m, off, len);

	if (r < 0)
		return r;
	/* Not volume_mfail(): this is no failure, and its hook would start a
	 * rebuild onto an idle spare. */
	__atomic_store_n(&s->m[m].state, VOLUME_MEMBER_FAILED, __ATOMIC_RELEASE);
	r = volume_seg_io(s, false, buf, len, off - s->start);
	__atomic_store_n(&s->m[m].state, VOLUME_MEMBER_OK, __ATOMIC_RELEASE);
	return r;
}

int volume_read_member(struct volume *v, unsigned m, void *buf, size_t len, uint64_t off)
{
	struct volume_seg *s = seg_at(v, off);
	int r = check(s, m, off, len);

	if (r < 0)
		return r;
	if (s->type != VOLUME_MIRROR)
		return -EOPNOTSUPP;
	/* A mirror member holds segment byte x at its own x (mirror_copies()). */
	return volume_mread(s, m, buf, len, off - s->start);
}

int volume_rewrite_member(struct volume *v, unsigned m, uint64_t off, uint64_t len)
{
	struct volume_seg *s = seg_at(v, off);
	int r = check(s, m, off, len);
	uint64_t unit, a, e;

	if (r < 0)
		return r;
	unit = s->ops->unit(s);
	a = (off - s->start) / unit * unit;
	e = MIN(s->len, DIV_ROUND_UP(off - s->start + len, unit) * unit);
	pthread_mutex_lock(&s->lock);
	r = s->ops->rebuild(s, m, a, e - a);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/*
 * Member m's bytes of [off, off+len) made buf, the bytes that passed the
 * checksum. Only those: rebuilding m's whole unit from the others would
 * carry over whatever else is bad in the others' copies of the unit (a
 * mirror whose two copies each have a different bad block lost the one
 * it did not repair). A range m does not hold alone (parity): rebuilt.
 */
static int rewrite_range(struct volume *v, unsigned m, const void *buf, size_t len, uint64_t off)
{
	struct volume_seg *s = seg_at(v, off);
	struct volume_place pl;
	int r = -ENOENT;

	if (!s || volume_seg_place(s, off - s->start, len, &pl) < 0 || pl.len < len)
		return volume_rewrite_member(v, m, off, len);
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < pl.ncopies; i++)
		if (pl.disk[i] == m)
			r = volume_mwrite(s, m, buf, len, pl.dev_off[i]);
	pthread_mutex_unlock(&s->lock);
	return r == -ENOENT ? volume_rewrite_member(v, m, off, len) : r;
}

int volume_read_to_checksum(struct volume *v, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	unsigned n = volume_members_at(v, off);
	int r;

	for (unsigned m = 0; m < n; m++) {
		r = volume_read_without(v, m, buf, len, off);
		if (r == -EOPNOTSUPP)
			return r;
		if (r >= 0 && util_crc32c(0, buf, len) == crc)
			return (int)m;
	}
	return n ? -EBADMSG : -EOPNOTSUPP;
}

int volume_repair_to_checksum(struct volume *v, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	int m = volume_read_to_checksum(v, buf, len, off, crc);
	int r = m < 0 ? m : rewrite_range(v, (unsigned)m, buf, len, off);

	return r < 0 ? r : m;
}
