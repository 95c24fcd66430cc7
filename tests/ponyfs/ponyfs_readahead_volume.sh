#!/usr/bin/env bash
# ponyfs_readahead_volume.sh - the read-ahead reaches the members of a
# volume (src/volume/readahead.c): on a mirror of two images and a RAID6 of
# six, after the first 2 MiB of a 96 MiB file whose blocks were in no
# host cache, 26 MiB or more of the members are (the hints stopped at the
# volume before: the members' own readahead brought 1.5-9 MiB; the window
# is 32 MiB ahead of the reader, less what was read, which a stream drops
# behind it: readahead.c, ponyfs_read_dropbehind.sh). The hints
# serve no byte: a block corrupted inside the window on the mirror's first
# copy is still caught by its checksum and repaired from the second.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-readahead-volume
readahead_require

head -c $((96 << 20)) /dev/urandom >"$T/data"

for level in mirror raid6; do
	# Made in sync: a resync at mount would read the members itself.
	if [ $level = mirror ]; then volume_images mirror 2 160M --assume-clean
	else volume_images raid6 6 64M --assume-clean; fi
	readahead_probe 2 $((26 << 20)) "${imgs[@]}"
	before=$ra_before after=$ra_after
	echo "# $level: members cached: $before B after mounting, $after B after reading 2 MiB"
	[ $((after - before)) -ge $((26 << 20)) ] ||
		fail "$level: only $((after - before)) B of the members cached after a 2 MiB read"
	cmp "$T/data" "$T/m/f" || fail "$level: the file reads back different"
	pony_umount
done

# A bad block inside the window of the mirror: caught, repaired, reported.
volume_images mirror 2 160M --assume-clean
pony_mount "${imgs[@]}"
dd if="$T/data" of="$T/m/f" bs=1M conv=fsync status=none || fail "write (repair)"
pony_umount
corrupt_file_block "$T/data" "${imgs[0]}" || fail "file block 3072 not found on the first copy"
images_uncache "${imgs[@]}"
: >"$T/pony.log"
pony_mount "${imgs[@]}"
cmp "$T/data" "$T/m/f" || fail "the corrupt block read back as data"
pony_umount
grep -q "failed its checksum: repaired member" "$T/pony.log" ||
	fail "no repair reported: $(cat "$T/pony.log")"
pass
