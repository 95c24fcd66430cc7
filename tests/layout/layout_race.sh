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

volume_images raid6 6 64M
pony_mount --commit 50 --layout-lease 1 "${imgs[@]}"
"$RACE" "$T/m" 15 >"$T/race.out" 2>&1 || fail "layout_race: $(cat "$T/race.out")"
cat "$T/race.out"
pony_umount
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" 2>&1 || fail "fsck after the race: $(cat "$T/fsck.out")"
pass
