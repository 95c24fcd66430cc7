/*
 * db.c - the device database in SQLite (WAL): devices (one row per
 * identity), their paths (several for multipath or hard-linked images) and
 * their tags, whose primary key (name, value, device) is the index every
 * lookup hits. This file opens it and stores probe results; lookup.c reads.
 *
 * A device's identity key says when two paths are one device: the WWN of a
 * block device (several paths to one LUN), st_dev:st_ino of an image file
 * (hard links), "parent key:pN" for a partition of an image, "r:URI" for a
 * device registered before it is connected. Two devices that merely carry
 * the same UUID (a copied image, a snapshot) have different keys and stay
 * two devices; devdb_duplicate_uuids() reports them.
 */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pony/util.h"

static int db_run(struct devdb *db, const char *sql, const char *types, int64_t *ret_id, ...);

/* Per connection, every open. */
static const char connection_setup[] =
	"PRAGMA synchronous=NORMAL;"
	"PRAGMA mmap_size=1073741824;"
	"PRAGMA cache_size=-32768;"
	/* a WAL left long would be read whole by every new process to rebuild
	 * its index; truncate it when a checkpoint has emptied it */
	"PRAGMA journal_size_limit=0;";

#define SCHEMA_VERSION 4

/* Once per database (user_version below SCHEMA_VERSION); WAL mode persists. */
static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"CREATE TABLE IF NOT EXISTS devices("
	"  id INTEGER PRIMARY KEY,"
	"  ident TEXT NOT NULL UNIQUE,"
	"  kind TEXT NOT NULL,"             /* block, file, partition, remote */
	"  connect TEXT,"                   /* remote: how to connect */
	"  present INTEGER NOT NULL DEFAULT 1,"
	"  size INTEGER NOT NULL DEFAULT 0,"
	"  status INTEGER NOT NULL DEFAULT 0,"      /* enum devdb_probe_status */
	"  ambivalent TEXT);"
	"CREATE TABLE IF NOT EXISTS paths("
	"  path TEXT PRIMARY KEY,"
	"  device_id INTEGER NOT NULL,"
	"  parent TEXT,"                    /* the image file a partition path is in */
	"  dir TEXT,"                       /* the directory of an image file */
	"  present INTEGER NOT NULL DEFAULT 1,"
	"  block INTEGER NOT NULL DEFAULT 0,"
	"  dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, diskseq INTEGER,"
	"  probe_sum INTEGER"                /* what the last probe found, hashed */
	") WITHOUT ROWID;"
	/* covering for a hit's paths (STMT_DEV_PATHS): no descent into paths
	 * per path; version 1's narrower paths_device goes */
	"DROP INDEX IF EXISTS paths_device;"
	"CREATE INDEX IF NOT EXISTS paths_by_device ON paths(device_id, present, parent);"
	"CREATE INDEX IF NOT EXISTS paths_parent ON paths(parent) WHERE parent IS NOT NULL;"
	"CREATE TABLE IF NOT EXISTS tags("
	"  name TEXT NOT NULL, value TEXT NOT NULL, device_id INTEGER NOT NULL,"
	"  PRIMARY KEY(name, value, device_id)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS tags_device ON tags(device_id);"
	/* version 4: named volumes (volumes.c), recorded by `pony vol assemble` */
	"CREATE TABLE IF NOT EXISTS volumes("
	"  uuid TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS volume_members("
	"  uuid TEXT NOT NULL, idx INTEGER NOT NULL, member_uuid TEXT NOT NULL,"
	"  PRIMARY KEY(uuid, idx)) WITHOUT ROWID;"
	"PRAGMA user_version=4;";

/* Version 1 to 2: paths learnt probe_sum (2 to 3, the covering index, and
 * 3 to 4, the volume tables, are the schema's own IF NOT EXISTS). */
static const char migrate_v1[] = "ALTER TABLE paths ADD COLUMN probe_sum INTEGER;";

