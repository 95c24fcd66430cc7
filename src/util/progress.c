/*
 * progress.c - the progress of long work (scans, rebuilds, scrubs, mkfs,
 * fsck) on stderr, and published for other processes. On a terminal a
 * one-line bar, redrawn at most ten times a second, so calling it per item
 * costs nothing; in a log or a pipe a line every 10 % or 10 s, so a
 * rebuild run by a service leaves a readable trail without a line per
 * update. The published status file (docs/volume.md, "Progress seen from
 * another shell") is how `pony vol detail` shows the percent of work that
 * another process, a CLI command or a mounted ponyfs daemon, is doing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pony/util.h"

#define LINE_EVERY_NS (10 * 1000000000ull)
/* No line in the first second: work that short needs none. $PONY_PROGRESS_QUIET_MS
 * sets it (0: a line from the first 10 %), for scripts and tests that want
 * the trail of short work too. */
#define QUIET_START_NS 1000000000ull
#define PUBLISH_EVERY_NS 1000000000ull

/* Read at each init, into the progress itself: no state shared between threads. */
static uint64_t quiet_start_ns(void)
{
	const char *e = getenv("PONY_PROGRESS_QUIET_MS");
	char *end;
	unsigned long long ms = e ? strtoull(e, &end, 10) : 0;

	return e && *e && !*end && ms < 3600000 ? ms * 1000000ull : QUIET_START_NS;
}

void util_progress_init(struct util_progress *p, const char *what, uint64_t total)
{
	bool tty = isatty(STDERR_FILENO);

	*p = (struct util_progress){
		.what = what,
		.total = total,
		.enabled = tty,
		.lines = !tty && total,
		.quiet_ns = quiet_start_ns(),
	};
}

void util_progress_rate(const struct util_progress *p, double *ret_rate, double *ret_eta)
{
	uint64_t now = util_now_ns();
	double secs = p->start_ns ? (double)(now - p->start_ns) / 1e9 : 0;
	double rate = secs >= 0.5 && p->done > p->start_done ? (double)(p->done - p->start_done) / secs
							      : 0;

	*ret_rate = rate;
	*ret_eta = rate > 0 && p->total >= p->done ? (double)(p->total - p->done) / rate : -1;
}

static unsigned percent_of(uint64_t done, uint64_t total)
{
	return total ? (unsigned)(MIN(done, total) * 100 / total) : 0;
}

/* "40% of 1.0G, 52.0M/s, 12 s left" */
static void describe(const struct util_progress *p, char *buf, size_t len)
{
	char total[16], rate_s[16], eta_s[32] = "";
	double rate, eta;

	util_progress_rate(p, &rate, &eta);
	util_format_size(p->total, total, sizeof(total));
	if (rate > 0)
		util_format_size((uint64_t)rate, rate_s, sizeof(rate_s));
	if (eta >= 0)
		snprintf(eta_s, sizeof(eta_s), ", %.0f s left", eta);
	snprintf(buf, len, "%u%% of %s%s%s%s", percent_of(p->done, p->total), total,
		 rate > 0 ? ", " : "", rate > 0 ? rate_s : "", rate > 0 ? "/s" : "");
	if (eta_s[0])
		strncat(buf, eta_s, len - strlen(buf) - 1);
}

