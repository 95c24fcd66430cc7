/*
 * lookup.c - answering from the index: devices by tag (an index hit on
 * (name, value)), by path, all of them. A hit is never returned stale: its
 * preferred path is checked with one stat against the identity stored at
 * probe time, and only if that changed is the device probed again, alone;
 * a path that is gone is marked absent and its device is not returned
 * unless another path still reaches it. Remote devices registered before
 * they exist are returned as not present.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "pony/util.h"

void devdb_dev_free(struct devdb_dev *dev)
{
	if (!dev)
		return;
	free(dev->path);
	free(dev->kind);
	free(dev->connect);
	free(dev->ambivalent);
	devdb_tags_done(&dev->tags);
	for (size_t i = 0; i < dev->npaths; i++)
		free(dev->paths[i]);
	free(dev->paths);
	free(dev);
}

void devdb_devs_free(struct devdb_dev **devs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		devdb_dev_free(devs[i]);
	free(devs);
}

static char *col_dup(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);

	return t ? strdup(t) : NULL;
}

static int load_dev(struct devdb *db, int64_t id, struct devdb_dev **ret)
{
	_cleanup_(devdb_dev_freep) struct devdb_dev *d = calloc(1, sizeof(*d));
	sqlite3_stmt *s = devdb_stmt(db, STMT_DEV_GET);

	if (!d || !s)
		return -ENOMEM;
	d->id = id;
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) != SQLITE_ROW)
		return -ENOENT;
	d->kind = col_dup(s, 0);
	d->connect = col_dup(s, 1);
	d->present = sqlite3_column_int64(s, 2);
	d->size = (uint64_t)sqlite3_column_int64(s, 3);
	d->status = (enum devdb_probe_status)sqlite3_column_int(s, 4);
	d->ambivalent = col_dup(s, 5);
	s = devdb_stmt(db, STMT_DEV_TAGS);
	if (!s)
		return -ENOMEM;
	sqlite3_bind_int64(s, 1, id);
	while (sqlite3_step(s) == SQLITE_ROW)
		if (devdb_tags_add(&d->tags, (const char *)sqlite3_column_text(s, 0),
				   (const char *)sqlite3_column_text(s, 1)) < 0)
			return -ENOMEM;
	s = devdb_stmt(db, STMT_DEV_PATHS);
	if (!s)
		return -ENOMEM;
	sqlite3_bind_int64(s, 1, id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		char **p = realloc(d->paths, (d->npaths + 1) * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->paths = p;
		p[d->npaths] = col_dup(s, 0);
		if (!p[d->npaths])
			return -ENOMEM;
		d->npaths++;
	}
	if (d->npaths) {
		d->path = strdup(d->paths[0]);
		if (!d->path)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(d);
	return 0;
}

/* The image a partition path lives in, or NULL (malloc'd). */
static char *path_parent(struct devdb *db, const char *path)
{
	sqlite3_stmt *s = devdb_stmt(db, STMT_PATH_PARENT);
	char *parent = NULL;

	if (!s)
		return NULL;
	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		parent = col_dup(s, 0);
	sqlite3_reset(s);
	return parent;
}

int devdb_update_path(struct devdb *db, const char *path)
{
	_cleanup_(freep) char *parent = NULL;
	struct devdb_probe_result *res;
	struct devdb_ident cur, old;
	bool present = false;
	int r = devdb_ident_get(path, &cur);

	if (r == -ENOENT || r == -ENOTDIR) {
		parent = path_parent(db, path);
		if (parent)
			return devdb_update_path(db, parent);
		r = devdb_mark_absent(db, path);
		return r == -ENOENT ? 0 : r < 0 ? r : 1;
	}
	if (r < 0)
		return r;
	r = devdb_stored_ident(db, path, &old, &present);
	if (r < 0)
		return r;
	if (r == 1 && present && devdb_ident_equal(&cur, &old))
		return 0;
	r = devdb_probe_ident(path, &cur, &res);
	if (r < 0)
		return r;
	r = devdb_exec(db, "BEGIN IMMEDIATE");
	if (r == 0) {
		r = devdb_store(db, path, &cur, res);
		devdb_exec(db, r == 0 ? "COMMIT" : "ROLLBACK");
	}
	devdb_probe_result_free(res);
	return r < 0 ? r : 1;
}

/*
 * The stat check of one hit: 0 still valid (maybe after a re-probe),
 * -ENOENT gone, -errno. *ret_changed says whether the tags may differ now.
 */
/* Reads only: whether d's preferred path is still the identity stored
 * (the common case, answered inside the lookup's read transaction). */
static bool dev_unchanged(struct devdb *db, const struct devdb_dev *d)
{
	_cleanup_(freep) char *parent = d->npaths ? path_parent(db, d->paths[0]) : NULL;
	const char *p = parent ? parent : d->npaths ? d->paths[0] : NULL;
	struct devdb_ident cur, old;
	bool present;

	return p && devdb_ident_get(p, &cur) == 0 && devdb_stored_ident(db, p, &old, &present) == 1 &&
	       present && devdb_ident_equal(&cur, &old);
}

