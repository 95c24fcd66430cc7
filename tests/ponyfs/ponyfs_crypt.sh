#!/usr/bin/env bash
# ponyfs_crypt.sh - encryption through a real FUSE mount and the kernel's
# caches: markers written as contents, names and a symlink target under a
# policy are nowhere in either member image of a mirrored volume after
# unmount (data and metadata regions, database and WAL included); a mount
# without the key lists no-key names, shows sizes,
# refuses open, create, mkdir and link into the directory with ENOKEY, and
# lets an administrator delete by no-key name; removing the key drops what
# the kernel cached (a file read a moment before no longer opens, a listing
# shows no-key names, not the cached plaintext ones), and a forced removal
# fails a descriptor kept open; rename and link across policies are EXDEV.
# The CLI and Linux's ioctls themselves: ponyfs_crypt_cli.sh.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" crypt
M=$T/m
require_fuse
require_cmd fusermount3
truncate -s 64M "$T/a.img" "$T/b.img"
"$PONY" mkfs --data mirror "$T/a.img" "$T/b.img" >/dev/null || fail "mkfs"
IMGS="$T/a.img $T/b.img"
head -c 64 /dev/urandom >"$T/key"

add_key() { "$PONY" crypt add-key "$M" <"$T/key"; }
enokey() {      # CMD...: fails, saying the key is not available
	if "$@" 2>"$T/err"; then fail "$* worked without the key"; fi
	grep -q "Required key not available" "$T/err" || fail "$*: $(cat "$T/err"), not ENOKEY"
}

pony_mount $IMGS
id=$(add_key) || fail "add-key"
[ ${#id} -eq 32 ] || fail "add-key printed '$id', not 32 hex digits"
mkdir "$M/enc"
"$PONY" crypt set-policy "$M/enc" "$id" || fail "set-policy"
for i in $(seq 1 2000); do printf 'PONYMARKERCONTENTS%05d' "$i"; done >"$T/data"
cp "$T/data" "$M/enc/ponymarkername" || fail "write under the policy"
ln -s ponymarkertarget/of/a/link "$M/enc/link"
mkdir "$M/enc/sub" && echo small >"$M/enc/sub/s"
echo PONYCONTROLMARKER >"$M/plain"
cmp "$T/data" "$M/enc/ponymarkername" || fail "read back under the key"
[ "$(readlink "$M/enc/link")" = ponymarkertarget/of/a/link ] || fail "readlink with the key"
pony_umount
# The control marker is found, so the search would see the others.
for img in $IMGS; do
	grep -qa PONYCONTROLMARKER "$img" || fail "the control marker is not in $img"
	for m in PONYMARKERCONTENTS ponymarkername ponymarkertarget; do
		! grep -qa "$m" "$img" || fail "$m is in $img in clear"
	done
done
"$PONY" fsck $IMGS >"$T/fsck.out" || fail "fsck (no key): $(cat "$T/fsck.out")"

# A mount without the key.
pony_mount $IMGS
ls "$M/enc" >"$T/names" || fail "ls without the key"
[ "$(wc -l <"$T/names")" -eq 3 ] || fail "listing without the key: $(cat "$T/names")"
! grep -q ponymarker "$T/names" || fail "a plaintext name without the key"
big=$(for n in $(cat "$T/names"); do [ -f "$M/enc/$n" ] && [ "$(stat -c %s "$M/enc/$n")" -gt 100 ] && echo "$n"; done)
[ -n "$big" ] || fail "no file of the right size under its no-key name"
[ "$(stat -c %s "$M/enc/$big")" -eq "$(stat -c %s "$T/data")" ] || fail "size not visible"
enokey cat "$M/enc/$big"
enokey touch "$M/enc/new"
enokey mkdir "$M/enc/newdir"
enokey ln "$M/plain" "$M/enc/hard"
enokey truncate -s 0 "$M/enc/$big"
[ ! -e "$M/enc/ponymarkername" ] || fail "the plaintext name resolves without the key"
rm "$M/enc/$big" || fail "rm by no-key name"
[ "$(ls "$M/enc" | wc -l)" -eq 2 ] || fail "rm by no-key name left $(ls "$M/enc")"

# The key again, then removed while the kernel caches the files.
id2=$(add_key) || fail "add-key again"
[ "$id2" = "$id" ] || fail "the same key gave $id2, then $id"
# Across policies (another directory, GCM contents) and from outside: EXDEV.
mkdir "$M/gcm"
"$PONY" crypt set-policy --contents aes-256-gcm "$M/gcm" "$id" || fail "set-policy gcm"
echo g >"$M/gcm/g" && [ "$(cat "$M/gcm/g")" = g ] || fail "a file under the gcm policy"
exdev() { python3 -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$@" 2>"$T/err" &&
	fail "rename $* worked"; grep -q "Invalid cross-device link" "$T/err" || fail "rename $*: $(cat "$T/err")"; }
exdev "$M/enc/sub/s" "$M/gcm/s"
exdev "$M/plain" "$M/enc/plain"
! ln "$M/enc/sub/s" "$M/gcm/hard" 2>"$T/err" || fail "link across policies worked"
grep -q "Invalid cross-device link" "$T/err" || fail "link across policies: $(cat "$T/err")"
cat "$M/enc/sub/s" >/dev/null || fail "read with the key back"
ls "$M/enc" | grep -qx sub || fail "plaintext names with the key back"
"$PONY" crypt remove-key "$M" "$id" >/dev/null || fail "remove-key"
[ "$("$PONY" crypt status "$M" "$id" | record_field STATUS)" = absent ] || fail "status after removal"
! cat "$M/enc/sub/s" 2>/dev/null || fail "a file read before the removal still opens"
! ls "$M/enc" | grep -qx sub || fail "the kernel still lists the plaintext name"

# Forced: a descriptor kept open fails from then on.
add_key >/dev/null
exec 3<"$M/enc/sub/s"
"$PONY" crypt remove-key "$M" "$id" >"$T/out" || fail "remove-key with a file open"
[ "$("$PONY" crypt status "$M" "$id" | record_field STATUS)" = "incompletely removed" ] ||
	fail "status with a file open: $("$PONY" crypt status "$M" "$id" | record_field STATUS)"
exec 3<&-
add_key >/dev/null
exec 3<"$M/enc/sub/s"
"$PONY" crypt remove-key --force "$M" "$id" >/dev/null || fail "remove-key --force"
[ "$("$PONY" crypt status "$M" "$id" | record_field STATUS)" = absent ] || fail "status after a forced removal"
# The same open file (not a new open): the kernel's cached pages were dropped too.
if head -c 1 <&3 >/dev/null 2>"$T/err"; then
	fail "a descriptor kept open still reads after a forced removal"
fi
grep -q "Required key not available" "$T/err" || fail "forced: $(cat "$T/err"), not ENOKEY"
exec 3<&-
pony_umount
"$PONY" fsck $IMGS >"$T/fsck.out" || fail "fsck at the end: $(cat "$T/fsck.out")"
echo "ok: nothing in clear on the image, no-key names and ENOKEY, removal through the kernel's caches"
