#!/usr/bin/env bash
# mount_stale.sh - a mount whose daemon was killed (kill -9: FUSE answers
# ENOTCONN, "Transport endpoint is not connected") is named as such by every
# pony command given a path on it, or given it as the mount point: "pony:
# MNT: stale mount: run umount first", exit 1, MNT the mount point even for
# a path below it or a relative one. Mounting on it again (pony mount,
# mount(8) with the fstab line, pony union mount) says the same and leaves
# the image as it was; after umount the fstab line mounts again and finds
# what was synced before the kill.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/cli/mount_lib.sh" mount-stale

IMG=$T/one.img
M=$T/m
truncate -s 128M "$IMG"
"$PONY" mkfs "$IMG" >/dev/null || fail "mkfs"
fstab "$IMG $M fuse.pony defaults 0 0"
mount -T "$T/fstab" "$M" || fail "mount by the fstab line"
mkdir "$M/dir" && echo kept > "$M/dir/file" && "$PONY" sync "$M" || fail "write and sync"
pid=$(daemon_of "$M") || fail "no daemon found for $M"
kill -9 "$pid"
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
stat "$M" 2>&1 | grep -q "Transport endpoint is not connected" || fail "$M is not dead: $(stat "$M" 2>&1)"
sum=$(md5sum < "$IMG")

# stale CMD...: exits 1 saying "pony: $M: stale mount: run umount first", and nothing else.
stale() {
	local out rc
	out=$("$@" 2>&1); rc=$?
	[ "$rc" -eq 1 ] || fail "'$*' exited $rc, expected 1: $out"
	[ "$out" = "pony: $M: stale mount: run umount first" ] || fail "'$*' said: $out"
	return 0
}
stale "$PONY" sync "$M"
stale "$PONY" sync "$M/dir/file"
stale "$PONY" barrier "$M/dir/file"
stale "$PONY" stat "$M/dir"
stale "$PONY" stat --counters "$M"
stale "$PONY" fs syncfs "$M"
stale "$PONY" fs statx "$M/dir"
stale "$PONY" fs requests "$M"
stale "$PONY" fs layout "$M/dir/file"
stale "$PONY" fs cat "$M/dir/file"
stale "$PONY" fs scrub status "$M"
stale "$PONY" fs resolve "$M" 0
stale "$PONY" fs badblocks "$M"
stale "$PONY" crypt status "$M" 00112233445566778899aabbccddeeff
stale "$PONY" crypt get-policy "$M/dir"
(cd "$T" && stale "$PONY" sync m/dir/../dir) || exit 1
stale "$PONY" mount "$IMG" "$M"
stale "$PONY" union mount --lower "$T" "$M"
stale "$PONY" fs mount-host "$T" "$M"
out=$(mount -T "$T/fstab" "$M" 2>&1) && fail "mount(8) on the dead mount succeeded"
echo "$out" | grep -q "$M: stale mount: run umount first" || fail "mount(8) on the dead mount said: $out"
[ "$(md5sum < "$IMG")" = "$sum" ] || fail "a refused mount changed the image"

umount "$M" || fail "umount of the dead mount"
mount -T "$T/fstab" "$M" || fail "mount after umount"
[ "$(cat "$M/dir/file")" = kept ] || fail "the synced file is gone"
unmount "$M"
pass