static int verify_dev(struct devdb *db, const struct devdb_dev *d, bool *ret_changed)
{
	*ret_changed = false;
	for (size_t i = 0; i < d->npaths; i++) {
		_cleanup_(freep) char *parent = path_parent(db, d->paths[i]);
		const char *p = parent ? parent : d->paths[i];
		struct devdb_ident cur, old;
		bool present;
		int r = devdb_ident_get(p, &cur);

		if (r < 0) {
			devdb_mark_absent(db, p);
			*ret_changed = true;
			continue;
		}
		r = devdb_stored_ident(db, p, &old, &present);
		if (r < 0)
			return r;
		if (r == 1 && present && devdb_ident_equal(&cur, &old))
			return 0;
		*ret_changed = true;
		r = devdb_update_path(db, p);
		return r < 0 ? r : 0;
	}
	return -ENOENT;
}

static int dev_matches(struct devdb *db, int64_t id, const char *const *names,
		       const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_stmt *s = devdb_stmt(db, STMT_FIND1);
		bool hit = false;

		if (!s)
			return -ENOMEM;
		sqlite3_bind_text(s, 1, names[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, values[i], -1, SQLITE_STATIC);
		while (!hit && sqlite3_step(s) == SQLITE_ROW)
			hit = sqlite3_column_int64(s, 0) == id;
		if (!hit)
			return 0;
	}
	return 1;
}

/* Device ids matching every term (the first term's index hit, then AND). */
static int find_ids(struct devdb *db, const char *const *names, const char *const *values,
		    size_t n, int64_t **ret_ids, size_t *ret_n)
{
	sqlite3_stmt *s = devdb_stmt(db, STMT_FIND1);
	int64_t *ids = NULL;
	size_t cnt = 0;

	if (!s)
		return -ENOMEM;
	sqlite3_bind_text(s, 1, names[0], -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, values[0], -1, SQLITE_TRANSIENT);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t *v = realloc(ids, (cnt + 1) * sizeof(*v));

		if (!v) {
			free(ids);
			return -ENOMEM;
		}
		ids = v;
		ids[cnt++] = sqlite3_column_int64(s, 0);
	}
	for (size_t i = 0; i < cnt && n > 1;) {
		int m = dev_matches(db, ids[i], names + 1, values + 1, n - 1);

		if (m < 0) {
			free(ids);
			return m;
		}
		if (m)
			i++;
		else
			ids[i] = ids[--cnt];
	}
	*ret_ids = ids;
	*ret_n = cnt;
	return 0;
}

static int devs_append(struct devdb_dev ***devs, size_t *n, struct devdb_dev *d)
{
	struct devdb_dev **v = realloc(*devs, (*n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	*devs = v;
	v[(*n)++] = d;
	return 0;
}

/*
 * The hits, loaded inside one read transaction (a statement outside one is
 * a transaction of its own: shm locks and a WAL check each time); those
 * whose stat check passes are done. *ret_stale (nstale) are the hits to
 * verify outside it, since verifying may re-probe and write.
 */
static int find_load(struct devdb *db, const char *const *names, const char *const *values,
		     size_t nterms, struct devdb_dev ***devs, size_t *n,
		     struct devdb_dev ***ret_stale, size_t *ret_nstale)
{
	_cleanup_(freep) int64_t *ids = NULL;
	bool txn = sqlite3_get_autocommit(db->sql);
	bool verify = !(db->flags & DEVDB_OPEN_NOVERIFY);
	size_t nids = 0;
	int r = txn ? devdb_exec_stmt(db, STMT_BEGIN) : 0;

	if (r == 0)
		r = find_ids(db, names, values, nterms, &ids, &nids);
	for (size_t i = 0; r >= 0 && i < nids; i++) {
		struct devdb_dev *d = NULL;

		r = load_dev(db, ids[i], &d);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r == 0 && verify && strcmp(d->kind, "remote") && !dev_unchanged(db, d))
			r = devs_append(ret_stale, ret_nstale, d);
		else if (r == 0)
			r = devs_append(devs, n, d);
		if (r < 0)
			devdb_dev_free(d);
	}
	if (txn)
		devdb_exec_stmt(db, STMT_COMMIT);
	return r;
}

int devdb_find(struct devdb *db, const char *const *names, const char *const *values,
	       size_t nterms, struct devdb_dev ***ret_devs, size_t *ret_n)
{
	struct devdb_dev **devs = NULL, **stale = NULL;
	size_t n = 0, nstale = 0;
	int r;

	if (!nterms)
		return -EINVAL;
	r = find_load(db, names, values, nterms, &devs, &n, &stale, &nstale);
	for (size_t i = 0; r >= 0 && i < nstale; i++) {
		struct devdb_dev *d = stale[i];
		int64_t id = d->id;
		bool changed = false;

		stale[i] = NULL;
		r = verify_dev(db, d, &changed);
		if (r == 0 && changed) {
			/* re-read: the re-probe may have changed the tags, or the paths */
			devdb_dev_free(d);
			d = NULL;
			r = dev_matches(db, id, names, values, nterms);
			r = r > 0 ? load_dev(db, id, &d) : r == 0 ? -ENOENT : r;
		}
		if (r == -ENOENT) {
			devdb_dev_free(d);
			r = 0;
			continue;
		}
		if (r == 0)
			r = devs_append(&devs, &n, d);
		if (r < 0)
			devdb_dev_free(d);
	}
	devdb_devs_free(stale, nstale);
	if (r < 0) {
		devdb_devs_free(devs, n);
		return r;
	}
	if (!n) {
		free(devs);
		return -ENOENT;
	}
	/* present devices first, keeping index order otherwise */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && devs[j]->present && !devs[j - 1]->present; j--) {
			struct devdb_dev *t = devs[j];

			devs[j] = devs[j - 1];
			devs[j - 1] = t;
		}
	*ret_devs = devs;
	*ret_n = n;
	return 0;
}

