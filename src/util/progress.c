/*
 * progress.c - a one-line progress bar on stderr for scans, rebuilds and
 * scrubs. It draws only on a terminal (logs and pipes stay clean) and at most
 * ten times a second, so calling it per item costs nothing.
 */
#include <inttypes.h>

#include "pony/util.h"

void util_progress_init(struct util_progress *p, const char *what, uint64_t total)
{
	*p = (struct util_progress){
		.what = what,
		.total = total,
		.enabled = isatty(STDERR_FILENO),
	};
}

void util_progress_update(struct util_progress *p, uint64_t done)
{
	uint64_t now = util_now_ns();
	char bar[41];
	unsigned filled;

	if (!p->enabled || now - p->last_draw_ns < 100000000u)
		return;
	p->last_draw_ns = now;
	filled = p->total ? (unsigned)(MIN(done, p->total) * 40 / p->total) : 0;
	for (unsigned i = 0; i < 40; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[40] = '\0';
	fprintf(stderr, "\r%s [%s] %" PRIu64 "/%" PRIu64, p->what, bar, done, p->total);
	fflush(stderr);
}

void util_progress_done(struct util_progress *p)
{
	if (p->enabled && p->last_draw_ns)
		fputs("\r\033[K", stderr);
}
