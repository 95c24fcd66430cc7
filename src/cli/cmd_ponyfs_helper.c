/*
 * cmd_ponyfs_helper.c - ponyfs's side of a mount(8) mount (the helper's
 * command line is cmd_mount_helper.c's): this file sorts mount(8)'s options
 * into pony's and libfuse's, formats a blank image when asked (fstests
 * never runs mkfs for FSTYP=fuse, it only empties the scratch mount), and
 * makes a mount wait until the previous daemon of the same images has let
 * go of them: umount(8) of a FUSE mount returns before that daemon's last
 * commit. A second mount of an image a daemon serves becomes a bind mount
 * of the first, as a kernel filesystem shares its superblock between mounts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "mount_helper.h"
#include "pony/bdev.h"
#include "ponyfs.h"
#include "pony/fuse.h"
#include "pony/ponyfs.h"
#include "pony/util.h"

#define LOCK_WAIT_MS 60000
#define BLANK_BYTES (1u << 20)

static int add_fuse_opt(struct mount_opts *m, const char *o)
{
	size_t used = strlen(m->fuse), len = strlen(o);

	if (used + len + 2 > sizeof(m->fuse))
		return cli_usage_error("pony mount", "too many -o options");
	if (used)
		m->fuse[used++] = ',';
	memcpy(m->fuse + used, o, len + 1);
	return 0;
}

int cli_ponyfs_mount_opts(const char *list, struct ponyfs_options *po,
			  struct ponyfuse_options *fo, struct mount_opts *m)
{
	_cleanup_(freep) char *copy = strdup(list);
	char *save = NULL;
	int r = 0;

	if (!copy)
		return cli_error("out of memory");
	for (char *o = strtok_r(copy, ",", &save); o && !r; o = strtok_r(NULL, ",", &save)) {
		if (!strncmp(o, "commit=", 7)) {
			if (cli_parse_unsigned("pony mount", "-o commit", o + 7, 0, 3600000, &po->commit_ms))
				return CLI_EXIT_USAGE;
		} else if (!strncmp(o, "meta_cache=", 11)) {
			if (util_parse_size(o + 11, &po->meta_cache) < 0 || po->meta_cache < (64u << 10))
				return cli_usage_error("pony mount", "-o meta_cache: a size of at "
						       "least 64K (K, M, G suffixes)");
		} else if (!strcmp(o, "relatime")) {
			po->atime = PONYFS_ATIME_RELATIVE;      /* libfuse 3.14 does not know it */
		} else if (!strcmp(o, "strictatime")) {
			po->atime = PONYFS_ATIME_ALWAYS;        /* nor this */
		} else if (!strcmp(o, "nodiratime") || !strcmp(o, "diratime")) {
			po->nodiratime = o[0] == 'n';           /* nor these */
		} else if (!strncmp(o, "subtype=", 8)) {
			/* The type is fuse.pony; subtype= (empty) makes it plain
			 * "fuse", as fstests' FSTYP=fuse looks for it. */
			if (strlen(o + 8) >= sizeof(m->subtype))
				return cli_usage_error("pony mount", "-o subtype: too long");
			snprintf(m->subtype, sizeof(m->subtype), "%s", o + 8);
			fo->subtype = m->subtype;
		} else if (!strcmp(o, "no_io_uring")) {
			fo->io_uring = false;                   /* --no-io-uring, for fstab */
		} else if (!strcmp(o, "format")) {
			m->format = true;
		} else if (!strcmp(o, "format=foreign")) {
			m->format_foreign = true;
		} else if (!cli_mount_opt_is_bookkeeping(o)) {
			if (!strcmp(o, "remount"))
				m->remount = true;
			else if (!strcmp(o, "ro"))
				po->read_only = true;
			else if (!strcmp(o, "rw"))
				po->read_only = false;
			else if (!strcmp(o, "noatime"))
				po->atime = PONYFS_ATIME_NEVER; /* and the kernel's flag, for /proc/mounts */
			else if (!strcmp(o, "atime"))
				po->atime = PONYFS_ATIME_RELATIVE;
			r = add_fuse_opt(m, o);
		}
	}
	return r;
}