int devdb_find_tag(struct devdb *db, const char *name, const char *value, struct devdb_dev **ret_dev)
{
	struct devdb_dev **devs;
	size_t n;
	int r = devdb_find(db, &name, &value, 1, &devs, &n);

	if (r < 0)
		return r;
	*ret_dev = devs[0];
	devs[0] = NULL;
	devdb_devs_free(devs, n);
	return 0;
}

int devdb_resolve_spec(struct devdb *db, const char *spec, char **ret_path)
{
	_cleanup_(freep) char *name = NULL;
	struct devdb_dev *d;
	const char *eq = strchr(spec, '=');
	const char *value;
	int r;

	if (!eq || spec[0] == '/') {
		*ret_path = strdup(spec);
		return *ret_path ? 0 : -ENOMEM;
	}
	name = strndup(spec, (size_t)(eq - spec));
	if (!name)
		return -ENOMEM;
	value = eq + 1;
	/* LABEL="x y" as fstab writes it */
	if (value[0] == '"' && strlen(value) >= 2 && value[strlen(value) - 1] == '"') {
		_cleanup_(freep) char *v = strndup(value + 1, strlen(value) - 2);

		if (!v)
			return -ENOMEM;
		r = devdb_find_tag(db, name, v, &d);
	} else {
		r = devdb_find_tag(db, name, value, &d);
	}
	if (r < 0)
		return r;
	if (!d->present || !d->path) {
		devdb_dev_free(d);
		return -ENODEV;
	}
	*ret_path = TAKE_PTR(d->path);
	devdb_dev_free(d);
	return 0;
}

static int load_all(struct devdb *db, const char *sql, const char *arg, struct devdb_dev ***ret_devs,
		    size_t *ret_n)
{
	struct devdb_dev **devs = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	int r = 0;

	if (sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL))
		return -EIO;
	if (arg)
		sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		struct devdb_dev *d;

		r = load_dev(db, sqlite3_column_int64(s, 0), &d);
		if (r == 0 && (r = devs_append(&devs, &n, d)) < 0)
			devdb_dev_free(d);
	}
	sqlite3_finalize(s);
	if (r < 0) {
		devdb_devs_free(devs, n);
		return r;
	}
	*ret_devs = devs;
	*ret_n = n;
	return 0;
}

int devdb_list(struct devdb *db, struct devdb_dev ***ret_devs, size_t *ret_n)
{
	return load_all(db, "SELECT d.id FROM devices d ORDER BY (SELECT min(path) FROM paths "
			    "WHERE device_id=d.id)", NULL, ret_devs, ret_n);
}

int devdb_get(struct devdb *db, const char *path, struct devdb_dev **ret_dev)
{
	struct devdb_dev **devs;
	size_t n;
	int r = load_all(db, "SELECT device_id FROM paths WHERE path=?1", path, &devs, &n);

	if (r < 0)
		return r;
	if (!n) {
		free(devs);
		return -ENOENT;
	}
	*ret_dev = devs[0];
	free(devs);
	return 0;
}

static int strings_query(struct devdb *db, const char *sql, char ***ret, size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	int r = 0;

	if (sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL))
		return -EIO;
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		char **nv = realloc(v, (n + 1) * sizeof(*nv));

		if (!nv || !(nv[n] = col_dup(s, 0))) {
			v = nv ? nv : v;
			r = -ENOMEM;
			break;
		}
		v = nv;
		n++;
	}
	sqlite3_finalize(s);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int devdb_duplicate_uuids(struct devdb *db, char ***ret_uuids, size_t *ret_n)
{
	return strings_query(db, "SELECT value FROM tags WHERE name='UUID' GROUP BY value "
				 "HAVING count(DISTINCT device_id) > 1 ORDER BY value", ret_uuids, ret_n);
}

int devdb_image_dirs(struct devdb *db, char ***ret_dirs, size_t *ret_n)
{
	return strings_query(db, "SELECT DISTINCT dir FROM paths WHERE dir IS NOT NULL ORDER BY dir",
			     ret_dirs, ret_n);
}
