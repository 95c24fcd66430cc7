#!/usr/bin/env bash
# watch_udev.sh - `pony dev watch` on udev's events (libudev), with a real
# systemd-udevd processing them. With --no-node-watch the watch has no
# inotify of its own on device nodes, so everything it learns about the loop
# device comes from events udevd processed and re-broadcast: the losetup of
# a labelled image (found by its label, no scan), the relabel by e2label
# (udevd's "watch" rule turns the close after the write into a change
# event) and the detach (the label is no longer found).
#
# No udevd runs on this machine, and pony picks udev's events whenever
# /run/udev/control exists, so a udevd started for the test must not be
# seen by anything else. It runs in a private mount namespace (unshare -m)
# with its own tmpfs on /run (the host's /run/udev never appears), its own
# /dev/block (where udevd puts its symlinks) and one rules file of its own
# that only touches loop devices backed by this test's images: nothing
# else on the machine is watched, probed or linked. Where a udevd already
# runs (its /run/udev/control exists), that one is used instead.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

# wait_for CMD...: retries for up to 5 s (udevd and the watch work asynchronously)
wait_for() { for _ in $(seq 50); do "$@" && return 0; sleep 0.1; done; return 1; }

if [ "${1:-}" != --inside ]; then
	require_root
	require_cmd losetup unshare
	command -v mkfs.ext4 >/dev/null && command -v e2label >/dev/null ||
		skip "mkfs.ext4 or e2label is missing"
	[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control is missing)"
	ldconfig -p | grep -q 'libudev\.so\.1 ' || skip "libudev.so.1 is missing"
	udevd=
	if [ ! -e /run/udev/control ]; then
		for u in /lib/systemd/systemd-udevd /usr/lib/systemd/systemd-udevd; do
			[ -x "$u" ] && udevd=$u && break
		done
		[ -n "$udevd" ] || skip "systemd-udevd is missing (package udev)"
	fi
	dir=$(mktemp -d /tmp/pony-udev.XXXXXX)
	made_block=
	run_udev_before=$([ -e /run/udev ] && echo yes)
	# Everything the namespace left running is stopped by its pid (same pid
	# namespace), loops on this test's images are detached, and /dev/block
	# goes if it was made here only as a mount point.
	cleanup() {
		local f pid l
		for f in watch udevd; do
			pid=$(cat "$dir/$f.pid" 2>/dev/null) || continue
			grep -qs "$dir" "/proc/$pid/environ" && kill "$pid" 2>/dev/null
		done
		for f in "$dir"/*.img; do
			for l in $(losetup -j "$f" -O NAME -n 2>/dev/null); do losetup -d "$l"; done
		done
		[ -n "$made_block" ] && rmdir /dev/block 2>/dev/null
		rm -rf "$dir"
	}
	trap cleanup EXIT
	trap 'exit 143' TERM INT HUP
	if [ -n "$udevd" ] && [ ! -d /dev/block ]; then
		mkdir /dev/block && made_block=1
	fi
	PONY_UDEV_TEST_DIR=$dir unshare --mount --propagation private "$0" --inside "$dir" "$udevd"
	rc=$?
	[ -n "$run_udev_before" ] || [ ! -e /run/udev ] || fail "the host now has /run/udev"
	exit "$rc"
fi

# --- inside the private mount namespace ---
dir=$2 udevd=$3
watch_pid= udevd_pid= loop=
trap '[ -n "$watch_pid" ] && kill $watch_pid 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ -n "$udevd_pid" ] && kill $udevd_pid 2>/dev/null && wait $udevd_pid' EXIT
trap 'exit 143' TERM INT HUP
export PONY_DEVDB=$dir/devdb.sqlite
label=udv$$ relabel=udr$$
truncate -s 16M "$dir/new.img"
mkfs.ext4 -q -L "$label" "$dir/new.img" || fail "mkfs.ext4"

if [ -n "$udevd" ]; then
	mkdir "$dir/rules" "$dir/block"
	cat >"$dir/rules/90-pony-test.rules" <<-EOF
	# pony's devdb_watch_udev: only loop devices backed by its own images
	SUBSYSTEM!="block", GOTO="pony_test_end"
	KERNEL!="loop*", GOTO="pony_test_end"
	ATTR{loop/backing_file}!="$dir/*", GOTO="pony_test_end"
	ACTION!="remove", OPTIONS+="watch"
	LABEL="pony_test_end"
	EOF
	mount -t tmpfs -o mode=0755 pony-udev-test /run || fail "cannot mount a private /run"
	for d in /etc/udev/rules.d /usr/local/lib/udev/rules.d /usr/lib/udev/rules.d \
		 /lib/udev/rules.d; do
		[ -d "$d" ] && { mount --bind "$dir/rules" "$d" || fail "cannot hide $d"; }
	done
	mount --bind "$dir/block" /dev/block || fail "cannot mount a private /dev/block"
	"$udevd" --debug >"$dir/udevd.log" 2>&1 &
	udevd_pid=$!
	echo "$udevd_pid" >"$dir/udevd.pid"
	wait_for test -S /run/udev/control || fail "systemd-udevd did not start: $(cat "$dir/udevd.log")"
	others=$(grep "Reading rules file" "$dir/udevd.log" | grep -v "/90-pony-test.rules")
	[ -z "$others" ] || fail "udevd read other rules: $others"
fi

PONY_UEVENT_SOURCE=udev "$PONY" dev watch --verbose --no-node-watch >"$dir/out" 2>"$dir/err" &
watch_pid=$!
echo "$watch_pid" >"$dir/watch.pid"
wait_for grep -q watching "$dir/err" || fail "watch did not start: $(cat "$dir/err")"
grep -q "and udev events" "$dir/err" || fail "watch is not reading udev events: $(cat "$dir/err")"

found() { [ "$("$PONY" dev find --all "LABEL=$1" 2>/dev/null)" = "$2" ]; }
# count ACTIONS NODE: udev events for NODE in the watch's log
count() { grep -Ec "^uevent ($1) $2\$" "$dir/out"; }
grew() { [ "$(count "$1" "$2")" -gt "$3" ]; }
log() { cat "$dir/out" "$dir/err"; [ -n "$udevd" ] && tail -20 "$dir/udevd.log"; }

# 1. attach: only udev's event can tell the watch about this device
loop=$(losetup -f --show "$dir/new.img" 2>/dev/null) || skip "losetup could not attach a loop device"
wait_for found "$label" "$loop" || fail "attached $loop not found by LABEL=$label: $(log)"
grep -Eq "^(add|change) $loop\$" "$dir/out" || fail "$loop not indexed from a udev event: $(log)"
echo "attach of $loop seen: $(grep -E " $loop\$" "$dir/out" | tr '\n' ';')"

# 2. relabel with the filesystem's own tool: udevd's inotify sees the close
n=$(count change "$loop")
e2label "$loop" "$relabel" || fail "e2label"
wait_for found "$relabel" "$loop" || fail "relabelled $loop not found by LABEL=$relabel: $(log)"
found "$label" "" || fail "old LABEL=$label still found"
grew change "$loop" "$n" || fail "relabel of $loop did not come as a udev change event: $(log)"
echo "relabel of $loop seen: $(($(count change "$loop") - n)) change event(s)"

# 3. detach
n=$(count "change|remove" "$loop")
losetup -d "$loop"
lo=$loop loop=
wait_for found "$relabel" "" || fail "detached $lo still found by LABEL=$relabel: $(log)"
grew "change|remove" "$lo" "$n" || fail "detach of $lo not seen as a udev event: $(log)"
"$PONY" dev find "LABEL=$relabel" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "find after the detach exited $rc, expected 1"
echo "detach of $lo seen"

# nothing came from inotify: every update above was a udev event's
! grep -q "^changed " "$dir/out" || fail "--no-node-watch still watched nodes: $(cat "$dir/out")"
kill "$watch_pid"
wait "$watch_pid" || fail "the watch exited $? on SIGTERM: $(cat "$dir/err")"
watch_pid=
pass