static const char *const stmt_sql[STMT__MAX] = {
	[STMT_PATH_GET] = "SELECT block, dev, ino, size, mtime_ns, diskseq, present FROM paths WHERE path=?1",
	[STMT_FIND1] = "SELECT device_id FROM tags WHERE name=?1 AND value=?2",
	[STMT_DEV_GET] = "SELECT kind, connect, present, size, status, ambivalent FROM devices WHERE id=?1",
	[STMT_DEV_TAGS] = "SELECT name, value FROM tags WHERE device_id=?1",
	[STMT_DEV_PATHS] = "SELECT path, present, parent FROM paths WHERE device_id=?1 "
			   "ORDER BY present DESC, length(path), path",
	[STMT_PATH_PARENT] = "SELECT parent FROM paths WHERE path=?1",
	[STMT_BEGIN] = "BEGIN",
	[STMT_COMMIT] = "COMMIT",
};

int devdb_sql_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK: case SQLITE_ROW: case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY: case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY: case SQLITE_PERM: case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CORRUPT: case SQLITE_NOTADB:
		return -EUCLEAN;
	case SQLITE_CONSTRAINT: case SQLITE_MISMATCH:
		return -EINVAL;
	default:
		return -EIO;
	}
}

int devdb_exec(struct devdb *db, const char *sql)
{
	return devdb_sql_errno(sqlite3_exec(db->sql, sql, NULL, NULL, NULL));
}

sqlite3_stmt *devdb_stmt(struct devdb *db, int which)
{
	sqlite3_stmt *s = db->stmt[which];

	if (!s && sqlite3_prepare_v3(db->sql, stmt_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
				     &db->stmt[which], NULL) != SQLITE_OK)
		return NULL;
	s = db->stmt[which];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

int devdb_exec_stmt(struct devdb *db, int which)
{
	sqlite3_stmt *s = devdb_stmt(db, which);
	int rc;

	if (!s)
		return devdb_sql_errno(sqlite3_errcode(db->sql));
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return devdb_sql_errno(rc);
}

/* mkdir -p of path's directory (the default lives in /var/lib/pony). */
static int make_parent_dir(const char *path)
{
	_cleanup_(freep) char *copy = strdup(path);
	char *dir;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int devdb_open(const char *path, unsigned flags, struct devdb **ret_db)
{
	struct devdb *db;
	int r;

	if (!path)
		path = getenv("PONY_DEVDB");
	if (!path || !*path)
		path = DEVDB_DEFAULT_PATH;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->flags = flags;
	db->path = strdup(path);
	r = db->path ? make_parent_dir(path) : -ENOMEM;
	if (r == 0)
		r = devdb_sql_errno(sqlite3_open_v2(path, &db->sql,
			SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL));
	if (r == 0) {
		int64_t version = 0;

		int one = 1;

		sqlite3_busy_timeout(db->sql, 5000);
		/* keep the (emptied) -wal file when the last connection closes:
		 * each lookup process would otherwise create and unlink it */
		sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
		r = devdb_exec(db, connection_setup);
		/* a lookup is a whole process: skip the schema when it is there */
		if (r == 0)
			r = db_run(db, "PRAGMA user_version", "", &version);
		if (r == 0 && version == 1)
			r = devdb_exec(db, migrate_v1);
		if (r == 0 && version < SCHEMA_VERSION)
			r = devdb_exec(db, schema);
	}
	if (r < 0) {
		devdb_close(db);
		return r;
	}
	*ret_db = db;
	return 0;
}

void devdb_close(struct devdb *db)
{
	if (!db)
		return;
	for (int i = 0; i < STMT__MAX; i++)
		sqlite3_finalize(db->stmt[i]);
	for (int i = 0; i < DEVDB_STMT_CACHE; i++)
		sqlite3_finalize(db->cache[i].stmt);
	sqlite3_close(db->sql);
	free(db->path);
	free(db);
}

const char *devdb_path(const struct devdb *db)
{
	return db->path;
}

/* A prepared statement for a literal sql, kept for the next call (scans
 * store thousands of devices with the same dozen statements). */
static sqlite3_stmt *cached_stmt(struct devdb *db, const char *sql)
{
	int i;

	for (i = 0; i < DEVDB_STMT_CACHE && db->cache[i].sql; i++)
		if (db->cache[i].sql == sql)
			return db->cache[i].stmt;
	if (i == DEVDB_STMT_CACHE)
		return NULL;
	if (sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &db->cache[i].stmt,
			       NULL) != SQLITE_OK)
		return NULL;
	db->cache[i].sql = sql;
	return db->cache[i].stmt;
}

/* Runs sql (a string literal) with text/int64 arguments ("s"/"i" in types);
 * 0 or -errno. If ret_id is not NULL, the first column of the first row goes
 * there (-1 if no row). */
static int db_run(struct devdb *db, const char *sql, const char *types, int64_t *ret_id, ...)
{
	sqlite3_stmt *s = cached_stmt(db, sql);
	va_list ap;
	int rc;

	if (!s)
		return devdb_sql_errno(sqlite3_errcode(db->sql));
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	va_start(ap, ret_id);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 's') {
			const char *v = va_arg(ap, const char *);

			if (v)
				sqlite3_bind_text(s, i + 1, v, -1, SQLITE_TRANSIENT);
		} else {
			sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
		}
	}
	va_end(ap);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && ret_id)
		*ret_id = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE && ret_id)
		*ret_id = -1;
	sqlite3_reset(s);
	return devdb_sql_errno(rc);
}

