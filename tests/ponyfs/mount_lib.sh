# tests/ponyfs/mount_lib.sh - what the ponyfs shell tests share: a temporary
# directory $T holding the mount point $M, unmounted and removed at exit,
# and a ponyfs mount served in the foreground by a background `pony mount`.
# Usage: . "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" NAME   (after tests/lib.sh)
T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
M=$T/m
PONY_PID=
ponyfs_cleanup() {
	mountpoint -q "$M" 2>/dev/null && { fusermount3 -u "$M" 2>/dev/null || umount -l "$M"; }
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}
trap ponyfs_cleanup EXIT
mkdir -p "$M"

# pony_mount [OPTION...] IMG...: mounts at $M and waits until it is up.
pony_mount() {
	"$PONY" mount --foreground "$@" "$M" 2>>"$T/pony.log" &
	PONY_PID=$!
	for _ in $(seq 1 100); do
		mountpoint -q "$M" && return 0
		kill -0 "$PONY_PID" 2>/dev/null || fail "pony mount exited: $(cat "$T/pony.log")"
		sleep 0.05
	done
	fail "pony mount did not come up"
}

# pony_umount: unmounts $M; pony must then exit 0.
pony_umount() {
	fusermount3 -u "$M" || fail "fusermount3 -u failed"
	wait "$PONY_PID" || fail "pony exited $? after unmount: $(cat "$T/pony.log")"
	PONY_PID=
}
