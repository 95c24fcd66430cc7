/*
 * cmd_ponyfs_find.c - `pony mount UUID=... MNT` and `pony fsck UUID=...`:
 * the member images of a pony volume, found through devdb. Its
 * pony_volume_member prober tags every member with the volume's UUID (and
 * LABEL with the volume's name), so one lookup finds them all; the volume
 * orders them itself from their superblocks. The database is $PONY_DEVDB
 * or devdb's default, filled by `pony dev scan` (image files, devices) and
 * `pony dev register` (NBD exports, found by their URIs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pony/bdev.h"
#include "ponyfs.h"
#include "pony/devdb.h"
#include "pony/util.h"

bool cli_ponyfs_is_spec(const char *arg)
{
	return !strncmp(arg, "UUID=", 5) || !strncmp(arg, "LABEL=", 6);
}

int cli_ponyfs_find_members(const char *spec, char ***ret_paths, int *ret_n, int max)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	const char *eq = strchr(spec, '=');
	_cleanup_(freep) char *name = strndup(spec, (size_t)(eq - spec));
	const char *names[2] = { name, "TYPE" }, *values[2] = { eq + 1, "pony_volume_member" };
	struct devdb_dev **devs = NULL;
	char **paths;
	size_t n = 0, k = 0;
	int r;

	if (!name)
		return cli_error("%s", strerror(ENOMEM));
	if (!eq[1])
		return cli_usage_error("pony", "%s: an empty value", spec);
	r = devdb_open(NULL, 0, &db);
	if (r < 0)
		return cli_error("the device database: %s", strerror(-r));
	r = devdb_find(db, names, values, 2, &devs, &n);
	if (r == -ENOENT || (r >= 0 && !n))
		return cli_error("%s: no pony volume member known to the device database "
				 "(pony dev scan DIR adds image files, pony dev register URI an NBD export)", spec);
	if (r < 0)
		return cli_error("%s: %s", spec, strerror(-r));
	paths = calloc(n, sizeof(*paths));
	for (size_t i = 0; paths && i < n; i++) {
		/* A registered NBD export is reached through its URI. */
		const char *path = devs[i]->connect && bdev_name_is_nbd(devs[i]->connect) ?
				   devs[i]->connect : devs[i]->present ? devs[i]->path : NULL;

		if (!path)
			continue;
		paths[k] = strdup(path);
		if (!paths[k++])
			r = -ENOMEM;
	}
	devdb_devs_free(devs, n);
	if (!paths || r < 0 || !k || k > (size_t)max) {
		for (size_t i = 0; paths && i < k; i++)
			free(paths[i]);
		free(paths);
		if (!paths || r < 0)
			return cli_error("%s", strerror(ENOMEM));
		return cli_error("%s: %zu members present, 1 to %d usable", spec, k, max);
	}
	*ret_paths = paths;
	*ret_n = (int)k;
	return 0;
}
