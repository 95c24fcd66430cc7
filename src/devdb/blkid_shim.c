/*
 * blkid_shim.c - libpony-blkid.so: libblkid's tag-to-device calls answered
 * from the device database, so `LD_PRELOAD=libpony-blkid.so findfs LABEL=x`
 * and `mount LABEL=x` resolve through the index instead of scanning every
 * device. Built into the shared library only (lib/meson.build), never into
 * libpony. Specs the database cannot answer (no database, no match) go to
 * the real libblkid, found with dlsym(RTLD_NEXT), so nothing that worked
 * before stops working. PONY_DEVDB chooses the database, as for pony.
 */
#include <blkid/blkid.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/devdb.h"

/* NAME=VALUE (or NAME and VALUE) as one spec; malloc'd, NULL on ENOMEM. */
static char *make_spec(const char *token, const char *value)
{
	char *s = NULL;

	if (!token)
		return NULL;
	if (!value)
		return strdup(token);
	return asprintf(&s, "%s=%s", token, value) < 0 ? NULL : s;
}

/* The path the index gives for spec, or NULL. */
static char *devdb_answer(const char *spec)
{
	struct devdb *db;
	char *path = NULL;

	if (!spec || !strchr(spec, '=') || spec[0] == '/')
		return NULL;
	if (devdb_open(NULL, 0, &db) < 0)
		return NULL;
	if (devdb_resolve_spec(db, spec, &path) < 0)
		path = NULL;
	devdb_close(db);
	return path;
}

char *blkid_evaluate_tag(const char *token, const char *value, blkid_cache *cache)
{
	char *(*real)(const char *, const char *, blkid_cache *);
	char *spec = make_spec(token, value);
	char *path = devdb_answer(spec);

	free(spec);
	if (path)
		return path;
	real = (char *(*)(const char *, const char *, blkid_cache *))dlsym(RTLD_NEXT, "blkid_evaluate_tag");
	return real ? real(token, value, cache) : NULL;
}

char *blkid_evaluate_spec(const char *spec, blkid_cache *cache)
{
	char *(*real)(const char *, blkid_cache *);
	char *path = devdb_answer(spec);

	if (path)
		return path;
	real = (char *(*)(const char *, blkid_cache *))dlsym(RTLD_NEXT, "blkid_evaluate_spec");
	return real ? real(spec, cache) : NULL;
}

char *blkid_get_devname(blkid_cache cache, const char *token, const char *value)
{
	char *(*real)(blkid_cache, const char *, const char *);
	char *spec = make_spec(token, value);
	char *path = devdb_answer(spec);

	free(spec);
	if (path)
		return path;
	real = (char *(*)(blkid_cache, const char *, const char *))dlsym(RTLD_NEXT, "blkid_get_devname");
	return real ? real(cache, token, value) : NULL;
}
