/*
 * uuid.c - the UUIDs pony makes for its own objects (volumes, members,
 * spares, ponyfs filesystems, md arrays it creates): RFC 4122 version 4,
 * variant 1, from libuuid, as mkfs.ext4 and mdadm make theirs. Sixteen
 * random bytes alone read as "version f" to blkid, udev and systemd, which
 * print and compare such UUIDs but trust the version nibble to say how one
 * was made.
 */
#include <uuid/uuid.h>

#include "pony/util.h"

void util_uuid_generate(uint8_t uuid[16])
{
	/* libuuid reads getrandom() and sets the version and variant bits. */
	uuid_generate_random(uuid);
}
