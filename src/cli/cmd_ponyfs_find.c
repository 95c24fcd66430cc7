/*
 * cmd_ponyfs_find.c - `pony mount UUID=... MNT` and `pony fsck UUID=...`:
 * the member images of a pony volume, found through devdb
 * (devdb_volume_members), with messages people can act on. The database
 * is $PONY_DEVDB or devdb's default, filled by `pony dev scan` (image
 * files, devices) and `pony dev register` (NBD exports, found by their URIs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ponyfs.h"
#include "pony/devdb.h"
#include "pony/util.h"

bool cli_ponyfs_is_spec(const char *arg)
{
	return devdb_is_volume_spec(arg);
}

int cli_ponyfs_find_members(const char *spec, char ***ret_paths, int *ret_n, int max)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	char **paths;
	size_t n;
	int r;

	if (!strchr(spec, '=')[1])
		return cli_usage_error("pony", "%s: an empty value", spec);
	r = devdb_open(NULL, 0, &db);
	if (r < 0)
		return cli_error("the device database: %s", strerror(-r));
	r = devdb_volume_members(db, spec, &paths, &n);
	if (r == -ENOENT)
		return cli_error("%s: no pony volume member known to the device database "
				 "(pony dev scan DIR adds image files, pony dev register URI an NBD export)", spec);
	if (r < 0)
		return cli_error("%s: %s", spec, strerror(-r));
	if (n > (size_t)max) {
		for (size_t i = 0; i < n; i++)
			free(paths[i]);
		free(paths);
		return cli_error("%s: %zu members present, 1 to %d usable", spec, n, max);
	}
	*ret_paths = paths;
	*ret_n = (int)n;
	return 0;
}
