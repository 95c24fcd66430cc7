/*
 * cmd_vol_names.c - volumes by name, as mdadm users name arrays: `pony vol
 * assemble` records the volume (its name, UUID and member UUIDs) in the
 * device database, and every `pony vol` command then takes NAME, UUID=U or
 * LABEL=L in place of the member list. The members are found by their tags
 * (cmd_ponyfs_find.c, the lookup `pony mount UUID=` uses), so a member that
 * moved is found where it is now.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ponyfs.h"
#include "pony/devdb.h"
#include "vol.h"

bool vol_is_named(const char *arg)
{
	struct stat st;

	if (cli_ponyfs_is_spec(arg))
		return true;
	/* A name is a word: never a path, an NBD URI or a file that is there. */
	return *arg && !strchr(arg, '/') && !bdev_name_is_nbd(arg) && stat(arg, &st) < 0 &&
	       errno == ENOENT;
}

int vol_find_members(const char *arg, char ***ret_paths, int *ret_n)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	_cleanup_(devdb_volume_freep) struct devdb_volume *v = NULL;
	char spec[64];
	int r;

	if (cli_ponyfs_is_spec(arg))
		return cli_ponyfs_find_members(arg, ret_paths, ret_n, VOLUME_MAX_MEMBERS);
	r = devdb_open(NULL, 0, &db);
	if (r < 0)
		return cli_error("%s: no such file, and the device database cannot be read: %s", arg,
				 strerror(-r));
	r = devdb_volume_get(db, arg, &v);
	if (r == -ENOENT)
		return cli_error("%s: no such file or device, nor a volume of that name in the device "
				 "database ('pony vol assemble' records names)", arg);
	if (r < 0)
		return cli_error("%s: the device database: %s", arg, strerror(-r));
	snprintf(spec, sizeof(spec), "UUID=%s", v->uuid);
	return cli_ponyfs_find_members(spec, ret_paths, ret_n, VOLUME_MAX_MEMBERS);
}

/* A local member into the database, by its absolute path (found from any directory). */
static void note_path(struct devdb *db, const char *path)
{
	char *abs;

	if (bdev_name_is_nbd(path) || vol_is_named(path))
		return;         /* NBD members: `pony dev register URI` */
	abs = realpath(path, NULL);
	if (abs)
		devdb_update_path(db, abs);     /* best effort: `pony dev scan` mends it */
	free(abs);
}

void vol_devdb_note(const char *path)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;

	if (devdb_open(NULL, 0, &db) == 0)
		note_path(db, path);
}

bool vol_recorded_name(const char *uuid, char *buf, size_t size)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	_cleanup_(devdb_volume_freep) struct devdb_volume *v = NULL;

	if (devdb_open(NULL, 0, &db) < 0 || devdb_volume_get(db, uuid, &v) < 0)
		return false;
	snprintf(buf, size, "%s", v->name);
	return true;
}

int vol_record(struct vol_handle *h, const char *name, char *const *paths, int n)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	char uuid[VOLUME_UUID_STRLEN], members[VOLUME_MAX_MEMBERS][VOLUME_UUID_STRLEN];
	char *member_uuids[VOLUME_MAX_MEMBERS];
	struct volume_set_info info;
	struct devdb_volume v = { .uuid = uuid, .member_uuids = member_uuids };
	int r;

	volume_set_info(h->set, &info);
	volume_uuid_format(info.uuid, uuid);
	v.name = (char *)(name ? name : info.name);
	if (!*v.name)
		return 0;       /* nothing to call it by: UUID= still finds it */
	for (unsigned m = 0; m < info.nmembers && m < VOLUME_MAX_MEMBERS; m++) {
		struct volume_set_member sm;

		volume_set_member(h->set, m, &sm);
		volume_uuid_format(sm.uuid, members[m]);
		member_uuids[v.nmembers++] = members[m];
	}
	r = devdb_open(NULL, 0, &db);
	for (int i = 0; r == 0 && i < n; i++)
		note_path(db, paths[i]);
	if (r == 0)
		r = devdb_volume_record(db, &v);
	if (r == 0)
		return 0;
	if (name)
		return cli_error("cannot record the volume as '%s' in the device database: %s", name,
				 strerror(-r));
	fprintf(stderr, "pony: warning: the volume is not recorded in the device database (%s); "
		"commands need its members or UUID=%s\n", strerror(-r), uuid);
	return 0;
}
