#!/usr/bin/env bash
# layout_member_identity.sh - a direct client opens each member by the name
# the mount gives, and a name can lead elsewhere by then. Here one member's
# path is made to lead to an image of another volume (moved over it while
# the daemon keeps its own descriptor): `pony fs cat --direct` must not
# read it as the member (it warns, rebuilds that member's blocks from the
# others, and returns the file's bytes), and `pony fs put --direct` must
# refuse to write (EXDEV) and leave the other volume's image as it was. A
# clone of a layout (layout_read_check) reads the members its origin
# opened and checked, even when a name leads nowhere by then.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
CHECK=$1

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-identity

volume_images raid6 6 64M
pony_mount "${imgs[@]}"
head -c 5000000 /dev/urandom >"$T/file"
cp "$T/file" "$T/m/file"
"$PONY" sync "$T/m" || fail "pony sync"

# A clone of a layout opens the files its origin checked, not their names
# again: m2's path moved away while the clone is made, it still reads m2.
"$CHECK" "$T/m/file" 1 "$T/m2.img" "$T/m2.away" ||
	fail "a clone made while a member's path led nowhere did not read that member"

# An image of another volume, made the same way, in m2's place.
mkdir -p "$T/other"
for i in 0 1 2 3 4 5; do truncate -s 64M "$T/other/o$i.img"; done
"$PONY" mkfs --data raid6 "$T"/other/o?.img >/dev/null || fail "mkfs of the other volume"
cp "$T/other/o2.img" "$T/o2.before"
mv "$T/m2.img" "$T/m2.moved"
mv "$T/other/o2.img" "$T/m2.img"

"$PONY" fs cat --direct --stats "$T/m/file" >"$T/got" 2>"$T/err" ||
	fail "cat --direct with a member's path leading elsewhere: $(cat "$T/err")"
cmp "$T/got" "$T/file" || fail "cat --direct returned other bytes than the file's"
grep -q "1 member(s) not read" "$T/err" || fail "no warning of the member not read: $(cat "$T/err")"
grep -q " 0 blocks rebuilt" "$T/err" && fail "the member's blocks were not rebuilt: $(cat "$T/err")"

head -c 300000 /dev/urandom >"$T/new"
"$PONY" fs put --direct "$T/new" "$T/m/new" 2>"$T/err" &&
	fail "put --direct wrote with a member's path leading to another volume's image"
grep -q "another member's superblock" "$T/err" || fail "put --direct: unclear error: $(cat "$T/err")"
cmp "$T/m2.img" "$T/o2.before" || fail "put --direct changed the other volume's image"

# The name back: the direct reader reads every member again, no warning.
mv "$T/m2.img" "$T/other/o2.img"
mv "$T/m2.moved" "$T/m2.img"
"$PONY" fs cat --direct --stats "$T/m/file" 2>"$T/err" | cmp - "$T/file" ||
	fail "cat --direct with every member back"
grep -q "not read" "$T/err" && fail "a warning with every member right: $(cat "$T/err")"
grep -q " 0 blocks rebuilt" "$T/err" || fail "blocks rebuilt with every member right: $(cat "$T/err")"
pony_umount
pass
