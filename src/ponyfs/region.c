/*
 * region.c - a ponyfs region of a pony volume as a bdev: the metadata or
 * data region the volume laid out for the filesystem (volume.h, "the
 * filesystem RAID API"), read and written through the volume, so mirrors
 * and parity stay in step, a checked read and a checksum repair reach the
 * volume's redundancy (bdev_read_checked(), bdev_repair()).
 */
#include "internal.h"
#include "pony/volume.h"

int ponyfs_volume_region(struct volume *v, int cls, struct bdev **ret)
{
	return volume_region_bdev(v, (enum volume_region_class)cls, ret);
}
