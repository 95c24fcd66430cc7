#!/usr/bin/env bash
# mount_fstab_image.sh - a one-image ponyfs through the real mount(8) and
# a real fstab line: `mount -T FSTAB MNT` mounts it by the line alone, with
# the line's options (noatime reaches the mount; mount(8)'s nofail and x-*
# are dropped, not refused); /proc/mounts says source IMG, type fuse.pony;
# what was written is read back after umount and a mount by `mount --fstab`;
# `mount -t fuse.pony IMG MNT -o ro` is read-only; -o subtype= gives the
# plain type fuse that fstests' FSTYP=fuse looks for.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/cli/mount_lib.sh" mount-image

IMG=$T/one.img
truncate -s 128M "$IMG"
"$PONY" mkfs "$IMG" >/dev/null || fail "mkfs"
fstab "# pony's one-image ponyfs" \
	"$IMG $T/m fuse.pony defaults,noatime,commit=100,nofail,x-systemd.automount 0 0"

mount -T "$T/fstab" "$T/m" || fail "mount -T FSTAB MNT (the line alone)"
mounted_as "$T/m" "$IMG" fuse.pony
findmnt -n -o OPTIONS --mountpoint "$T/m" | grep -qw noatime || fail "noatime is not on the mount"
head -c 300000 /dev/urandom > "$T/data"
cp "$T/data" "$T/m/data" && mkdir "$T/m/dir" || fail "write through the mount"
unmount "$T/m"

mount --fstab "$T/fstab" "$T/m" || fail "mount --fstab FSTAB MNT"
mounted_as "$T/m" "$IMG" fuse.pony
cmp -s "$T/data" "$T/m/data" || fail "the data differs after umount and mount"
[ -d "$T/m/dir" ] || fail "dir is gone after umount and mount"
unmount "$T/m"

mount -t fuse.pony "$IMG" "$T/m" -o ro || fail "mount -t fuse.pony IMG MNT -o ro"
mounted_as "$T/m" "$IMG" fuse.pony
touch "$T/m/new" 2>/dev/null && fail "a read-only mount took a new file"
cmp -s "$T/data" "$T/m/data" || fail "read on the read-only mount"
unmount "$T/m"

mount -t fuse.pony "$IMG" "$T/m" -o subtype= || fail "mount -o subtype="
mounted_as "$T/m" "$IMG" fuse
unmount "$T/m"
"$PONY" fsck "$IMG" >/dev/null || fail "fsck after the mounts"
pass
