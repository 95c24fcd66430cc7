/*
 * member.c - a segment's members as its targets see them: their state
 * (failing one calls the segment's fail hook once), reads and writes under
 * the bad-block rules (a member's bad range is never read; a failed write
 * there is recorded in the bad-block log when the segment keeps one, or
 * fails the member), memory a member lends (bdev_map) for the fused RAID6
 * paths, and batches of member I/O submitted together through acall and
 * waited on once. The volume object itself is volume.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pony/util.h"
#include "internal.h"

int volume_mstate(const struct volume_seg *s, unsigned m)
{
	return __atomic_load_n(&s->m[m].state, __ATOMIC_ACQUIRE);
}

static void mfail_log(const struct volume_seg *s, unsigned m, const char *what, uint64_t off,
		      int err)
{
	const char *dev = s->m[m].dev ? s->m[m].dev->name : "missing";

	if (!err)
		util_log(LOG_ERR, "%s region %u: member %u (%s) failed: %s", s->label, s->index, m, dev,
			 what);
	else if (off == UINT64_MAX)
		util_log(LOG_ERR, "%s region %u: member %u (%s) failed: %s: %s", s->label, s->index, m,
			 dev, what, strerror(-err));
	else
		util_log(LOG_ERR, "%s region %u: member %u (%s) failed: %s at byte %llu: %s", s->label,
			 s->index, m, dev, what, (unsigned long long)off, strerror(-err));
}

void volume_mfail(struct volume_seg *s, unsigned m, const char *what, uint64_t off, int err)
{
	int was = __atomic_exchange_n(&s->m[m].state, VOLUME_MEMBER_FAILED, __ATOMIC_ACQ_REL);

	if (was == VOLUME_MEMBER_FAILED)
		return;
	if (what)
		mfail_log(s, m, what, off, err);
	if (s->fail_hook)
		s->fail_hook(s->index, m, s->fail_arg);
}

unsigned volume_seg_degraded(const struct volume_seg *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nmembers; i++)
		n += volume_mstate(s, i) != VOLUME_MEMBER_OK;
	return n;
}

uint8_t *volume_seg_scratch(struct volume_seg *s, size_t len)
{
	if (s->scratch_len < len) {
		free(s->scratch);
		s->scratch = util_aligned_alloc(len);
		s->scratch_len = s->scratch ? len : 0;
	}
	return s->scratch;
}

static bool member_bad(const struct volume_member *mb, uint64_t off, uint64_t len)
{
	for (unsigned i = 0; i < mb->nbad; i++)
		if (off < mb->bad[i].off + mb->bad[i].len && mb->bad[i].off < off + len)
			return true;
	return false;
}

int volume_mread(struct volume_seg *s, unsigned m, void *buf, size_t len, uint64_t off)
{
	struct volume_member *mb = &s->m[m];

	if (volume_mstate(s, m) != VOLUME_MEMBER_OK || member_bad(mb, off, len))
		return -EIO;
	return bdev_pread(mb->dev, buf, len, mb->offset + off);
}

bool volume_munreadable(struct volume_seg *s, unsigned m, uint64_t off, uint64_t len, void *buf,
			uint64_t *at, uint64_t *ret_end)
{
	uint64_t first = len;

	for (uint64_t pos = *at; pos < len; pos += 4096) {
		size_t n = (size_t)MIN((uint64_t)4096, len - pos);
		bool fails = !member_bad(&s->m[m], off + pos, n) &&
			     volume_mread(s, m, buf, n, off + pos) < 0;

		if (fails && first == len) {
			first = pos;
		} else if (!fails && first < len) {
			*at = first;
			*ret_end = pos;
			return true;
		}
	}
	if (first == len)
		return false;   /* none: *at and *ret_end left as they were */
	*at = first;
	*ret_end = len;
	return true;
}

