/*
 * ident.c - a path's identity, read with one stat: what decides whether the
 * tags stored for a device can be trusted without reading it again. Block
 * devices add their sysfs size, diskseq and WWN (the WWN makes several paths
 * to one multipath LUN one device). Also opening a path to probe it, so its
 * identity and its tags come from the same open file (probe.c itself knows
 * only a read call, which keeps the fuzz build free of sysfs).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "pony/util.h"

/* The first line of a sysfs attribute, or "" ; 0 or -errno. */
static int sysfs_read(const char *path, char *buf, size_t len)
{
	_cleanup_(fclosep) FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static void block_ident(const struct stat *st, struct devdb_ident *id)
{
	char sys[128], buf[128], wwid[96] = "";
	unsigned maj = major(st->st_rdev), min = minor(st->st_rdev);

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/size", maj, min);
	if (sysfs_read(sys, buf, sizeof(buf)) == 0)
		id->size = strtoull(buf, NULL, 10) * 512;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/diskseq", maj, min);
	if (sysfs_read(sys, buf, sizeof(buf)) == 0)
		id->diskseq = strtoull(buf, NULL, 10);
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/wwid", maj, min);
	if (sysfs_read(sys, wwid, sizeof(wwid)) < 0) {
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/device/wwid", maj, min);
		sysfs_read(sys, wwid, sizeof(wwid));
	}
	if (wwid[0])
		snprintf(id->key, sizeof(id->key), "b:%s", wwid);
	else
		snprintf(id->key, sizeof(id->key), "b:%u:%u", maj, min);
}

int devdb_ident_from_stat(const struct stat *st, struct devdb_ident *id)
{
	memset(id, 0, sizeof(*id));
	id->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	if (S_ISBLK(st->st_mode)) {
		id->block = true;
		id->dev = st->st_rdev;
		block_ident(st, id);
		return 0;
	}
	if (!S_ISREG(st->st_mode))
		return -ENOTBLK;
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = (uint64_t)st->st_size;
	snprintf(id->key, sizeof(id->key), "f:%llu:%llu", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
	return 0;
}

int devdb_ident_get(const char *path, struct devdb_ident *id)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return devdb_ident_from_stat(&st, id);
}

int devdb_probe_fd(int fd, const struct stat *st, const struct devdb_probe_opts *opts,
		   struct devdb_probe_result **ret)
{
	uint64_t size;
	int r;

	if (S_ISBLK(st->st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0)
			return -errno;
	} else if (S_ISREG(st->st_mode)) {
		size = (uint64_t)st->st_size;
	} else {
		return -ENOTBLK;
	}
	r = devdb_probe_fd_size(fd, size, opts, ret);
	if (r < 0 || !S_ISBLK(st->st_mode))
		return r;
	/* a kernel partition device (sda1) learns its entry from its disk */
	r = devdb_part_entry_tags(st, &(*ret)->tags);
	if (r < 0) {
		devdb_probe_result_free(*ret);
		*ret = NULL;
		return r;
	}
	if (r > 0 && (*ret)->status == DEVDB_PROBE_NONE)
		(*ret)->status = DEVDB_PROBE_FOUND;
	return 0;
}

int devdb_probe_path(const char *path, const struct devdb_probe_opts *opts,
		     struct devdb_probe_result **ret)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	return devdb_probe_fd(fd, &st, opts, ret);
}

int devdb_probe_ident(const char *path, struct devdb_ident *id, struct devdb_probe_result **ret)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	int r;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	r = devdb_ident_from_stat(&st, id);
	if (r < 0)
		return r;
	return devdb_probe_fd(fd, &st, NULL, ret);
}

bool devdb_ident_equal(const struct devdb_ident *a, const struct devdb_ident *b)
{
	/* a block device node's mtime moves when it is written through the
	 * node (mkfs /dev/sdb1), so it counts for block devices too */
	return a->block == b->block && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->diskseq == b->diskseq && a->mtime_ns == b->mtime_ns;
}

bool devdb_block_has_partitions(const struct devdb_ident *id)
{
	char sys[128], p[512];
	struct dirent *e;
	bool found = false;
	DIR *d;

	if (!id->block)
		return false;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(id->dev), minor(id->dev));
	d = opendir(sys);
	while (d && !found && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/partition", sys, e->d_name);
		found = stat(p, &st) == 0;
	}
	if (d)
		closedir(d);
	return found;
}
