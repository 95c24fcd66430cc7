# tests/ponyfs/mount_lib.sh - what the ponyfs tests that mount through FUSE
# share: a scratch directory $T (/tmp/pony-NAME.XXXXXX) with a mount point
# $T/m, unmounted and removed on exit, and pony_mount/pony_umount around the
# pony binary (the daemon's stderr goes to $T/pony.log). Source it after
# tests/lib.sh: `. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" NAME`.

T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
PONY_PID=
ponyfs_cleanup() {
	mountpoint -q "$T/m" 2>/dev/null && { fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"; }
	[ -n "$PONY_PID" ] && { kill "$PONY_PID" 2>/dev/null; wait "$PONY_PID" 2>/dev/null; }
	rm -rf "$T"
}
trap ponyfs_cleanup EXIT
mkdir -p "$T/m"

# pony_mount [OPTION...] IMG...: mounts at $T/m in the foreground, in the background.
pony_mount() { fuse_daemon_start "$T/m" "$T/pony.log" "pony mount $*" "$PONY" mount --foreground "$@" "$T/m"; }
pony_umount() { fuse_daemon_stop "$T/m" "$T/pony.log"; }