int volume_mwrite(struct volume_seg *s, unsigned m, const void *buf, size_t len, uint64_t off)
{
	struct volume_member *mb = &s->m[m];
	int r;

	if (volume_mstate(s, m) == VOLUME_MEMBER_FAILED || member_bad(mb, off, len))
		return 0;
	r = bdev_pwrite(mb->dev, buf, len, mb->offset + off);
	if (r < 0 && s->bbl && r != -ENODEV && mb->nbad < VOLUME_MAX_BAD) {
		/* Remember the range as bad: it is reconstructed from now on. */
		mb->bad[mb->nbad++] = (struct volume_bad){ off, len };
		return 0;
	}
	if (r < 0)
		volume_mfail(s, m, "write", mb->offset + off, r);
	return r;
}

int volume_mmap(struct volume_seg *s, unsigned m, size_t len, uint64_t off, bool write,
		uint8_t **ret)
{
	struct volume_member *mb = &s->m[m];
	int st = volume_mstate(s, m);
	void *p;
	int r;

	if (!mb->dev || (write ? st == VOLUME_MEMBER_FAILED : st != VOLUME_MEMBER_OK) ||
	    member_bad(mb, off, len))
		return -EIO;
	r = bdev_map(mb->dev, mb->offset + off, len, &p);
	if (r >= 0)
		*ret = p;
	return r;
}

void volume_batch_init(struct volume_batch *b, struct volume_seg *s)
{
	b->s = s;
	b->n = 0;
	b->pending = 0;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
}

void volume_batch_done(struct volume_batch *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
}

unsigned volume_batch_add(struct volume_batch *b, unsigned m, bool write, void *buf, size_t len,
			  uint64_t off)
{
	struct volume_batch_entry *e = &b->e[b->n];
	struct volume_member *mb = &b->s->m[m];
	int st = volume_mstate(b->s, m);

	assert(b->n < VOLUME_BATCH_MAX);
	*e = (struct volume_batch_entry){
		.io = { .op = write ? BDEV_WRITE : BDEV_READ, .buf = buf, .len = len,
			.off = mb->offset + off, .data = e },
		.batch = b, .m = m, .write = write,
	};
	/* The rules of volume_mread / volume_mwrite, decided before any I/O. */
	if (write ? st == VOLUME_MEMBER_FAILED || member_bad(mb, off, len)
		  : st != VOLUME_MEMBER_OK || member_bad(mb, off, len)) {
		e->skipped = true;
		e->io.result = write ? 0 : -EIO;
	}
	return b->n++;
}

static void batch_io_done(struct bdev_io *io)
{
	struct volume_batch_entry *e = io->data;
	struct volume_batch *b = e->batch;

	pthread_mutex_lock(&b->lock);
	if (--b->pending == 0)
		pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void volume_batch_run(struct volume_batch *b)
{
	unsigned todo = 0;

	for (unsigned i = 0; i < b->n; i++)
		todo += !b->e[i].skipped;
	pthread_mutex_lock(&b->lock);
	b->pending = todo;
	pthread_mutex_unlock(&b->lock);
	for (unsigned i = 0; i < b->n; i++) {
		if (b->e[i].skipped)
			continue;
		b->e[i].io.done = batch_io_done;
		bdev_submit(b->s->m[b->e[i].m].dev, &b->e[i].io);
	}
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	for (unsigned i = 0; i < b->n; i++) {
		struct volume_batch_entry *e = &b->e[i];
		struct volume_member *mb = &b->s->m[e->m];
		uint64_t off = e->io.off - mb->offset;

		if (!e->write || e->skipped || e->io.result >= 0)
			continue;
		if (b->s->bbl && e->io.result != -ENODEV && mb->nbad < VOLUME_MAX_BAD) {
			mb->bad[mb->nbad++] = (struct volume_bad){ off, e->io.len };
			e->io.result = 0;
		} else {
			volume_mfail(b->s, e->m, "write", e->io.off, e->io.result);
		}
	}
}

int volume_batch_result(const struct volume_batch *b, unsigned i)
{
	return b->e[i].io.result;
}