/* Deletes a device that no path refers to any more. */
static int drop_if_orphan(struct devdb *db, int64_t id)
{
	int64_t n = 0;
	int r = db_run(db, "SELECT count(*) FROM paths WHERE device_id=?1", "i", &n, id);

	if (r < 0 || n > 0)
		return r;
	r = db_run(db, "DELETE FROM tags WHERE device_id=?1", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM devices WHERE id=?1", "i", NULL, id);
	return r;
}

/* Whether the device's stored tags are exactly tags (a re-probe that found
 * what was there: the common case of a rescan, and then nothing is written). */
static bool tags_unchanged(struct devdb *db, int64_t id, const struct devdb_tags *tags)
{
	sqlite3_stmt *s = cached_stmt(db, "SELECT name, value FROM tags WHERE device_id=?1");
	size_t n = 0;
	bool same = true;

	if (!s)
		return false;
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, id);
	while (same && sqlite3_step(s) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);
		const char *v = devdb_tags_get(tags, name);

		same = v && !strcmp(v, (const char *)sqlite3_column_text(s, 1));
		n++;
	}
	sqlite3_reset(s);
	return same && n == tags->n;
}

static int store_tags(struct devdb *db, int64_t id, const struct devdb_tags *tags)
{
	int r;

	if (tags_unchanged(db, id, tags))
		return 0;
	r = db_run(db, "DELETE FROM tags WHERE device_id=?1", "i", NULL, id);

	for (size_t i = 0; r == 0 && i < tags->n; i++)
		r = db_run(db, "INSERT OR IGNORE INTO tags(name, value, device_id) VALUES(?1, ?2, ?3)",
			   "ssi", NULL, tags->v[i].name, tags->v[i].value, id);
	return r;
}

struct store_item {
	const char *path, *parent, *kind, *ambivalent;
	const struct devdb_ident *id;
	const struct devdb_tags *tags;
	uint64_t size;
	int status;
};

/* The device row for it, written only if something in it changed. */
static int store_device(struct devdb *db, const struct store_item *it, int64_t *ret_id)
{
	int r = db_run(db, "SELECT id FROM devices WHERE ident=?1 AND kind=?2 AND size=?3 AND "
			   "status=?4 AND ambivalent IS ?5 AND present=1",
		       "ssiis", ret_id, it->id->key, it->kind, (int64_t)it->size, (int64_t)it->status,
		       it->ambivalent);

	if (r < 0 || *ret_id >= 0)
		return r;
	return db_run(db, "INSERT INTO devices(ident, kind, size, status, ambivalent, present) "
			  "VALUES(?1, ?2, ?3, ?4, ?5, 1) ON CONFLICT(ident) DO UPDATE SET "
			  "kind=excluded.kind, size=excluded.size, status=excluded.status, "
			  "ambivalent=excluded.ambivalent, present=1 RETURNING id",
		      "ssiis", ret_id, it->id->key, it->kind, (int64_t)it->size, (int64_t)it->status,
		      it->ambivalent);
}

/*
 * Stores one device and one of its paths. A re-probe that found what was
 * there writes nothing at all (no WAL growth, no checkpoint), which is what
 * most rescans are.
 */
