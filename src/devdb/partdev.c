/*
 * partdev.c - PART_ENTRY_* for the kernel's partition devices (sda1,
 * loop0p1). The partition itself holds no record of where it sits: as
 * libblkid does, the entry is read from the parent disk's table, found by
 * the start sector sysfs gives, and PART_ENTRY_DISK names the disk. So
 * `pony dev find PARTUUID=...` answers with /dev/sda1 as well as with
 * IMAGE:p1 for a partition of an image file.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"
#include "pony/util.h"

/* A sysfs file relative to dirfd, whole (NUL-terminated); 0 or -errno. */
static int sysfs_read_at(int dirfd, const char *name, char *buf, size_t len)
{
	_cleanup_(closep) int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Its first line only. */
static int sysfs_line(int dirfd, const char *name, char *buf, size_t len)
{
	int r = sysfs_read_at(dirfd, name, buf, len);

	if (r == 0)
		buf[strcspn(buf, "\n")] = '\0';
	return r;
}

/* /dev/DEVNAME of the device whose sysfs directory is dirfd. */
static int sysfs_devnode(int dirfd, char *node, size_t len)
{
	char ev[1024], *p;
	int r = sysfs_read_at(dirfd, "uevent", ev, sizeof(ev));

	if (r < 0)
		return r;
	p = strstr(ev, "DEVNAME=");
	if (!p)
		return -ENOENT;
	p += 8;
	p[strcspn(p, "\n")] = '\0';
	return snprintf(node, len, "/dev/%s", p) < (int)len ? 0 : -ENAMETOOLONG;
}

int devdb_part_entry_tags(const struct stat *st, struct devdb_tags *tags)
{
	char sys[64], buf[64], node[300], disk[64];
	_cleanup_(closep) int part = -1, parent = -1, fd = -1;
	unsigned maj, min, number;
	uint64_t start, size;
	struct stat pst;
	int r;

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st->st_rdev), minor(st->st_rdev));
	part = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (part < 0)
		return 0;
	if (sysfs_line(part, "partition", buf, sizeof(buf)) < 0)
		return 0;               /* a whole disk */
	number = (unsigned)strtoul(buf, NULL, 10);
	if (sysfs_line(part, "start", buf, sizeof(buf)) < 0)
		return 0;
	start = strtoull(buf, NULL, 10);
	/* the partition's sysfs directory sits inside its disk's */
	parent = openat(part, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0 || sysfs_line(parent, "dev", disk, sizeof(disk)) < 0 ||
	    sscanf(disk, "%u:%u", &maj, &min) != 2)
		return 0;
	if (sysfs_devnode(parent, node, sizeof(node)) < 0)
		return 0;
	fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &pst) < 0 || !S_ISBLK(pst.st_mode) ||
	    pst.st_rdev != makedev(maj, min) || ioctl(fd, BLKGETSIZE64, &size) < 0)
		return 0;               /* no node for the disk, or not that disk */
	r = devdb_probe_pt_entry(fd, size, start, number, tags);
	if (r <= 0)
		return r;
	return devdb_tags_add(tags, "PART_ENTRY_DISK", disk) < 0 ? -ENOMEM : 1;
}
