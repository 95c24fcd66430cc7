/*
 * scrub_span_buf.c - what the targets' lock-free scrub walks
 * (volume_scrub_span(): raid_scrub_span.c, mirror_scrub_span.c) share: a
 * buffer per thread that holds every member's share of a span, kept from
 * span to span (a pass reuses it for each, so no large allocation and its
 * page faults per span), and the locked way back for a part the walk could
 * not decide on its own (a read error, a member out, copies or parity that
 * disagree): the target's own scrub, unit by unit under the segment's lock,
 * which alone decides, logs and repairs.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pony/util.h"
#include "internal.h"

/* The thread's buffer, grown as needed and freed when the thread ends. */
struct span_buf {
	uint8_t *mem;
	size_t len;
};

static pthread_key_t span_key;
static pthread_once_t span_once = PTHREAD_ONCE_INIT;

static void span_buf_free(void *arg)
{
	struct span_buf *b = arg;

	free(b->mem);
	free(b);
}

static void span_key_init(void)
{
	if (pthread_key_create(&span_key, span_buf_free))
		abort();
}

uint8_t *volume_scrub_span_buf(size_t len)
{
	struct span_buf *b;

	pthread_once(&span_once, span_key_init);
	b = pthread_getspecific(span_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(span_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->len < len) {
		free(b->mem);
		b->mem = util_aligned_alloc(len);
		b->len = b->mem ? len : 0;
	}
	return b->mem;
}

int volume_scrub_span_locked(struct volume_seg *s, uint64_t off, uint64_t end,
			     struct volume_scrub *sc)
{
	uint64_t unit = s->ops->unit(s);
	int r = 0;

	for (; off < end && r >= 0; off += unit) {
		pthread_mutex_lock(&s->lock);
		r = s->ops->scrub(s, off, MIN(unit, end - off), sc);
		pthread_mutex_unlock(&s->lock);
	}
	return r;
}
