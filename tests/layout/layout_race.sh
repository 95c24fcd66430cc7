#!/usr/bin/env bash
# layout_race.sh - direct readers against a changing file, with leases
# (issue 21): a ponyfs on a RAID6 of six images, mounted with 1 s leases and
# a 50 ms commit timer (freed blocks go back to use at once); layout_race
# overwrites, truncates and regrows a file while another thread churns other
# files, and reads the file through libpony-layout over and over; every
# block read must be the file's own block of a generation written by then
# (1 s leases also expire mid-read under load: the reader's retries cover
# that). fsck then finds the held-and-released blocks all accounted for.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
RACE=${1:?usage: layout_race.sh LAYOUT_RACE}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-race

imgs=()
for i in 0 1 2 3 4 5; do
	truncate -s 64M "$T/m$i.img"
	imgs+=("$T/m$i.img")
done
"$PONY" mkfs --data raid6 "${imgs[@]}" >/dev/null || fail "mkfs --data raid6"
pony_mount --commit 50 --layout-lease 1 "${imgs[@]}"
"$RACE" "$T/m" 15 >"$T/race.out" 2>&1 || fail "layout_race: $(cat "$T/race.out")"
cat "$T/race.out"
pony_umount
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" 2>&1 || fail "fsck after the race: $(cat "$T/fsck.out")"
pass
