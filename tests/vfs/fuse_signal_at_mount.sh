#!/usr/bin/env bash
# fuse_signal_at_mount.sh - a FUSE daemon stopped by SIGINT or SIGTERM the
# moment its mount appears still unmounts and exits 0. The mount shows up
# before the serving loop starts; a signal in between was once lost (SIGINT,
# which a shell's background job starts with ignored: the daemon then served
# on and `wait` hung) or killed the daemon with the mount left behind
# (SIGTERM). The signal is sent from a loop polling /proc/self/mountinfo, so
# it lands within microseconds of the mount, many times over. Then the same
# signals are sent to each of the daemon's own threads that does not block
# them (read helpers, timers: not the loop thread, not libfuse's workers):
# handled there, they once marked the session exited without waking the
# loop, and the daemon served on (seen in CI as a lost SIGTERM).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

T=$(mktemp -d /tmp/pony-fuse-sig.XXXXXX)
cleanup() {
	# A daemon killed by the test leaves a dead mount that mountpoint(1)
	# cannot stat: detach whatever is there.
	fusermount3 -u -z "$T/m" 2>/dev/null || umount -l "$T/m" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/src" "$T/m"

python3 "$PONY_SRCDIR/tests/stop_signals.py" "${ROUNDS:-20}" "$T/m" \
	"$PONY" fs mount-host --foreground "$T/src" "$T/m" ||
	fail "a stop signal was lost or left the mount"
pass
