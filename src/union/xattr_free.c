/*
 * xattr_free.c - a read-only union whose layers hold no xattr it would show
 * says so to the kernel once, and the kernel stops asking.
 *
 * podman's layer diff (containers/storage's naive diff, used whenever a
 * mount_program is set) walks the parent image through a read-only union
 * at every build step: per name a getxattr of security.capability and a
 * listxattr, two FUSE round trips the kernel never caches, which are most
 * of a step's time on a loaded machine. FUSE has one way to answer them
 * all at once: -ENOSYS to a GETXATTR (LISTXATTR) makes the kernel answer
 * every later getxattr (listxattr) on that mount EOPNOTSUPP itself, as for
 * a filesystem without xattrs. That is only true of a union that cannot
 * gain xattrs (no upper: nothing is written) and whose layers hold none it
 * shows (its own trusted.overlay.* or user.overlay.* markers are hidden
 * anyway). So on the first xattr query the daemon lists the xattrs of
 * every name in the layers on the host, without a round trip each (a few
 * microseconds a name), and answers -ENOSYS from then on if it found none.
 * One visible xattr anywhere, or any doubt (an unreadable directory, a
 * listing error), and every query is served as before. The lowers of a
 * mounted union do not change (overlayfs's rule), so the answer holds for
 * the mount's life.
 */
#include <errno.h>
#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "internal.h"
#include "pony/util.h"

/* Whether a host name's xattr list holds a name the union would show:
 * 1 yes, 0 no, -1 it cannot be listed. list: XATTR_LIST_MAX bytes. */
static int shows_xattrs(struct union_fs *u, const char *path, char *list)
{
	ssize_t n = llistxattr(path, list, XATTR_LIST_MAX);

	if (n < 0)
		return errno == ENOTSUP ? 0 : -1;
	for (char *p = list; p < list + n; p += strlen(p) + 1)
		if (!union_is_own_xattr(u, p))
			return 1;
	return 0;
}

/* Whether none of the layers' names holds a visible xattr. */
static bool layers_xattr_free(struct union_fs *u)
{
	_cleanup_(freep) char *list = malloc(XATTR_LIST_MAX);
	FTS *fts = list ? fts_open(u->layer_paths, FTS_PHYSICAL | FTS_NOSTAT | FTS_NOCHDIR,
				   NULL) : NULL;
	bool free_of = fts != NULL;

	while (free_of) {
		FTSENT *e;

		errno = 0;
		if (!(e = fts_read(fts))) {
			free_of = errno == 0;   /* the end, or an error */
			break;
		}
		if (e->fts_info == FTS_DP)
			continue;       /* a directory again, on the way out */
		free_of = e->fts_info != FTS_DNR && e->fts_info != FTS_ERR &&
			  shows_xattrs(u, e->fts_path, list) == 0;
	}
	if (fts)
		fts_close(fts);
	return free_of;
}

bool union_xattr_free(struct union_fs *u)
{
	int state = atomic_load(&u->xattr_free);

	if (state || !u->readonly)
		return state > 0;
	pthread_mutex_lock(&u->xattr_scan_lock);
	state = atomic_load(&u->xattr_free);
	if (!state) {
		state = layers_xattr_free(u) ? 1 : -1;
		atomic_store(&u->xattr_free, state);
	}
	pthread_mutex_unlock(&u->xattr_scan_lock);
	return state > 0;
}

int union_keep_layer_paths(struct union_fs *u, char (*paths)[PATH_MAX], unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!(u->layer_paths[i] = strdup(paths[i])))
			return -ENOMEM;
	return 0;
}

void union_free_layer_paths(struct union_fs *u)
{
	for (unsigned i = 0; u->layer_paths[i]; i++)
		free(u->layer_paths[i]);
}
