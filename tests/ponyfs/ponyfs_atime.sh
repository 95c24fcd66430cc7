#!/usr/bin/env bash
# ponyfs_atime.sh - access times on ponyfs as the mount asks, with ext4 (on
# a loop device, same option) as the oracle (issue 19). Before, no read and
# no readdir ever moved atime on ponyfs, through any remount, though
# /proc/mounts said relatime. For relatime (the default), strictatime,
# noatime and nodiratime (alone and with strictatime: fstests' generic/003
# remounts with it, and the mount once refused it), the same steps on both: a read of a file whose atime is two days
# old, a second read a moment later, a listing of a directory, and whether
# the atimes survive a remount; each answer must be ext4's.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3 mkfs.ext4 losetup

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-atime
mkdir -p "$T/e"
trap 'mountpoint -q "$T/e" && umount "$T/e"; ponyfs_cleanup' EXIT

# steps DIR: makes f and d there with two-day-old atimes, then prints
# "read_moved second_read_moved ls_moved" (1 moved, 0 not).
steps() {
	local a0 a1 a2 d0 d1
	echo hello >"$1/f" && mkdir "$1/d" && touch "$1/d/x" || fail "setting up $1"
	touch -a -d "2 days ago" "$1/f" "$1/d" || fail "touch -a $1"
	a0=$(stat -c %X "$1/f")
	d0=$(stat -c %X "$1/d")
	cat "$1/f" >/dev/null
	a1=$(stat -c %X "$1/f")
	sleep 1.1
	cat "$1/f" >/dev/null
	a2=$(stat -c %X "$1/f")
	ls "$1/d" >/dev/null
	d1=$(stat -c %X "$1/d")
	echo "$((a1 > a0)) $((a2 > a1)) $((d1 > d0))"
}

for opt in relatime strictatime noatime nodiratime strictatime,nodiratime; do
	rm -rf "$T/img" "$T/ext4.img"
	truncate -s 64M "$T/ext4.img"
	mkfs.ext4 -q "$T/ext4.img" || fail "mkfs.ext4"
	mount -o "loop,$opt" "$T/ext4.img" "$T/e" || fail "mount ext4 -o $opt"
	want=$(steps "$T/e")
	umount "$T/e"

	truncate -s 128M "$T/img"
	"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
	pony_mount -o "$opt" "$T/img"
	got=$(steps "$T/m")
	before=$(stat -c '%X %X' "$T/m/f" "$T/m/d" | tr '\n' ' ')
	pony_umount
	pony_mount -o "$opt" "$T/img"
	after=$(stat -c '%X %X' "$T/m/f" "$T/m/d" | tr '\n' ' ')
	# A mount that only reads: under strictatime its unmount writes the
	# atime back first (this once started a commit timer on a freed fs).
	cat "$T/m/f" >/dev/null
	pony_umount

	[ "$got" = "$want" ] || fail "-o $opt: ponyfs moved atime as '$got', ext4 as '$want' (read, second read, ls)"
	[ "$before" = "$after" ] || fail "-o $opt: atimes $before became $after over a remount"
	echo "-o $opt: $got, as ext4"
done
pass
