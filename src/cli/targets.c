/*
 * targets.c - what a command that writes a new filesystem or volume checks
 * before it destroys anything (`pony mkfs`, `pony vol create`, the new
 * device of `pony vol add`/`replace`): each target is a distinct file, no
 * running pony holds it (the lock `pony mount` and `pony fsck` take, kept
 * from here on so none starts meanwhile), no mounted filesystem sits on it,
 * and no signature devdb's probers know is on it unless -f says so. Members
 * of different sizes are only a warning: the space past the smallest one
 * stays unused, which the person should hear about before, not after.
 * An NBD URI is checked by what it holds (probed over the connection) and
 * given once; locks and mounts are the serving host's to keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"
#include "pony/bdev.h"
#include "pony/devdb.h"
#include "pony/util.h"

#define TARGET_LOCK_WAIT_MS 1000

static uint64_t target_size(int fd, const struct stat *st)
{
	uint64_t size = 0;

	if (S_ISBLK(st->st_mode))
		return ioctl(fd, BLKGETSIZE64, &size) < 0 ? 0 : size;
	return (uint64_t)st->st_size;
}

/* A block device some filesystem is mounted from (mountinfo's MAJ:MIN). */
static bool blockdev_mounted(const struct stat *st)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	unsigned maj, min;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2 &&
		    makedev(maj, min) == st->st_rdev)
			return true;
	return false;
}

/* Takes the lock mount and fsck take; the descriptor stays open for the process. */
static int target_lock(const struct cli_targets *t, const char *path, int fd)
{
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 20) {
		if (errno != EWOULDBLOCK)
			return cli_error("%s: cannot lock: %s", path, strerror(errno));
		if (waited >= TARGET_LOCK_WAIT_MS)
			return cli_error("%s: in use by a running pony (a mounted ponyfs or volume, or "
					 "fsck); unmount it first: %s would destroy it under its feet",
					 path, t->cmd);
		usleep(20000);
	}
	return 0;
}

/* "an ext4 filesystem (LABEL=data, UUID=...)" for the refusal message. */
static void describe(const struct devdb_probe_result *res, char *buf, size_t size)
{
	const char *type = devdb_tags_get(&res->tags, "TYPE");
	const char *pttype = devdb_tags_get(&res->tags, "PTTYPE");
	const char *label = devdb_tags_get(&res->tags, "LABEL");
	const char *uuid = devdb_tags_get(&res->tags, "UUID");
	int n;

	if (res->status == DEVDB_PROBE_AMBIVALENT)
		n = snprintf(buf, size, "more than one signature (%s)", res->ambivalent);
	else if (type && !strcmp(type, "pony_volume_member"))
		n = snprintf(buf, size, "a member of pony volume '%s'", label ? label : ""), label = NULL;
	else if (type)
		n = snprintf(buf, size, "%s %s %s", strchr("aeiouAEIOU", type[0]) ? "an" : "a", type,
			     devdb_tags_get(&res->tags, "USAGE") ?: "signature");
	else
		n = snprintf(buf, size, "a %s partition table", pttype ? pttype : "");
	if (n > 0 && (size_t)n < size && (label || uuid))
		snprintf(buf + n, size - (size_t)n, " (%s%s%s%s%s)", label ? "LABEL=" : "",
			 label ? label : "", label && uuid ? ", " : "", uuid ? "UUID=" : "",
			 uuid ? uuid : "");
}