int cli_ponyfs_lock_images(char **paths, int n)
{
	if (n > 1 && cli_paths_distinct(paths, n))
		return CLI_EXIT_FAILURE;
	for (int i = 0; i < n; i++) {
		/* Never closed: the lock lasts as long as this process (and the
		 * daemon it forks into, which shares the open file). */
		int fd, waited = 0;

		if (cli_ponyfs_is_spec(paths[i]))
			continue;       /* stand_open() locks the members it names */
		if (bdev_name_is_nbd(paths[i]))
			continue;       /* the serving host's to guard */
		fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return cli_error("%s: %s", paths[i], strerror(errno));
		while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
				return cli_error("%s: in use by another pony (%s)", paths[i],
						 strerror(errno));
			usleep(20000);
			waited += 20;
		}
	}
	return 0;
}

/* Whether a mount's source names the image at path (the same file or device). */
static bool same_source(const char *source, const char *path, const struct stat *want)
{
	struct stat st;

	if (!strcmp(source, path))
		return true;
	if (stat(source, &st) < 0 || (st.st_mode & S_IFMT) != (want->st_mode & S_IFMT))
		return false;
	return S_ISBLK(st.st_mode) ? st.st_rdev == want->st_rdev
				   : st.st_dev == want->st_dev && st.st_ino == want->st_ino;
}

struct served {
	const char *path;
	const struct stat *want;
	char *ret;                      /* PATH_MAX */
};

static int served_at(const struct cli_mount *m, void *arg)
{
	struct served *sv = arg;

	if (strcmp(m->type, "fuse") && strcmp(m->type, "fuse.pony"))
		return 0;
	if (!same_source(m->source, sv->path, sv->want))
		return 0;
	snprintf(sv->ret, PATH_MAX, "%s", m->target);
	return 1;
}

/* Where a FUSE mount of the image at path is, in ret (PATH_MAX); -ENOENT: nowhere. */
static int find_mount(const char *path, char *ret)
{
	struct stat want;
	struct served sv = { .path = path, .want = &want, .ret = ret };

	if (stat(path, &want) < 0)
		return -ENOENT;
	return cli_mountinfo_foreach(served_at, &sv) ? 0 : -ENOENT;
}

int cli_ponyfs_bind_existing(const char *path, const char *mountpoint, bool read_only,
			     bool *ret_bound)
{
	char mnt[PATH_MAX];

	*ret_bound = false;
	if (find_mount(path, mnt) < 0)
		return 0;
	if (mount(mnt, mountpoint, NULL, MS_BIND, NULL) < 0)
		return cli_error("%s: served at %s, cannot bind it to %s: %s", path, mnt, mountpoint,
				 strerror(errno));
	if (read_only && mount(NULL, mountpoint, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0) {
		int e = errno;

		umount2(mountpoint, MNT_DETACH);
		return cli_error("%s: cannot make it read-only: %s", mountpoint, strerror(e));
	}
	*ret_bound = true;
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

/* A ponyfs superblock, or a pony volume member's (first or last 4 KiB). */
static bool is_pony(struct bdev *dev, const uint8_t *first, size_t n)
{
	uint8_t last[8];
	uint64_t end = bdev_size(dev) & ~(uint64_t)4095;

	if (n >= 8 && (!memcmp(first, "PONYFS1\0", 8) || !memcmp(first, "PONYVOL\0", 8)))
		return true;
	return end >= 4096 && bdev_pread(dev, last, sizeof(last), end - 4096) == 0 &&
	       !memcmp(last, "PONYVOL\0", 8);
}

int cli_ponyfs_format(const char *path, bool foreign)
{
	_cleanup_(bdev_freep) struct bdev *dev = NULL;
	_cleanup_(freep) uint8_t *buf = malloc(BLANK_BYTES);
	size_t n;
	int r = bdev_file_open(path, O_RDWR, &dev);

	if (r < 0)
		return cli_error("%s: %s", path, strerror(-r));
	if (!buf)
		return cli_error("out of memory");
	n = (size_t)MIN((uint64_t)BLANK_BYTES, bdev_size(dev));
	r = bdev_pread(dev, buf, n, 0);
	if (r < 0)
		return cli_error("%s: %s", path, strerror(-r));
	if (!all_zero(buf, n) && (!foreign || is_pony(dev, buf, n)))
		return 0;               /* a filesystem, or something else: mount decides */
	r = ponyfs_mkfs_image(dev, &(struct ponyfs_mkfs_options){ 0 });
	return r < 0 ? cli_error("%s: cannot format: %s", path, strerror(-r)) : 0;
}
