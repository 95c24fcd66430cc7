#!/usr/bin/env bash
# ponyfs_uuid.sh - `pony mount UUID=... MNT` finds the member images of a
# pony volume through devdb (pony dev scan indexes them; the volume member
# prober tags each with the volume's UUID and name): mount by UUID, write,
# remount by LABEL and read back, fsck by UUID; an unknown UUID or a
# missing database entry is a clear error.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-uuid
mkdir -p "$T/imgs"
export PONY_DEVDB=$T/devdb.sqlite

for i in 0 1 2 3; do truncate -s 96M "$T/imgs/m$i.img"; done
"$PONY" mkfs --data raid6 --label uuidtest --assume-clean "$T"/imgs/m{0,1,2,3}.img >/dev/null ||
	fail "mkfs"
# A second volume in the same directory: its members must not be picked up.
for i in 0 1; do truncate -s 96M "$T/imgs/o$i.img"; done
"$PONY" mkfs --data mirror --label other "$T"/imgs/o{0,1}.img >/dev/null || fail "mkfs other"
expect_failure "$PONY" mount --foreground UUID=0badc0de-0000-0000-0000-000000000000 "$T/m"
"$PONY" dev scan "$T/imgs" >/dev/null || fail "dev scan"
uuid=$("$PONY" dev probe "$T/imgs/m2.img" | sed -n 's/.* UUID="\([^"]*\)".*/\1/p')
[ -n "$uuid" ] || fail "no UUID probed"
other=$("$PONY" dev probe "$T/imgs/o0.img" | sed -n 's/.* UUID="\([^"]*\)".*/\1/p')
[ "$uuid" != "$other" ] || fail "two volumes share a UUID"

expect_failure "$PONY" mount --foreground UUID=0badc0de-0000-0000-0000-000000000000 "$T/m"
expect_failure "$PONY" fsck UUID=
pony_mount "UUID=$uuid"
grep -q "$T/m" /proc/mounts || fail "not mounted"
echo "found through devdb" >"$T/m/hello" || fail "write"
pony_umount
pony_mount "LABEL=uuidtest"
[ "$(cat "$T/m/hello")" = "found through devdb" ] || fail "remount by LABEL lost the file"
pony_umount
"$PONY" fsck "UUID=$uuid" >"$T/fsck.out" || fail "fsck by UUID: $(cat "$T/fsck.out")"
"$PONY" fsck "UUID=$other" >/dev/null || fail "fsck of the other volume by UUID"
pass
