#!/usr/bin/env bash
# ponyfs_bad_input.sh - bad input through the pony binary and a real FUSE
# mount, each a clear error and never a broken filesystem: a truncated and
# a corrupt image are refused; a member of another volume is refused; a
# full filesystem says ENOSPC, stays usable and fsck-clean; a name over 255
# bytes is ENAMETOOLONG; a daemon killed mid-commit (kill -9 during a
# create storm) leaves a filesystem that mounts and checks clean.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-bad

# mount_refused WHAT PATTERN IMG...: the mount fails with a message saying PATTERN.
mount_refused() {
	local what=$1 pattern=$2
	shift 2
	"$PONY" mount --foreground "$@" "$T/m" 2>"$T/err" && fail "$what: mounted"
	mountpoint -q "$T/m" && fail "$what: left a mount"
	grep -q "pony: .*$pattern" "$T/err" || fail "$what: no clear message: $(cat "$T/err")"
}

# A truncated image (the metadata region cut short) and one with its
# database pages overwritten.
truncate -s 64M "$T/a.img"
"$PONY" mkfs "$T/a.img" >/dev/null || fail "mkfs"
cp "$T/a.img" "$T/short.img" && truncate -s 8K "$T/short.img"
mount_refused "truncated image" "corrupt or truncated" "$T/short.img"
cp "$T/a.img" "$T/junk.img"
dd if=/dev/urandom of="$T/junk.img" bs=4096 seek=1 count=8 conv=notrunc status=none
mount_refused "corrupt database" "corrupt or truncated" "$T/junk.img"
expect_failure "$PONY" fsck "$T/junk.img"

# A member of another volume among the images.
for i in 0 1 2 3; do truncate -s 64M "$T/v$i.img"; done
for i in 0 1; do truncate -s 64M "$T/w$i.img"; done
"$PONY" mkfs --data raid6 --assume-clean "$T"/v{0,1,2,3}.img >/dev/null || fail "mkfs v"
"$PONY" mkfs --data mirror "$T"/w{0,1}.img >/dev/null || fail "mkfs w"
mount_refused "a wrong member" "member of another pony volume" "$T"/v{0,1,2}.img "$T/w1.img"
expect_failure "$PONY" fsck "$T"/v{0,1,2}.img "$T/w1.img"

# A full filesystem: ENOSPC, still usable, fsck clean.
pony_mount "$T/a.img"
dd if=/dev/urandom of="$T/m/fill" bs=1M count=200 2>"$T/dd.err" && fail "200 MiB fit in 64 MiB"
grep -q "No space left on device" "$T/dd.err" || fail "not ENOSPC: $(cat "$T/dd.err")"
echo small >"$T/m/more" 2>/dev/null
sync -f "$T/m" 2>/dev/null
rm -f "$T/m/fill" || fail "rm of the filler"
echo after >"$T/m/after" || fail "no write after freeing space"
sync "$T/m/after"

# Names over 255 bytes.
long=$(printf 'n%.0s' $(seq 256))
touch "$T/m/$long" 2>"$T/err" && fail "a 256-byte name was created"
grep -q "File name too long" "$T/err" || fail "not ENAMETOOLONG: $(cat "$T/err")"
mkdir "$T/m/$long" 2>/dev/null && fail "a 256-byte directory name was created"
touch "$T/m/${long:1}" || fail "a 255-byte name was refused"
mv "$T/m/${long:1}" "$T/m/$long" 2>/dev/null && fail "renamed to a 256-byte name"
pony_umount
"$PONY" fsck "$T/a.img" >"$T/fsck.out" || fail "fsck after ENOSPC: $(cat "$T/fsck.out")"

# kill -9 in the middle of a create storm (commits every 50 ms): mounts,
# fsck is clean, and what was fsynced before is there.
pony_mount --commit 50 "$T/a.img"
echo durable >"$T/m/durable" && sync "$T/m/durable"
( for i in $(seq 1 5000); do echo "$i" >"$T/m/s$i" || break; done ) 2>/dev/null &
STORM=$!
sleep 0.5
kill -9 "$PONY_PID"
wait "$PONY_PID" 2>/dev/null
PONY_PID=
wait "$STORM" 2>/dev/null
umount -l "$T/m" 2>/dev/null || fusermount3 -uz "$T/m" 2>/dev/null
"$PONY" fsck "$T/a.img" >"$T/fsck.out" || fail "fsck after kill -9: $(cat "$T/fsck.out")"
pony_mount "$T/a.img"
[ "$(cat "$T/m/durable")" = durable ] || fail "fsynced file lost"
n=$(ls "$T/m" | grep -c '^s')
[ "$n" -gt 0 ] || fail "no file of the storm survived (commit timer)"
for f in "$T"/m/s*; do          # all old (empty) or all new, never torn
	c=$(cat "$f")
	[ -z "$c" ] || [ "$c" = "${f##*/s}" ] || fail "$f holds '$c' after the crash"
done
pony_umount
pass
