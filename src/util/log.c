/*
 * log.c - the one logging call for events of a running daemon: a member
 * failed, a checksum was repaired, a commit failed, the filesystem went
 * read-only. A storage admin learns of these from syslog (the journal where
 * it runs) or from the file given with --log; nothing is ever printed by a
 * library otherwise. One event is one line, written with one write(2), so
 * lines of several threads and processes never interleave in the file.
 *
 * Until a daemon opens the log, util_log() only counts and feeds the sink a
 * test installed: library code may log from anywhere without knowing whether
 * a daemon, a test or a one-shot command runs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>

#include "pony/util.h"

static struct {
	pthread_mutex_t lock;
	unsigned flags;                 /* UTIL_LOG_* destinations */
	int fd;                         /* --log FILE, or -1 */
	char ident[32];
	util_log_sink_t sink;
	void *sink_arg;
	uint64_t lines;
} logger = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.ident = "pony",
};

static const char *prio_name(int prio)
{
	switch (prio) {
	case LOG_EMERG: case LOG_ALERT: case LOG_CRIT: return "crit";
	case LOG_ERR: return "err";
	case LOG_WARNING: return "warning";
	case LOG_NOTICE: return "notice";
	case LOG_INFO: return "info";
	default: return "debug";
	}
}

int util_log_open(const char *ident, const char *file, unsigned flags)
{
	int fd = -1;

	if (file) {
		fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0)
			return -errno;
	}
	pthread_mutex_lock(&logger.lock);
	if (logger.fd >= 0)
		close(logger.fd);
	logger.fd = fd;
	logger.flags = flags;
	snprintf(logger.ident, sizeof(logger.ident), "%s", ident ? ident : "pony");
	if (flags & UTIL_LOG_SYSLOG)
		openlog(logger.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	pthread_mutex_unlock(&logger.lock);
	return 0;
}

void util_log_close(void)
{
	pthread_mutex_lock(&logger.lock);
	if (logger.fd >= 0)
		close(logger.fd);
	logger.fd = -1;
	if (logger.flags & UTIL_LOG_SYSLOG)
		closelog();
	logger.flags = 0;
	pthread_mutex_unlock(&logger.lock);
}

void util_log_set_sink(util_log_sink_t sink, void *arg)
{
	pthread_mutex_lock(&logger.lock);
	logger.sink = sink;
	logger.sink_arg = arg;
	pthread_mutex_unlock(&logger.lock);
}

uint64_t util_log_lines(void)
{
	uint64_t n;

	pthread_mutex_lock(&logger.lock);
	n = logger.lines;
	pthread_mutex_unlock(&logger.lock);
	return n;
}

/* "2026-12-04T22:50:01.123Z pony[123]: err: TEXT\n" into buf; its length. */
static size_t file_line(char *buf, size_t size, int prio, const char *text)
{
	struct timeval tv;
	struct tm tm;
	size_t n;
	int k;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	k = snprintf(buf + n, size - n, ".%03dZ %s[%d]: %s: %s\n", (int)(tv.tv_usec / 1000),
		     logger.ident, (int)getpid(), prio_name(prio), text);
	n += k < 0 ? 0 : (size_t)k;
	if (n >= size) {                /* cut, but still one whole line */
		n = size - 1;
		buf[n - 1] = '\n';
	}
	return n;
}

void util_vlog(int prio, const char *fmt, va_list ap)
{
	char text[1024], line[1200];
	int saved = errno;

	vsnprintf(text, sizeof(text), fmt, ap);
	pthread_mutex_lock(&logger.lock);
	logger.lines++;
	if (logger.flags & UTIL_LOG_SYSLOG)
		syslog(prio, "%s", text);
	if (logger.fd >= 0) {
		size_t n = file_line(line, sizeof(line), prio, text);

		/* A log that cannot be written must not stop the filesystem. */
		ssize_t w = write(logger.fd, line, n);

		(void)w;
	}
	if (logger.flags & UTIL_LOG_STDERR)
		fprintf(stderr, "%s: %s\n", logger.ident, text);
	if (logger.sink)
		logger.sink(logger.sink_arg, prio, text);
	pthread_mutex_unlock(&logger.lock);
	errno = saved;
}

void util_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	util_vlog(prio, fmt, ap);
	va_end(ap);
}
