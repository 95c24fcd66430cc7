#!/usr/bin/env bash
# vol_monitor.sh - `pony vol monitor`, mdadm --monitor's counterpart: with
# --program it runs PROG EVENT VOLUME [MEMBER] for what changes between its
# looks: TestMessage (--test) at the start, Fail naming the member's device
# when a member is failed, DegradedArray, RebuildStarted, Rebuild20..80 and
# SpareActive and RebuildFinished as a new member is rebuilt; --scan finds
# the volumes by the names the device database holds; --oneshot reports a
# degraded volume once and exits; bad options are usage errors.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-monitor
export PONY_DEVDB=$work/devdb.sqlite PONY_RUNDIR=$work/run

expect_usage_error "$PONY" vol monitor
expect_usage_error "$PONY" vol monitor --scan tank
expect_usage_error "$PONY" vol monitor --delay soon tank
"$PONY" vol monitor --help | grep -q -- "--program PROG" || fail "monitor --help"

for i in 0 1 2 3 4; do truncate -s 32M m$i.img; done
"$PONY" vol create -l raid5 -N tank m0.img m1.img m2.img m3.img >/dev/null || fail "create"
"$PONY" vol assemble m0.img m1.img m2.img m3.img >/dev/null || fail "assemble"
size=$("$PONY" vol status --json tank | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')
cat >prog <<'EOS'
#!/bin/sh
echo "$*" >>"$(dirname "$0")/events"
EOS
chmod +x prog
: >events

# wait_event LINE: until the program has been run with LINE (15 s at most).
wait_event() {
	for _ in $(seq 150); do
		grep -qx -- "$1" events && return 0
		kill -0 "$mpid" 2>/dev/null || fail "the monitor exited: $(cat mon.err)"
		sleep 0.1
	done
	fail "no '$1' event; got: $(tr '\n' ';' <events) stderr: $(cat mon.err)"
}

"$PONY" vol monitor --scan --test --delay 0.2 --program "$work/prog" 2>mon.err &
mpid=$!
wait_event "TestMessage tank"
"$PONY" vol fail -m 2 tank >/dev/null || fail "fail"
wait_event "Fail tank $work/m2.img"
wait_event "DegradedArray tank"
grep -q "Fail event detected on volume tank, member $work/m2.img" mon.err ||
	fail "the Fail event is not logged on stderr: $(cat mon.err)"
"$PONY" vol add -d m4.img -r $((size / 6)) tank >/dev/null 2>&1 || fail "add"
wait_event "RebuildStarted tank"
wait_event "Rebuild40 tank"
wait_event "SpareActive tank $work/m4.img"
wait_event "RebuildFinished tank"
kill -TERM $mpid
wait $mpid || fail "the monitor exited $? on SIGTERM"
# In order, and each once.
python3 - <<'EOS' || fail "events out of order or repeated: $(tr '\n' ';' <events)"
ev = [l.split()[0] for l in open("events")]
for e in ev:
	assert ev.count(e) == 1, (e, ev)
for a, b in [("TestMessage", "Fail"), ("Fail", "RebuildStarted"), ("RebuildStarted", "Rebuild20"),
	     ("Rebuild20", "Rebuild40"), ("Rebuild40", "RebuildFinished")]:
	if b in ev:
		assert ev.index(a) < ev.index(b), (a, b, ev)
EOS

# --oneshot, a volume by UUID=: a degraded volume is reported once, then it exits.
uuid=$("$PONY" vol status --json tank | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])')
"$PONY" vol fail -m 0 tank >/dev/null || fail "fail 0"
: >events
timeout 20 "$PONY" vol monitor --oneshot --program "$work/prog" "UUID=$uuid" 2>/dev/null ||
	fail "--oneshot did not exit 0"
[ "$(cat events)" = "DegradedArray UUID=$uuid" ] || fail "--oneshot events: $(cat events)"
pass
