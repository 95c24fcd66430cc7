/*
 * mountinfo.c - the mounts this process sees, read from
 * /proc/self/mountinfo, for the commands that ask where something is
 * mounted: which mount serves an image (a second mount binds it,
 * cmd_ponyfs_helper.c) and which mount a path is on (a dead FUSE mount is
 * named in the message, common.c). The kernel writes every field with
 * octal escapes (\040 for a space); they are undone here, once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pony/util.h"

/* mountinfo's octal escapes undone in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*d++ = (char)strtol((char[]){ s[1], s[2], s[3], 0 }, NULL, 8);
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

int cli_mountinfo_foreach(int (*fn)(const struct cli_mount *m, void *arg), void *arg)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], target[4096], type[256], source[4096];
	int r = 0;

	if (!f)
		return 0;
	while (!r && fgets(line, sizeof(line), f)) {
		const char *dash = strstr(line, " - ");

		/* id parent major:minor root MOUNTPOINT options... - TYPE SOURCE superoptions */
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", target) != 1 ||
		    sscanf(dash + 3, "%255s %4095s", type, source) != 2)
			continue;
		unescape(target);
		unescape(source);
		r = fn(&(struct cli_mount){ .target = target, .type = type, .source = source }, arg);
	}
	return r;
}

/*
 * path made absolute without asking the filesystem (a dead mount answers
 * nothing): the working directory before a relative one, "." and ".."
 * and repeated slashes taken out.
 */
static void absolute(const char *path, char *ret)
{
	char buf[PATH_MAX * 2];
	size_t n = 0;

	if (path[0] == '/' || !getcwd(buf, PATH_MAX))
		buf[0] = '\0';
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/%s", path);
	for (char *s = buf, *end; *s; s = end) {
		size_t len;

		while (*s == '/')
			s++;
		end = s + strcspn(s, "/");
		len = (size_t)(end - s);
		if (!len || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && ret[--n] != '/')
				;
			continue;
		}
		if (n + len + 2 > PATH_MAX)
			break;
		ret[n++] = '/';
		memcpy(ret + n, s, len);
		n += len;
	}
	if (!n)
		ret[n++] = '/';
	ret[n] = '\0';
}

struct longest {
	const char *path;               /* absolute */
	char *ret;                      /* PATH_MAX */
	size_t len;                     /* of the best match so far */
};

static int longest_prefix(const struct cli_mount *m, void *arg)
{
	struct longest *l = arg;
	size_t len = strlen(m->target);

	if (len >= l->len && !strncmp(l->path, m->target, len) &&
	    (l->path[len] == '/' || l->path[len] == '\0' || len == 1)) {
		snprintf(l->ret, PATH_MAX, "%s", m->target);
		l->len = len;
	}
	return 0;
}

void cli_mount_point_of(const char *path, char *ret)
{
	char abs[PATH_MAX];
	struct longest l = { .path = abs, .ret = ret };

	absolute(path, abs);
	snprintf(ret, PATH_MAX, "%s", path);
	cli_mountinfo_foreach(longest_prefix, &l);
}
