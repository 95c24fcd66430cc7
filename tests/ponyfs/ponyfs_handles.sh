#!/usr/bin/env bash
# ponyfs_handles.sh FH_HELPER - file handles on a ponyfs mount (fstests'
# generic/426, 467, 477, 756, 777): a handle made by name_to_handle_at opens
# with open_by_handle_at after the kernel forgot the inode (a remount),
# for files and directories; the handle of a removed file is ESTALE; an open
# file's handle still opens after its last name goes.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3
FH=${1:?usage: ponyfs_handles.sh FH_HELPER}
ESTALE=116

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-handles
M=$T/m
truncate -s 128M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
pony_mount "$T/img"

mkdir -p "$M/d/sub" && echo one >"$M/d/f" && echo two >"$M/gone" && echo three >"$M/open"
hf=$("$FH" encode "$M/d/f") || fail "name_to_handle_at of a file"
hd=$("$FH" encode "$M/d/sub") || fail "name_to_handle_at of a directory"
hr=$("$FH" encode "$M") || fail "name_to_handle_at of the root"
hg=$("$FH" encode "$M/gone") || fail "name_to_handle_at"
ho=$("$FH" encode "$M/open") || fail "name_to_handle_at"
touch "$M/d/sub/x"
rm "$M/gone"

# While the kernel still knows the inodes.
[ "$("$FH" open "$M" "$hf")" = one ] || fail "open_by_handle_at of a cached file"
# An open file whose name goes: its handle opens until the last close.
exec 9<"$M/open"
rm "$M/open"
echo 2 >/proc/sys/vm/drop_caches
[ "$("$FH" open "$M" "$ho")" = three ] || fail "the handle of an open unlinked file"
exec 9<&-

# After a remount the kernel knows nothing: every handle is looked up by id.
pony_umount
pony_mount "$T/img"
[ "$("$FH" open "$M" "$hf")" = one ] || fail "open_by_handle_at of a file after a remount"
[ "$("$FH" open "$M" "$hd")" = x ] || fail "open_by_handle_at of a directory after a remount"
"$FH" open "$M" "$hr" | grep -qx d || fail "open_by_handle_at of the root after a remount"
"$FH" open "$M" "$hg" >/dev/null 2>&1
r=$?
[ "$r" = "$ESTALE" ] || fail "a removed file's handle: status $r, not ESTALE"
"$FH" open "$M" "$ho" >/dev/null 2>&1
r=$?
[ "$r" = "$ESTALE" ] || fail "a closed unlinked file's handle: status $r, not ESTALE"
pony_umount
pass
