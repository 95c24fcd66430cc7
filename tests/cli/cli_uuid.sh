#!/usr/bin/env bash
# cli_uuid.sh - the UUIDs pony makes for what it creates are RFC 4122
# version 4, variant 1 (libuuid), as mkfs.ext4's and mdadm's are: a ponyfs's,
# a volume's and each member's, a hot spare's, a member put in for a failed
# one, and an md array's made by vol create --md. Sixteen random bytes alone
# would read as any version (e3b11ed9-17dc-fed9-...: version f).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
workdir uuid

# check_v4 WHAT UUID: the version nibble (13th hex digit) is 4 and the
# variant (17th) is 8, 9, a or b (binary 10xx).
checked=0
check_v4() {
	[[ $2 =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] ||
		fail "$1: '$2' is not an RFC 4122 version 4, variant 1 UUID"
	checked=$((checked + 1))
}
# tag FILE NAME: NAME's value as pony dev probe (blkid -p's fields) reads it.
tag() { "$PONY" dev probe -o export "$1" | sed -n "s/^$2=//p"; }

cd "$T"
truncate -s 64M one.img v0.img v1.img v2.img v3.img r0.img r1.img spare.img new.img md0.img md1.img

"$PONY" mkfs one.img >/dev/null || fail "mkfs one.img exited $?"
check_v4 "mkfs on one image: the ponyfs UUID" "$(tag one.img UUID)"

"$PONY" mkfs --assume-clean v0.img v1.img v2.img v3.img >/dev/null || fail "mkfs of four exited $?"
check_v4 "mkfs on four images: the volume UUID" "$(tag v0.img UUID)"
for i in 0 1 2 3; do check_v4 "mkfs member $i" "$(tag v$i.img UUID_SUB)"; done

"$PONY" vol create -l raid1 --assume-clean r0.img r1.img >/dev/null || fail "vol create exited $?"
check_v4 "vol create: the volume UUID" "$(tag r0.img UUID)"
check_v4 "vol create: member 0" "$(tag r0.img UUID_SUB)"
check_v4 "vol create: member 1" "$(tag r1.img UUID_SUB)"
# Two volumes never share a UUID (random, not derived from anything given).
[ "$(tag r0.img UUID)" != "$(tag v0.img UUID)" ] || fail "two volumes got one UUID"

"$PONY" vol fail -m 1 r0.img r1.img >/dev/null 2>&1 || fail "vol fail exited $?"
"$PONY" vol add -d new.img r0.img r1.img >/dev/null 2>&1 || fail "vol add for a failed member exited $?"
check_v4 "vol add for a failed member: its new UUID" "$(tag new.img UUID_SUB)"
[ "$(tag new.img UUID_SUB)" != "$(tag r1.img UUID_SUB)" ] || fail "the new member kept the old one's UUID"
"$PONY" vol add -d spare.img r0.img new.img >/dev/null 2>&1 || fail "vol add of a spare exited $?"
check_v4 "vol add: the hot spare" "$(tag spare.img UUID_SUB)"

"$PONY" vol create -l raid1 --md md0.img md1.img >/dev/null || fail "vol create --md exited $?"
check_v4 "vol create --md: the array UUID" "$(tag md0.img UUID)"
check_v4 "vol create --md: member 0" "$(tag md0.img UUID_SUB)"

[ "$checked" -eq 13 ] || fail "checked $checked UUIDs, expected 13"
pass
