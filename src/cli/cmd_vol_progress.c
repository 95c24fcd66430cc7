/*
 * cmd_vol_progress.c - the progress of a rebuild or scrub, seen from
 * another shell. Whoever runs the work, a `pony vol` command or the spare
 * worker of a mounted ponyfs daemon, publishes its util_progress as a
 * small status file named by the volume's UUID under $PONY_RUNDIR
 * (default /run/pony) /volume/; `pony vol detail` and `pony vol monitor`
 * read it back (format: docs/volume.md, "Progress seen from another
 * shell"). The superblock's checkpoint says the same coarsely (every 1/16
 * of the work); the file adds the rate and time left, and scrubs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "cli.h"
#include "vol.h"

/* PONY_RUNDIR/volume/UUID into buf; with make, its directories are created. */
static int progress_path(const uint8_t *uuid, bool make, char *buf, size_t size)
{
	const char *run = getenv("PONY_RUNDIR");
	char id[VOLUME_UUID_STRLEN];

	if (!run || !*run)
		run = "/run/pony";
	if (make) {
		snprintf(buf, size, "%s", run);
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		snprintf(buf, size, "%s/volume", run);
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	volume_uuid_format(uuid, id);
	snprintf(buf, size, "%s/volume/%s", run, id);
	return 0;
}

bool vol_progress_publish(struct volume_set *set, struct util_progress *p)
{
	struct volume_set_info info;
	char path[4096];

	volume_set_info(set, &info);
	return progress_path(info.uuid, true, path, sizeof(path)) == 0 &&
	       util_progress_publish(p, path) == 0;
}

void vol_watch_spare(struct volume_set *set, struct util_progress *p)
{
	util_progress_init(p, "rebuild onto spare", volume_size(volume_set_volume(set)));
	vol_progress_publish(set, p);
	volume_set_watch(set, vol_progress, p);
}

int vol_progress_of(const uint8_t *uuid, struct util_progress_status *ret)
{
	char path[4096];

	progress_path(uuid, false, path, sizeof(path));
	return util_progress_read(path, ret) < 0 ? -ENOENT : 0;
}
