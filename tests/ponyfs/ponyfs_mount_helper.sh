#!/usr/bin/env bash
# ponyfs_mount_helper.sh - ponyfs mounted the way fstests mounts a FUSE
# filesystem (FSTYP=fuse, FUSE_SUBTYP=.pony): `mount -t fuse.pony IMG MNT -o
# OPTS` through the real mount(8) and mount.fuse3. The mount shows source IMG
# and, with -o subtype=, type plain fuse in /proc/mounts; -o format makes the filesystem on a
# blank image and leaves anything else alone; a remount straight after
# umount(8) finds everything (it waits for the old daemon's last commit);
# a remount commits first; a second mount of a served image binds the
# first; ro, commit= and bad options behave.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_root
require_fuse
for p in unshare mount.fuse3 findmnt; do
	command -v "$p" >/dev/null || skip "$p is missing"
done

# mount(8) runs mount.fuse3 with the standard PATH, so `pony` must be in
# /usr/local/sbin: a private mount namespace binds a directory holding it
# there, and the machine's own /usr/local/sbin stays untouched.
if [ -z "${PONY_HELPER_NS:-}" ]; then
	PONY_HELPER_NS=1 exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi

T=$(mktemp -d /tmp/pony-helper.XXXXXX)
M=$T/m
M2=$T/m2
cleanup() {
	mountpoint -q "$M" 2>/dev/null && umount "$M"
	mountpoint -q "$M2" 2>/dev/null && umount "$M2"
	umount /usr/local/sbin 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$M" "$M2" "$T/sbin"
ln -s "$(realpath "$PONY")" "$T/sbin/pony"
mount --bind "$T/sbin" /usr/local/sbin || skip "cannot bind over /usr/local/sbin"

IMG=$T/scratch.img
truncate -s 256M "$IMG"

# Source IMG, type fuse with no subtype (-o subtype=, as scripts/fstests.sh
# mounts): what fstests' _check_mounted_on wants.
mount -t fuse.pony "$IMG" "$M" -o format,commit=200,subtype= || fail "mount -t fuse.pony of a blank image"
read -r src type <<<"$(findmnt -n -o SOURCE,FSTYPE --mountpoint "$M")"
[ "$src" = "$IMG" ] || fail "source is '$src', expected $IMG"
[ "$type" = fuse ] || fail "type is '$type', expected fuse"
grep -q "^$IMG $M fuse " /proc/mounts || fail "/proc/mounts: $(grep "$M" /proc/mounts)"

# Remount straight after umount, several times: the new daemon waits for
# the old one to let go of the image, so no commit is lost or mixed.
for i in 1 2 3 4 5; do
	head -c $((i * 100000)) /dev/urandom > "$T/f$i"
	cp "$T/f$i" "$M/f$i" || fail "write f$i"
	mkdir "$M/d$i" || fail "mkdir d$i"
	umount "$M" || fail "umount $i"
	mount -t fuse.pony "$IMG" "$M" -o format || fail "remount $i"
	for j in $(seq 1 "$i"); do
		cmp -s "$T/f$j" "$M/f$j" || fail "f$j differs after remount $i"
		[ -d "$M/d$j" ] || fail "d$j is gone after remount $i"
	done
done
# A remount as fstests makes it (with the type, so mount.fuse3 finds pony)
# reaches pony too, which hands it back to the kernel: the same daemon,
# writes refused, then allowed again.
pid=$(pgrep -f "^pony $IMG $M" | head -1)
[ -n "$pid" ] || fail "no pony daemon for $IMG"
mount -t fuse.pony -o remount,ro "$IMG" "$M" || fail "remount,ro"
touch "$M/while-ro" 2>/dev/null && fail "wrote after remount,ro"
mount -t fuse.pony -o remount,rw "$IMG" "$M" || fail "remount,rw"
touch "$M/after-rw" || fail "no write after remount,rw"
[ "$(pgrep -f "^pony $IMG $M" | head -1)" = "$pid" ] || fail "remount started another daemon"
umount "$M"
"$PONY" fsck "$IMG" >"$T/fsck.out" || fail "fsck after the remounts: $(cat "$T/fsck.out")"

# A power cut with an open-unlinked file committed: the next (daemonized)
# mount deletes the orphan, and its daemon still exits at unmount, letting
# go of the image (it once hung there, and every later mount waited).
mount -t fuse.pony "$IMG" "$M" -o commit=100 || fail "mount before the orphan"
exec 4>"$M/orphan"
rm "$M/orphan" && echo x >&4 || fail "open-unlinked file"
"$PONY" sync "$M" || fail "pony sync"
"$PONY" shutdown "$M" || fail "pony shutdown"
exec 4>&-
umount "$M" || fail "umount after the shutdown"
mount -t fuse.pony "$IMG" "$M" || fail "mount after the shutdown"
touch "$M/after-cut" || fail "write after the shutdown"
sleep 0.3                               # a timer commit or two
umount "$M"
for _ in $(seq 1 100); do
	pgrep -f "^pony $IMG $M" >/dev/null || break
	sleep 0.1
done
pgrep -f "^pony $IMG $M" >/dev/null && fail "the daemon did not exit after unmount"
"$PONY" fsck "$IMG" >"$T/fsck.out" || fail "fsck after the orphan: $(cat "$T/fsck.out")"

# A remount commits first, as a kernel filesystem syncs there (generic/599):
# what came before `remount,ro` survives a power cut right after it.
mount -t fuse.pony "$IMG" "$M" -o commit=0 || fail "mount with commit=0"
mkdir "$M/before-ro" && echo data >"$M/before-ro/f" || fail "write before remount,ro"
mount -t fuse.pony -o remount,ro "$IMG" "$M" || fail "remount,ro after a write"
"$PONY" shutdown "$M" || fail "pony shutdown of a read-only mount"
umount "$M" || fail "umount after the cut"
mount -t fuse.pony "$IMG" "$M" || fail "mount after the cut"
[ "$(cat "$M/before-ro/f" 2>/dev/null)" = data ] || fail "remount,ro did not commit"

# A second mount of a served image is a bind mount of the first
# (generic/732): one daemon, one filesystem seen at both places.
mount -t fuse.pony "$IMG" "$M2" || fail "a second mount of the same image"
[ "$(findmnt -n -o SOURCE --mountpoint "$M2")" = "$IMG" ] || fail "second mount's source"
[ "$(pgrep -fc "^pony $IMG ")" = 1 ] || fail "a second daemon for $IMG"
touch "$M/one" && mv "$M2/one" "$M2/two" || fail "rename through the second mount"
[ -e "$M/two" ] && [ ! -e "$M/one" ] || fail "the first mount did not see the rename"
umount "$M"
[ -e "$M2/two" ] || fail "the second mount went with the first"
umount "$M2"
for _ in $(seq 1 100); do
	pgrep -f "^pony $IMG " >/dev/null || break
	sleep 0.1
done
"$PONY" fsck "$IMG" >"$T/fsck.out" || fail "fsck after two mounts: $(cat "$T/fsck.out")"

# ro reaches both FUSE and ponyfs.
mount -t fuse.pony "$IMG" "$M" -o ro || fail "mount -o ro"
findmnt -n -o OPTIONS --mountpoint "$M" | grep -qw ro || fail "not mounted ro"
touch "$M/new" 2>/dev/null && fail "a read-only mount took a new file"
cmp -s "$T/f5" "$M/f5" || fail "read on a read-only mount"
umount "$M"

# `pony mount` keeps its own ways: type fuse.pony.
"$PONY" mount "$IMG" "$M" || fail "pony mount"
[ "$(findmnt -n -o FSTYPE --mountpoint "$M")" = fuse.pony ] || fail "pony mount's type"
umount "$M"

# format never touches what is not blank; bad options are refused.
head -c 1048576 /dev/urandom > "$T/junk.img"
truncate -s 64M "$T/junk.img"
sum=$(md5sum < "$T/junk.img")
mount -t fuse.pony "$T/junk.img" "$M" -o format 2>/dev/null && fail "mounted a junk image"
[ "$(md5sum < "$T/junk.img")" = "$sum" ] || fail "format wrote over a non-blank image"
# format=foreign formats what is not pony's (a scratch device a test made a
# swap device of), never a damaged ponyfs.
mount -t fuse.pony "$T/junk.img" "$M" -o format=foreign || fail "format=foreign of junk"
umount "$M"
printf XXXXXXXX | dd of="$T/junk.img" bs=1 seek=16 conv=notrunc status=none   # bad crc
sum=$(md5sum < "$T/junk.img")
mount -t fuse.pony "$T/junk.img" "$M" -o format=foreign 2>/dev/null && fail "mounted a damaged ponyfs"
[ "$(md5sum < "$T/junk.img")" = "$sum" ] || fail "format=foreign wrote over a damaged ponyfs"
mount -t fuse.pony "$IMG" "$M" -o commit=soon 2>/dev/null && fail "took commit=soon"
mountpoint -q "$M" && fail "a refused mount left a mount behind"
expect_usage_error "$PONY" mount -o commit=soon "$IMG" "$M"
pass
