#!/usr/bin/env bash
# vol_expose_signal.sh - `pony vol expose` stopped by SIGINT or SIGTERM
# unmounts, closes the volume clean and exits 0, whichever of its threads
# the kernel hands the signal to and even the moment its mount appears
# (tests/stop_signals.py). With libfuse's own handlers, a SIGTERM taken by
# one of the members' acall workers marked the session exited and nothing
# woke the loop: the daemon served on, and ended with its mount left dead.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3

T=$(mktemp -d /tmp/pony-vol-sig.XXXXXX)
cleanup() {
	fusermount3 -u -z "$T/m" 2>/dev/null || umount -l "$T/m" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/m"
for i in 0 1 2; do truncate -s 16M "$T/d$i.img"; done
"$PONY" vol create -l raid5 -c 64K --assume-clean "$T"/d*.img >/dev/null || fail "vol create"
printf 'written before the stops\n' >"$T/want"
"$PONY" vol expose "$T"/d*.img "$T/m" || skip "cannot mount FUSE here"
dd if="$T/want" of="$T/m/volume" conv=notrunc,fsync status=none || fail "write through the volume"
"$PONY" vol stop "$T/m" || fail "vol stop"

python3 "$PONY_SRCDIR/tests/stop_signals.py" "${ROUNDS:-5}" "$T/m" \
	"$PONY" vol expose --foreground "$T"/d*.img "$T/m" ||
	fail "a stop signal was lost or left the mount"

# Every stop closed the volume clean: it assembles without --degraded and
# the bytes written before are there.
"$PONY" vol expose "$T"/d*.img "$T/m" || fail "expose after the stops"
cmp -n "$(stat -c %s "$T/want")" "$T/want" "$T/m/volume" || fail "the volume's bytes changed"
"$PONY" vol stop "$T/m" || fail "vol stop at the end"
pass