static int store_one(struct devdb *db, const struct store_item *it)
{
	int64_t dev_id, old_id = -1, same = -1;
	_cleanup_(freep) char *dircopy = it->parent ? NULL : strdup(it->path);
	const char *dir = dircopy && !it->id->block ? dirname(dircopy) : NULL;
	const struct devdb_ident *id = it->id;
	int r = store_device(db, it, &dev_id);

	if (r == 0)
		r = db_run(db, "SELECT device_id FROM paths WHERE path=?1 AND device_id=?2 AND "
			       "parent IS ?3 AND present=1 AND block=?4 AND dev=?5 AND ino=?6 AND "
			       "size=?7 AND mtime_ns=?8 AND diskseq=?9",
			   "sisiiiiii", &same, it->path, dev_id, it->parent, (int64_t)id->block,
			   (int64_t)id->dev, (int64_t)id->ino, (int64_t)id->size, id->mtime_ns,
			   (int64_t)id->diskseq);
	if (r == 0 && same < 0)
		r = db_run(db, "SELECT device_id FROM paths WHERE path=?1", "s", &old_id, it->path);
	if (r == 0 && same < 0)
		r = db_run(db, "INSERT OR REPLACE INTO paths(path, device_id, parent, dir, present, "
			       "block, dev, ino, size, mtime_ns, diskseq) "
			       "VALUES(?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9, ?10)",
			   "sissiiiiii", NULL, it->path, dev_id, it->parent, dir, (int64_t)id->block,
			   (int64_t)id->dev, (int64_t)id->ino, (int64_t)id->size, id->mtime_ns,
			   (int64_t)id->diskseq);
	if (r == 0 && old_id >= 0 && old_id != dev_id)
		r = drop_if_orphan(db, old_id);
	if (r == 0)
		r = store_tags(db, dev_id, it->tags);
	return r;
}

/* Partition paths of parent that the new table no longer has. */
static int drop_stale_parts(struct devdb *db, const char *parent, const struct devdb_probe_result *res)
{
	sqlite3_stmt *s;
	int64_t any;
	int r = db_run(db, "SELECT 1 FROM paths WHERE parent=?1 LIMIT 1", "s", &any, parent);

	if (r < 0 || any < 0)
		return r;       /* the common case: never had partitions */
	if (sqlite3_prepare_v2(db->sql, "SELECT path, device_id FROM paths WHERE parent=?1", -1, &s,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(s, 1, parent, -1, SQLITE_STATIC);
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(s, 0);
		int64_t id = sqlite3_column_int64(s, 1);
		bool keep = false;
		char name[4096];

		for (size_t i = 0; i < res->nparts && !keep; i++) {
			keep = snprintf(name, sizeof(name), "%s:p%u", parent, res->parts[i].number) <
				       (int)sizeof(name) && !strcmp(name, p);
		}
		if (!keep) {
			r = db_run(db, "DELETE FROM paths WHERE path=?1", "s", NULL, p);
			if (r == 0)
				r = drop_if_orphan(db, id);
		}
	}
	sqlite3_finalize(s);
	return r;
}

/* FNV-1a over s and its NUL: a field at a time, so "ab","c" != "a","bc". */
static uint64_t sum_str(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	} while (*s++);
	return h;
}

