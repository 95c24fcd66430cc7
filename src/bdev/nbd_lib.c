/*
 * nbd_lib.c - libnbd loaded with dlopen() on the first NBD device opened,
 * its functions looked up into one table (nbd_lib.h says why it is not
 * linked). Loaded once and never unloaded: devices opened later, and
 * their poll threads, use the same table.
 */
#define NBD_LIB_NO_REDIRECT
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "nbd_lib.h"

#define NBD_LIB_SONAME "libnbd.so.0"

struct nbd_lib nbd_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];            /* empty: loaded */

static void load(void)
{
	void *h = dlopen(NBD_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(load_error, sizeof(load_error), "cannot load %s (libnbd0): %s",
			 NBD_LIB_SONAME, dlerror());
		return;
	}
#define NBD_LIB_LOOKUP(name)                                                            \
	if (!load_error[0] && !(nbd_lib.name = (__typeof__(nbd_lib.name))dlsym(h, "nbd_" #name))) \
		snprintf(load_error, sizeof(load_error), "%s lacks nbd_%s", NBD_LIB_SONAME, #name);
	NBD_LIB_FUNCTIONS(NBD_LIB_LOOKUP)
#undef NBD_LIB_LOOKUP
}

int nbd_lib_load(char *why, size_t why_size)
{
	pthread_once(&load_once, load);
	if (!load_error[0])
		return 0;
	if (why && why_size)
		snprintf(why, why_size, "%s", load_error);
	return -ENOSYS;
}