static void draw_bar(struct util_progress *p)
{
	char bar[41], text[96];
	unsigned filled = p->total ? (unsigned)(MIN(p->done, p->total) * 40 / p->total) : 0;

	for (unsigned i = 0; i < 40; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[40] = '\0';
	if (p->total) {
		describe(p, text, sizeof(text));
		fprintf(stderr, "\r%s [%s] %s\033[K", p->what, bar, text);
	} else {
		fprintf(stderr, "\r%s [%s] %" PRIu64 "\033[K", p->what, bar, p->done);
	}
	fflush(stderr);
}

static void print_line(struct util_progress *p, uint64_t now)
{
	char text[96];

	describe(p, text, sizeof(text));
	fprintf(stderr, "pony: %s: %s\n", p->what, text);
	p->last_line_ns = now;
	p->last_line_done = p->done;
	p->last_line_tenth = percent_of(p->done, p->total) / 10;
}

/* Rewrites the status file whole (a new file renamed over it: readers never see half). */
static void publish(struct util_progress *p)
{
	char tmp[4096 + 16], body[512];
	double rate, eta;
	struct timespec ts;
	int fd, n;

	util_progress_rate(p, &rate, &eta);
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(body, sizeof(body),
		     "version=1\nwhat=%s\npid=%ld\ndone=%" PRIu64 "\ntotal=%" PRIu64 "\npercent=%u\n"
		     "rate=%.0f\neta=%.0f\nupdated=%lld\n", p->what, (long)getpid(), p->done, p->total,
		     percent_of(p->done, p->total), rate, eta, (long long)ts.tv_sec);
	snprintf(tmp, sizeof(tmp), "%s.%ld", p->publish_path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;         /* best effort: the work itself goes on */
	if (write(fd, body, (size_t)n) != n || rename(tmp, p->publish_path) < 0)
		unlink(tmp);
	close(fd);
}

int util_progress_publish(struct util_progress *p, const char *path)
{
	free(p->publish_path);
	p->publish_path = strdup(path);
	p->last_publish_ns = 0;         /* the file appears with the first update */
	return p->publish_path ? 0 : -ENOMEM;
}

void util_progress_set_total(struct util_progress *p, uint64_t total)
{
	p->total = total;
	p->lines = !isatty(STDERR_FILENO) && total;
}

void util_progress_update(struct util_progress *p, uint64_t done)
{
	uint64_t now = util_now_ns();

	if (!p->start_ns) {
		p->start_ns = now;
		p->start_done = done;
	}
	p->done = done;
	if (p->publish_path && (!p->last_publish_ns || now - p->last_publish_ns >= PUBLISH_EVERY_NS)) {
		p->last_publish_ns = now;
		publish(p);
	}
	if (p->enabled && now - p->last_draw_ns >= 100000000u) {
		p->last_draw_ns = now;
		draw_bar(p);
	}
	if (p->lines && now - p->start_ns >= p->quiet_ns &&
	    (percent_of(done, p->total) / 10 > p->last_line_tenth ||
	     now - MAX(p->last_line_ns, p->start_ns) >= LINE_EVERY_NS))
		print_line(p, now);
}

void util_progress_done(struct util_progress *p)
{
	if (p->enabled && p->last_draw_ns)
		fputs("\r\033[K", stderr);
	if (p->lines && p->last_line_ns && p->last_line_done != p->done)
		print_line(p, util_now_ns());   /* where it ended, unless just said */
	if (p->publish_path) {
		if (p->last_publish_ns)         /* never another process's file */
			unlink(p->publish_path);
		free(p->publish_path);
		p->publish_path = NULL;
	}
	p->enabled = p->lines = false;  /* a second done() prints nothing */
}

int util_progress_read(const char *path, struct util_progress_status *ret)
{
	char buf[512], *line, *save = NULL;
	unsigned seen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*ret = (struct util_progress_status){ .eta = -1 };
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, '=');

		if (!v)
			return -EBADMSG;
		*v++ = '\0';
		if (!strcmp(line, "what"))
			snprintf(ret->what, sizeof(ret->what), "%s", v);
		else if (!strcmp(line, "pid"))
			ret->pid = strtol(v, NULL, 10), seen |= 1;
		else if (!strcmp(line, "done"))
			ret->done = strtoull(v, NULL, 10), seen |= 2;
		else if (!strcmp(line, "total"))
			ret->total = strtoull(v, NULL, 10), seen |= 4;
		else if (!strcmp(line, "percent"))
			ret->percent = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "rate"))
			ret->rate = strtod(v, NULL);
		else if (!strcmp(line, "eta"))
			ret->eta = strtod(v, NULL);
		else if (!strcmp(line, "updated"))
			ret->updated = strtoll(v, NULL, 10);
	}
	if (seen != 7 || ret->pid <= 0)
		return -EBADMSG;
	/* A writer killed before util_progress_done() leaves its file behind. */
	if (kill((pid_t)ret->pid, 0) < 0 && errno == ESRCH)
		return -ENOENT;
	return 0;
}
