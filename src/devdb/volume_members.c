/*
 * volume_members.c - a pony volume named UUID=... or LABEL=..., found
 * through the index: its pony_volume_member prober tags every member with
 * the volume's UUID (and LABEL with the volume's name), so one lookup finds
 * them all; the volume orders them itself from their superblocks. The
 * answer is what to open for each: a registered NBD export's URI, a local
 * device's path. `pony mount|fsck|vol UUID=...` and nbdkit's `volume=`
 * parameter share it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pony/bdev.h"
#include "pony/devdb.h"
#include "pony/util.h"

bool devdb_is_volume_spec(const char *arg)
{
	return !strncmp(arg, "UUID=", 5) || !strncmp(arg, "LABEL=", 6);
}

int devdb_volume_members(struct devdb *db, const char *spec, char ***ret_names, size_t *ret_n)
{
	const char *eq = strchr(spec, '=');
	_cleanup_(freep) char *name = eq ? strndup(spec, (size_t)(eq - spec)) : NULL;
	const char *names[2] = { name, "TYPE" }, *values[2] = { eq ? eq + 1 : "", "pony_volume_member" };
	struct devdb_dev **devs = NULL;
	char **out;
	size_t n = 0, k = 0;
	int r;

	if (!devdb_is_volume_spec(spec) || !eq[1])
		return -EINVAL;
	if (!name)
		return -ENOMEM;
	r = devdb_find(db, names, values, 2, &devs, &n);
	if (r < 0)
		return r;
	out = calloc(n ? n : 1, sizeof(*out));
	for (size_t i = 0; out && i < n; i++) {
		/* A registered NBD export is reached through its URI. */
		const char *path = devs[i]->connect && bdev_name_is_nbd(devs[i]->connect) ?
				   devs[i]->connect : devs[i]->present ? devs[i]->path : NULL;

		if (!path)
			continue;
		out[k] = strdup(path);
		if (!out[k++])
			r = -ENOMEM;
	}
	devdb_devs_free(devs, n);
	if (!out || r < 0 || !k) {
		for (size_t i = 0; out && i < k; i++)
			free(out[i]);
		free(out);
		return !out || r < 0 ? -ENOMEM : -ENOENT;
	}
	*ret_names = out;
	*ret_n = k;
	return 0;
}
