/*
 * volumes.c - named volumes in the device database: what `pony vol
 * assemble` records (a pony volume's name, UUID and member UUIDs by index)
 * so that every `pony vol` command takes NAME as mdadm takes /dev/md/NAME.
 * Only the identity is kept here: the members' devices are found through
 * their tags like any other device, so a moved or re-attached member is
 * found where it is now.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/util.h"

void devdb_volume_free(struct devdb_volume *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nmembers; i++)
		free(v->member_uuids[i]);
	free(v->member_uuids);
	free(v->name);
	free(v->uuid);
	free(v);
}

void devdb_volumes_free(struct devdb_volume **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		devdb_volume_free(v[i]);
	free(v);
}

/* Runs one statement of sql with text arguments args[0..n); 0 or -errno. */
static int run_text(struct devdb *db, const char *sql, const char *const *args, int n)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL);

	for (int i = 0; rc == SQLITE_OK && i < n; i++)
		rc = sqlite3_bind_text(s, i + 1, args[i], -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return devdb_sql_errno(rc);
}

int devdb_volume_record(struct devdb *db, const struct devdb_volume *v)
{
	const char *args[3] = { v->uuid, v->name };
	int r;

	r = devdb_exec_stmt(db, STMT_BEGIN);
	if (r < 0)
		return r;
	/* The name goes to the volume assembled last, as the name of an md array
	 * (/dev/md/NAME) is the one assembled last: an older volume that had it
	 * stays reachable by UUID=. */
	r = run_text(db, "DELETE FROM volume_members WHERE uuid IN "
		     "(SELECT uuid FROM volumes WHERE name=?2) OR uuid=?1", args, 2);
	if (r == 0)
		r = run_text(db, "DELETE FROM volumes WHERE name=?2 OR uuid=?1", args, 2);
	if (r == 0)
		r = run_text(db, "INSERT INTO volumes(uuid, name) VALUES(?1, ?2)", args, 2);
	for (size_t i = 0; r == 0 && i < v->nmembers; i++) {
		char idx[24];

		snprintf(idx, sizeof(idx), "%zu", i);
		args[1] = idx;
		args[2] = v->member_uuids[i];
		r = run_text(db, "INSERT INTO volume_members(uuid, idx, member_uuid) "
			     "VALUES(?1, CAST(?2 AS INTEGER), ?3)", args, 3);
	}
	if (r < 0) {
		devdb_exec(db, "ROLLBACK");
		return r;
	}
	return devdb_exec_stmt(db, STMT_COMMIT);
}

/* The volumes sql selects (uuid, name), with their members. */
static int load_volumes(struct devdb *db, const char *sql, const char *arg,
			struct devdb_volume ***ret, size_t *ret_n)
{
	struct devdb_volume **vs = NULL;
	sqlite3_stmt *s = NULL, *m = NULL;
	size_t n = 0;
	int rc = sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL), r = 0;

	if (rc == SQLITE_OK && arg)
		rc = sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db->sql, "SELECT member_uuid FROM volume_members WHERE uuid=?1 "
					"ORDER BY idx", -1, &m, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct devdb_volume *v = calloc(1, sizeof(*v)), **grown;

		grown = v ? realloc(vs, (n + 1) * sizeof(*vs)) : NULL;
		if (!grown) {
			free(v);
			r = -ENOMEM;
			break;
		}
		vs = grown;
		vs[n++] = v;
		v->uuid = strdup((const char *)sqlite3_column_text(s, 0));
		v->name = strdup((const char *)sqlite3_column_text(s, 1));
		sqlite3_reset(m);
		sqlite3_bind_text(m, 1, v->uuid ? v->uuid : "", -1, SQLITE_TRANSIENT);
		while ((rc = sqlite3_step(m)) == SQLITE_ROW) {
			char **more = realloc(v->member_uuids, (v->nmembers + 1) * sizeof(char *));

			if (!more)
				break;
			v->member_uuids = more;
			v->member_uuids[v->nmembers] = strdup((const char *)sqlite3_column_text(m, 0));
			if (!v->member_uuids[v->nmembers++])
				break;
		}
		if (rc != SQLITE_DONE || !v->uuid || !v->name) {
			r = rc == SQLITE_ROW || rc == SQLITE_DONE ? -ENOMEM : devdb_sql_errno(rc);
			break;
		}
		rc = SQLITE_OK;
	}
	if (!r && rc != SQLITE_DONE)
		r = devdb_sql_errno(rc);
	sqlite3_finalize(s);
	sqlite3_finalize(m);
	if (r < 0) {
		devdb_volumes_free(vs, n);
		return r;
	}
	*ret = vs;
	*ret_n = n;
	return 0;
}

int devdb_volume_get(struct devdb *db, const char *key, struct devdb_volume **ret)
{
	struct devdb_volume **vs;
	size_t n;
	int r = load_volumes(db, "SELECT uuid, name FROM volumes WHERE name=?1 OR uuid=lower(?1) "
			     "ORDER BY name=?1 DESC LIMIT 1", key, &vs, &n);

	if (r < 0)
		return r;
	if (!n) {
		free(vs);
		return -ENOENT;
	}
	*ret = vs[0];
	free(vs);
	return 0;
}

int devdb_volume_list(struct devdb *db, struct devdb_volume ***ret, size_t *ret_n)
{
	return load_volumes(db, "SELECT uuid, name FROM volumes ORDER BY name", NULL, ret, ret_n);
}
