#!/usr/bin/env bash
# ponyfs_data_direct.sh - a mounted ponyfs writes file data from its own
# buffers to the image past the host's page cache (bdev_pwrite_direct): a
# 32 MiB file written with fsync leaves under 8 MiB of the image cached
# (the metadata's pages), where the copy through the host's cache left all
# 32 MiB; and the data reads back the same through a fresh mount.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3
require_cmd fincore

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-data-direct
dd if=/dev/zero of="$T/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null ||
	skip "$T is on a file system without O_DIRECT"
truncate -s 512M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
head -c $((32 << 20)) /dev/urandom >"$T/data"

# The image's bytes in the host's page cache.
cached() { fincore --bytes --noheadings --output RES "$T/img"; }
# Drops the image's pages from the host's cache (fadvise DONTNEED, whole file).
uncache() { dd if="$T/img" iflag=nocache count=0 status=none; }

pony_mount "$T/img"
uncache
dd if="$T/data" of="$T/m/f" bs=1M conv=fsync status=none || fail "write through the mount"
after_write=$(cached)
pony_umount
uncache
pony_mount "$T/img"
cmp "$T/data" "$T/m/f" || fail "the file reads back different after a remount"
pony_umount
echo "# image cached: $after_write B after a 32 MiB write + fsync"
[ "$after_write" -lt $((8 << 20)) ] || fail "the write left $after_write B of the image in the host's cache"
pass
