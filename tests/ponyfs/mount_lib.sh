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
pony_mount() {
	"$PONY" mount --foreground "$@" "$T/m" 2>>"$T/pony.log" &
	PONY_PID=$!
	for _ in $(seq 1 100); do
		mountpoint -q "$T/m" && return 0
		kill -0 "$PONY_PID" 2>/dev/null || fail "pony mount $* exited: $(cat "$T/pony.log")"
		sleep 0.05
	done
	fail "pony mount did not come up"
}

pony_umount() {
	# A close the kernel has not passed on yet can keep the mount busy a moment.
	for _ in 1 2 3 4 5; do fusermount3 -u "$T/m" 2>"$T/umount.err" && break; sleep 0.2; done
	mountpoint -q "$T/m" && fail "fusermount3 -u failed: $(cat "$T/umount.err")"
	wait "$PONY_PID" || fail "pony exited $? after unmount: $(cat "$T/pony.log")"
	PONY_PID=
}
