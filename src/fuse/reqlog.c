/*
 * reqlog.c - a mount's FUSE requests by opcode, appended as one line to the
 * file named by PONY_FUSE_REQUEST_LOG when the mount ends. podman and
 * buildah start and stop pony-overlayfs a dozen times per image build and
 * nobody can ask a mount that is gone for its counters (`pony fs requests`),
 * so this is how one sees what a build step asked of its mounts: how many
 * mounts, how long each lived, the daemon's CPU and its requests.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

static double seconds_of(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void ponyfuse_reqlog_write(struct ponyfuse *pf, const struct timespec *started)
{
	const char *path = getenv("PONY_FUSE_REQUEST_LOG");
	char line[4096], counters[3072];
	struct timespec now, wall;
	struct rusage ru;
	int n, fd;

	if (!path || !*path || ponyfuse_devio_counters(pf, counters, sizeof(counters)) < 0)
		return;
	for (char *c = counters; *c; c++) /* "name value\n" lines: one record */
		if (*c == '\n')
			*c = ' ';
	clock_gettime(CLOCK_MONOTONIC, &now);
	clock_gettime(CLOCK_REALTIME, &wall);
	getrusage(RUSAGE_SELF, &ru);
	n = snprintf(line, sizeof(line), "mount %s end %.3f life_s %.3f user_s %.3f sys_s %.3f %s\n",
		     pf->mountpoint ? pf->mountpoint : "?",
		     (double)wall.tv_sec + (double)wall.tv_nsec / 1e9, (double)(now.tv_sec - started->tv_sec) +
			     (double)(now.tv_nsec - started->tv_nsec) / 1e9,
		     seconds_of(ru.ru_utime), seconds_of(ru.ru_stime), counters);
	if (n <= 0)
		return;
	/* O_APPEND and one write: the lines of daemons ending at once do
	 * not mix. */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, MIN((size_t)n, sizeof(line) - 1)) < 0) {
		/* a diagnostic: nothing to do about a full disk here */
	}
	close(fd);
}