static uint64_t sum_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8) {
		h ^= v & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t sum_tags(uint64_t h, int status, const char *ambivalent,
			 const struct devdb_tags *tags)
{
	h = sum_u64(h, (uint64_t)status);
	h = sum_str(h, ambivalent ? ambivalent : "");
	for (size_t i = 0; i < tags->n; i++)
		h = sum_str(sum_str(h, tags->v[i].name), tags->v[i].value);
	return sum_u64(h, tags->n);
}

/*
 * Everything devdb_store() writes for a path, hashed: the identity, the
 * result and its partitions. A re-probe (scan --force) whose sum equals the
 * stored one has nothing to write and is answered with one query.
 */
static int64_t probe_sum(const struct devdb_ident *id, const struct devdb_probe_result *res,
			 size_t nparts)
{
	uint64_t h = sum_str(0xcbf29ce484222325ull, id->key);

	h = sum_tags(sum_u64(h, id->size), (int)res->status, res->ambivalent, &res->tags);
	for (size_t i = 0; i < nparts; i++) {
		const struct devdb_part *p = &res->parts[i];

		h = sum_u64(sum_u64(sum_u64(h, p->number), p->offset), p->size);
		h = sum_tags(h, (int)p->status, p->ambivalent, &p->tags);
	}
	return (int64_t)sum_u64(h, nparts);
}

int devdb_store(struct devdb *db, const char *path, const struct devdb_ident *id,
		const struct devdb_probe_result *res)
{
	struct store_item it = {
		.path = path, .kind = id->block ? "block" : "file", .id = id, .tags = &res->tags,
		.size = id->size, .status = (int)res->status, .ambivalent = res->ambivalent,
	};
	/* the kernel's partition devices (sda1) are probed as devices of their
	 * own; "sda:p1" as well would report every filesystem on them twice */
	size_t nparts = devdb_block_has_partitions(id) ? 0 : res->nparts;
	int64_t sum = probe_sum(id, res, nparts), same = -1;
	int r = db_run(db, "SELECT 1 FROM paths WHERE path=?1 AND parent IS NULL AND present=1 AND "
			   "block=?2 AND dev=?3 AND ino=?4 AND size=?5 AND mtime_ns=?6 AND "
			   "diskseq=?7 AND probe_sum=?8",
		       "siiiiiii", &same, path, (int64_t)id->block, (int64_t)id->dev,
		       (int64_t)id->ino, (int64_t)id->size, id->mtime_ns, (int64_t)id->diskseq, sum);

	if (r < 0 || same >= 0)
		return r;
	r = store_one(db, &it);
	for (size_t i = 0; r == 0 && i < nparts; i++) {
		const struct devdb_part *p = &res->parts[i];
		struct devdb_ident pid = *id;
		char name[4096];

		if (snprintf(name, sizeof(name), "%s:p%u", path, p->number) >= (int)sizeof(name) ||
		    snprintf(pid.key, sizeof(pid.key), "%s:p%u", id->key, p->number) >= (int)sizeof(pid.key))
			return -ENAMETOOLONG;
		it = (struct store_item){ .path = name, .parent = path, .kind = "partition",
			.id = &pid, .tags = &p->tags, .size = p->size, .status = (int)p->status,
			.ambivalent = p->ambivalent };
		r = store_one(db, &it);
	}
	if (r == 0)
		r = drop_stale_parts(db, path, res);
	if (r == 0)
		r = db_run(db, "UPDATE paths SET probe_sum=?2 WHERE path=?1", "si", NULL, path, sum);
	return r;
}

int devdb_stored_ident(struct devdb *db, const char *path, struct devdb_ident *ret, bool *ret_present)
{
	sqlite3_stmt *s = devdb_stmt(db, STMT_PATH_GET);
	int rc;

	if (!s)
		return -EIO;
	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : devdb_sql_errno(rc);
	memset(ret, 0, sizeof(*ret));
	ret->block = sqlite3_column_int64(s, 0);
	ret->dev = (uint64_t)sqlite3_column_int64(s, 1);
	ret->ino = (uint64_t)sqlite3_column_int64(s, 2);
	ret->size = (uint64_t)sqlite3_column_int64(s, 3);
	ret->mtime_ns = sqlite3_column_int64(s, 4);
	ret->diskseq = (uint64_t)sqlite3_column_int64(s, 5);
	*ret_present = sqlite3_column_int64(s, 6);
	return 1;
}

int devdb_mark_absent(struct devdb *db, const char *path)
{
	int r = db_run(db, "UPDATE paths SET present=0 WHERE path=?1 OR parent=?1", "s", NULL, path);

	if (r == 0 && sqlite3_changes(db->sql) == 0)
		return -ENOENT;
	if (r == 0)
		r = db_run(db, "UPDATE devices SET present=0 WHERE present=1 AND kind != 'remote' AND "
			       "NOT EXISTS (SELECT 1 FROM paths WHERE device_id=devices.id AND present=1)",
			   "", NULL);
	return r;
}

int devdb_register(struct devdb *db, const char *uri, const struct devdb_tags *tags)
{
	char key[4096];
	int64_t id;
	int r;

	if (!strstr(uri, "://"))
		return -EINVAL;
	snprintf(key, sizeof(key), "r:%s", uri);
	r = devdb_exec(db, "BEGIN IMMEDIATE");
	if (r < 0)
		return r;
	r = db_run(db, "INSERT INTO devices(ident, kind, connect, present) VALUES(?1, 'remote', ?2, 0) "
		       "ON CONFLICT(ident) DO UPDATE SET connect=excluded.connect RETURNING id",
		   "ss", &id, key, uri);
	if (r == 0)
		r = db_run(db, "INSERT OR REPLACE INTO paths(path, device_id, present) VALUES(?1, ?2, 0)",
			   "si", NULL, uri, id);
	if (r == 0)
		r = store_tags(db, id, tags);
	devdb_exec(db, r == 0 ? "COMMIT" : "ROLLBACK");
	return r;
}

int devdb_forget(struct devdb *db, const char *path)
{
	int64_t id;
	int r = devdb_exec(db, "BEGIN IMMEDIATE");

	if (r < 0)
		return r;
	r = db_run(db, "SELECT device_id FROM paths WHERE path=?1", "s", &id, path);
	if (r == 0 && id < 0)
		r = -ENOENT;
	if (r == 0)
		r = db_run(db, "DELETE FROM tags WHERE device_id IN (SELECT device_id FROM paths "
			       "WHERE parent IN (SELECT path FROM paths WHERE device_id=?1))", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM devices WHERE id IN (SELECT device_id FROM paths WHERE "
			       "parent IN (SELECT path FROM paths WHERE device_id=?1))", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM paths WHERE parent IN (SELECT path FROM paths WHERE "
			       "device_id=?1)", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM tags WHERE device_id=?1", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM paths WHERE device_id=?1", "i", NULL, id);
	if (r == 0)
		r = db_run(db, "DELETE FROM devices WHERE id=?1", "i", NULL, id);
	devdb_exec(db, r == 0 ? "COMMIT" : "ROLLBACK");
	return r;
}

int devdb_add_synthetic(struct devdb *db, const char *prefix, uint64_t n)
{
	sqlite3_stmt *d = NULL, *p = NULL, *t = NULL;
	int r = devdb_exec(db, "BEGIN IMMEDIATE");

	if (r < 0)
		return r;
	if (sqlite3_prepare_v2(db->sql, "INSERT INTO devices(ident, kind, present) VALUES(?1, 'file', 1)",
			       -1, &d, NULL) ||
	    sqlite3_prepare_v2(db->sql, "INSERT INTO paths(path, device_id, present, ino) VALUES(?1, ?2, 1, ?3)",
			       -1, &p, NULL) ||
	    sqlite3_prepare_v2(db->sql, "INSERT INTO tags(name, value, device_id) VALUES(?1, ?2, ?3)",
			       -1, &t, NULL))
		r = -EIO;
	for (uint64_t i = 0; r == 0 && i < n; i++) {
		char path[4096], val[64];
		int64_t id;

		snprintf(path, sizeof(path), "%s%llu", prefix, (unsigned long long)i);
		sqlite3_bind_text(d, 1, path, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(d) != SQLITE_DONE) {
			r = devdb_sql_errno(sqlite3_errcode(db->sql));
			break;
		}
		sqlite3_reset(d);
		id = sqlite3_last_insert_rowid(db->sql);
		sqlite3_bind_text(p, 1, path, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(p, 2, id);
		sqlite3_bind_int64(p, 3, (int64_t)i);
		sqlite3_step(p);
		sqlite3_reset(p);
		for (int k = 0; k < 3; k++) {
			static const char *const names[] = { "LABEL", "UUID", "TYPE" };

			if (k == 0)
				snprintf(val, sizeof(val), "syn%llu", (unsigned long long)i);
			else if (k == 1)
				snprintf(val, sizeof(val), "%08llx-0000-4000-8000-%012llx",
					 (unsigned long long)(i * 2654435761u & 0xffffffff),
					 (unsigned long long)i);
			else
				snprintf(val, sizeof(val), "ext4");
			sqlite3_bind_text(t, 1, names[k], -1, SQLITE_STATIC);
			sqlite3_bind_text(t, 2, val, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(t, 3, id);
			sqlite3_step(t);
			sqlite3_reset(t);
		}
	}
	sqlite3_finalize(d);
	sqlite3_finalize(p);
	sqlite3_finalize(t);
	devdb_exec(db, r == 0 ? "COMMIT" : "ROLLBACK");
	return r;
}
