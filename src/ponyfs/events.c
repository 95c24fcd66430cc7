/*
 * events.c - what a running ponyfs has to tell its administrator: a
 * commit failed, the filesystem went read-only, a checksum was repaired
 * or could not be, metadata space grew or ran out. One line per event,
 * through util_log() (syslog or the daemon's --log file) and the mount's
 * report callback, each naming the filesystem (its label, else its UUID)
 * and, where there is one, the inode, file offset and member.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void ponyfs_name_init(struct ponyfs *fs)
{
	const uint8_t *u = fs->sb.uuid;

	if (fs->sb.label[0]) {
		snprintf(fs->name, sizeof(fs->name), "%s", fs->sb.label);
		return;
	}
	snprintf(fs->name, sizeof(fs->name),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
}

void ponyfs_log(struct ponyfs *fs, int prio, const char *fmt, ...)
{
	char text[768];
	va_list ap;
	int n = snprintf(text, sizeof(text), "ponyfs %s: ", fs->name);

	va_start(ap, fmt);
	vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
	va_end(ap);
	util_log(prio, "%s", text);
	if (fs->report)
		fs->report(fs->report_arg, text);
}

const char *ponyfs_errno_name(int err)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	return name ? name : "EIO";
}
