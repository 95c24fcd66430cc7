#!/usr/bin/env bash
# watch_uevent.sh - `pony dev watch` without udevd: the kernel's uevents
# (NETLINK_KOBJECT_UEVENT) keep the index current. A losetup of a new
# labelled image is found by its label while the watch runs, with no scan,
# and the watch says it learnt it from a uevent; after the detach the label
# is no longer found. Forced to the kernel source so the test means the
# same thing where udevd does run.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_root
require_cmd losetup
[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control is missing)"
require_cmd mkfs.ext4
dir=$(mktemp -d /tmp/pony-uevent.XXXXXX)
watch_pid= loop=
trap '[ -n "$watch_pid" ] && kill $watch_pid 2>/dev/null; [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null; rm -rf "$dir"' EXIT
export PONY_DEVDB=$dir/devdb.sqlite
label=uev$$
truncate -s 16M "$dir/new.img"
mkfs.ext4 -q -L "$label" "$dir/new.img" || fail "mkfs.ext4"

# the image's directory is not known to the index: only the loop device
# can tell the watch about this label
PONY_UEVENT_SOURCE=kernel "$PONY" dev watch --verbose >"$dir/out" 2>"$dir/err" &
watch_pid=$!
for _ in $(seq 50); do grep -q watching "$dir/err" && break; sleep 0.1; done
grep -q "kernel uevents" "$dir/err" || fail "watch is not reading kernel uevents: $(cat "$dir/err")"

# wait_for CMD...: retries for up to 5 s (the watch works asynchronously)
wait_for() { for _ in $(seq 50); do "$@" && return 0; sleep 0.1; done; return 1; }
found() { [ "$("$PONY" dev find --all "LABEL=$label" 2>/dev/null)" = "$1" ]; }

loop=$(losetup -f --show "$dir/new.img" 2>/dev/null) || skip "losetup could not attach a loop device"
wait_for found "$loop" || fail "attached $loop not found by LABEL=$label: $(cat "$dir/out" "$dir/err")"
wait_for grep -Eq "^uevent (add|change) $loop\$" "$dir/out" || fail "no uevent for $loop in the watch's log: $(cat "$dir/out")"
echo "attach of $loop seen: $(grep -E " $loop\$" "$dir/out" | tr '\n' ';')"

count() { grep -Ec "^uevent (change|remove) $1\$" "$dir/out"; }
n=$(count "$loop")
losetup -d "$loop"
lo=$loop loop=
wait_for found "" || fail "detached $lo still found by LABEL=$label"
events() { [ "$(count "$lo")" -gt "$n" ]; }
wait_for events ||
	fail "detach of $lo not seen as a uevent: $(cat "$dir/out")"
"$PONY" dev find "LABEL=$label" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "find after the detach exited $rc, expected 1"
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null; watch_pid=
pass