/* Refuses a target with a signature, unless forced or a member coming back. */
static int target_probe(const struct cli_targets *t, const char *path)
{
	_cleanup_(devdb_probe_result_freep) struct devdb_probe_result *res = NULL;
	const char *type, *uuid;
	char what[512];
	int r = bdev_name_is_nbd(path) ? cli_probe_device(path, &res, NULL)
				       : devdb_probe_path(path, NULL, &res);

	if (r < 0)
		return cli_error("%s: cannot read it: %s", path, strerror(-r));
	if (res->status == DEVDB_PROBE_NONE && !devdb_tags_get(&res->tags, "PTTYPE"))
		return 0;
	type = devdb_tags_get(&res->tags, "TYPE");
	uuid = devdb_tags_get(&res->tags, "UUID");
	if (t->rejoin_uuid && type && uuid && !strcmp(type, "pony_volume_member") &&
	    !strcmp(uuid, t->rejoin_uuid))
		return 0;       /* a member of this very volume, taken in again */
	describe(res, what, sizeof(what));
	if (t->force) {
		fprintf(stderr, "%s: %s: overwriting %s (-f)\n", t->cmd, path, what);
		return 0;
	}
	return cli_error("%s: holds %s; %s would destroy it (use -f to overwrite it anyway)",
			 path, what, t->cmd);
}

int cli_paths_distinct(char *const *paths, int n)
{
	struct stat st[CLI_TARGETS_MAX];

	for (int i = 0; i < n && i < CLI_TARGETS_MAX; i++) {
		if (bdev_name_is_nbd(paths[i])) {
			for (int j = 0; j < i; j++)
				if (!strcmp(paths[j], paths[i]))
					return cli_error("%s is given twice: each device can be given "
							 "once", paths[i]);
			continue;
		}
		if (stat(paths[i], &st[i]) < 0)
			return cli_error("%s: %s", paths[i], strerror(errno));
		for (int j = 0; j < i; j++)
			if (!bdev_name_is_nbd(paths[j]) && st[j].st_dev == st[i].st_dev &&
			    st[j].st_ino == st[i].st_ino)
				return cli_error("%s and %s are the same %s: each device can be given "
						 "once", paths[j], paths[i],
						 S_ISBLK(st[i].st_mode) ? "device" : "file");
	}
	return 0;
}

int cli_targets_check(const struct cli_targets *t, char *const *paths, int n)
{
	struct stat st[CLI_TARGETS_MAX];
	uint64_t size[CLI_TARGETS_MAX], smallest = UINT64_MAX, unused = 0;
	int r;

	if (n > CLI_TARGETS_MAX)
		return cli_error("%s: more than %d devices", t->cmd, CLI_TARGETS_MAX);
	r = cli_paths_distinct(paths, n);
	if (r)
		return r;
	for (int i = 0; i < n; i++) {
		int fd;

		if (bdev_name_is_nbd(paths[i])) {
			if (cli_probe_device(paths[i], NULL, &size[i]) < 0)
				return CLI_EXIT_FAILURE;
			smallest = MIN(smallest, size[i]);
			continue;
		}
		fd = open(paths[i], O_RDONLY | O_CLOEXEC);     /* never closed: the lock */
		if (fd < 0 || fstat(fd, &st[i]) < 0)
			return cli_error("%s: %s", paths[i], strerror(errno));
		if (!S_ISREG(st[i].st_mode) && !S_ISBLK(st[i].st_mode))
			return cli_error("%s: not an image file or a block device", paths[i]);
		if (S_ISBLK(st[i].st_mode) && blockdev_mounted(&st[i]))
			return cli_error("%s: mounted; unmount it first", paths[i]);
		r = target_lock(t, paths[i], fd);
		if (r)
			return r;
		size[i] = target_size(fd, &st[i]);
		smallest = MIN(smallest, size[i]);
	}
	for (int i = 0; i < n; i++) {
		r = target_probe(t, paths[i]);
		if (r)
			return r;
	}
	for (int i = 0; i < n; i++)
		unused += size[i] - smallest;
	if (unused) {
		char a[16], b[16];

		fprintf(stderr, "%s: warning: the devices differ in size; each is used up to the "
			"smallest (%s), so %s stay unused\n", t->cmd,
			util_format_size(smallest, a, sizeof(a)), util_format_size(unused, b, sizeof(b)));
	}
	return 0;
}
