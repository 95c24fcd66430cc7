#!/usr/bin/env bash
# vol_detail.sh - `pony vol detail`, mdadm --detail's counterpart, and the
# progress of long work: the table and --json field by field for a clean
# raid6, --test's exit codes for a clean (0), degraded (1), failed (2) and
# unreadable (4) volume; rebuild and scrub print percent, rate and time left
# as lines when stderr is not a terminal and as a bar on one; and detail run
# from another process while a rebuild (then a scrub) runs shows a percent
# that grows, with rate and time left, and nothing once it is done. A
# status file whose writer is gone is stale: detail ignores it.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-detail
export PONY_DEVDB=$work/devdb.sqlite PONY_RUNDIR=$work/run

MiB=1048576
for i in 0 1 2 3 4 5 6; do truncate -s 40M d$i.img; done
"$PONY" vol create -l raid6 -c 128K -p left-asymmetric -N big d0.img d1.img d2.img d3.img d4.img \
	d5.img >/dev/null || fail "create"
"$PONY" vol assemble d0.img d1.img d2.img d3.img d4.img d5.img >/dev/null || fail "assemble"
"$PONY" vol add -d d6.img big >/dev/null || fail "add a spare"
uuid=$("$PONY" vol status --json big | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])')
size=$("$PONY" vol status --json big | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')

# The table: a line for the volume, one per member and spare, under headings.
"$PONY" vol detail big >out || fail "detail"
read -r -a head <out
[ "${head[*]}" = "NAME STATE LEVEL CHUNK LAYOUT SIZE ACTION PERCENT RATE ETA DEVICE UUID" ] ||
	fail "headings: ${head[*]}"
read -r -a vol < <(sed -n 2p out)
[ "${vol[*]}" = "big clean raid6 131072 left-asymmetric $size $uuid" ] || fail "volume line: ${vol[*]}"
for i in 0 1 2 3 4 5; do
	read -r -a m < <(sed -n "$((i + 3))p" out)
	[ "${m[1]}" = "ok" ] && [ "${m[2]}" = "$work/d$i.img" ] && [[ ${m[3]} =~ ^[0-9a-f-]{36}$ ]] ||
		fail "member $i line: ${m[*]}"
	[[ ${m[0]} == *-$i ]] || fail "member $i's role: ${m[0]}"
done
sed -n 9p out | grep -q "spare0 *spare *$work/d6.img *$" || fail "spare line: $(sed -n 9p out)"
"$PONY" vol detail --json big | json "
v = s['volumes'][0]
assert (v['name'], v['state'], v['level'], v['chunk'], v['layout'], v['size'], v['uuid']) == \
	('big', 'clean', 'raid6', 131072, 'left-asymmetric', $size, '$uuid'), v
assert v['action'] is None and v['percent'] is None, v
m = v['children']
assert [c['name'] for c in m] == ['0', '1', '2', '3', '4', '5', 'spare0'], m
assert [c['state'] for c in m] == ['ok'] * 6 + ['spare'], m
assert [c['device'] for c in m] == ['$work/d%d.img' % i for i in range(7)], m
assert len({c['uuid'] for c in m[:6]}) == 6 and m[6]['uuid'] is None, m"
"$PONY" vol status --json big | json "
want = [m['uuid'] for m in s['members']]
import subprocess
d = subprocess.run(['$PONY', 'vol', 'detail', '--json', 'big'], capture_output=True).stdout
assert [c['uuid'] for c in json.loads(d)['volumes'][0]['children'][:6]] == want"
expect_usage_error "$PONY" vol detail
expect_usage_error "$PONY" vol detail --frob big

# --test: 0 clean; 1 degraded; 2 failed; 4 unreadable. Without it: 0, and 1 unreadable.
"$PONY" vol detail --test big >/dev/null; rc=$?
[ $rc = 0 ] || fail "clean: --test exited $rc"
"$PONY" vol fail -m 1 big >/dev/null 2>&1 || fail "fail 1"     # the spare takes its place
"$PONY" vol fail -m 2 big >/dev/null || fail "fail 2"
"$PONY" vol detail --test big >out; rc=$?
[ $rc = 1 ] || fail "degraded: --test exited $rc"
sed -n 2p out | grep -q "^big *degraded raid6 " || fail "degraded line: $(sed -n 2p out)"
"$PONY" vol detail --json big | json "m = s['volumes'][0]['children']; assert m[2]['state'] == 'stale' and m[1]['device'] == '$work/d6.img', m"
"$PONY" vol fail -m 3 big >/dev/null || fail "fail 3"
"$PONY" vol detail --test big >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "raid6 two members out: --test exited $rc"
"$PONY" vol fail -m 4 big >/dev/null 2>&1
"$PONY" vol detail --test big >out 2>err; rc=$?
[ $rc = 2 ] || fail "failed: --test exited $rc"
sed -n 2p out | grep -q "^big *failed raid6" || fail "failed line: $(cat out)"
"$PONY" vol detail --json big 2>/dev/null | json "
v = s['volumes'][0]; assert v['state'] == 'failed' and [c['state'] for c in v['children']] == \
	['ok', 'ok', 'stale', 'stale', 'stale', 'ok'], v"
"$PONY" vol detail big >/dev/null 2>&1 || fail "detail of a failed volume exits non-zero without --test"
"$PONY" vol detail --test /nonexistent.img >/dev/null 2>&1; rc=$?
[ $rc = 4 ] || fail "unreadable: --test exited $rc"
"$PONY" vol detail /nonexistent.img >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "unreadable: exited $rc"

# A fresh raid5 for the progress of long work.
for i in 0 1 2 3 4; do truncate -s 48M r$i.img; done
"$PONY" vol create -l raid5 -N slow r0.img r1.img r2.img r3.img >/dev/null || fail "create raid5"
"$PONY" vol assemble r0.img r1.img r2.img r3.img >/dev/null || fail "assemble raid5"
"$PONY" vol fail -m 1 slow >/dev/null || fail "fail raid5 member"
rsize=$("$PONY" vol status --json slow 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')

# A rebuild of ~10 s, its stderr a file: lines, and detail from here sees it
# grow (by the members: a lookup by name re-probes each member the rebuild
# just wrote, slow on a loaded machine).
"$PONY" vol add -d r4.img -r $((rsize / 10)) slow >add.out 2>add.err &
apid=$!
: >percents
for _ in $(seq 150); do
	"$PONY" vol detail --json r0.img r4.img r2.img r3.img 2>/dev/null | python3 -c '
import json, sys
text = sys.stdin.read()  # empty until r4.img carries its superblock
v = json.loads(text)["volumes"][0] if text else {"action": None}
if v["action"] == "rebuild" and v["rate"] and v["eta"] is not None:
	print(v["percent"], v["state"])' >>percents || fail "detail during the rebuild"
	kill -0 $apid 2>/dev/null || break
	sleep 0.3
done
wait $apid || fail "add: $(cat add.err)"
python3 -c '
import sys
p = [int(x.split()[0]) for x in open("percents")]
assert len(set(p)) >= 2 and p == sorted(p) and p[-1] > p[0], p
# A look can catch the superblocks mid-rewrite (a member stale): most say rebuilding.
st = [x.split()[1] for x in open("percents")]
assert st.count("rebuilding") * 2 > len(st), st' ||
	fail "detail during the rebuild: percents $(tr '\n' ' ' <percents)"
grep -E "^pony: rebuild: [0-9]+% of 1[0-9]{2}M, [0-9.]+M/s, [0-9]+ s left$" add.err >lines ||
	fail "no progress lines on stderr: $(cat add.err)"
[ "$(wc -l <lines)" -ge 3 ] || fail "fewer than 3 progress lines: $(cat add.err)"
[ "$(grep -c . add.err)" -le 12 ] || fail "a line per update, not every 10 %: $(cat add.err)"
ls "$PONY_RUNDIR/volume/" | grep -q . && fail "the status file outlived the rebuild"
"$PONY" vol detail --json slow | json "v = s['volumes'][0]; assert v['state'] == 'clean' and v['action'] is None, v"

# A scrub is seen the same way.
"$PONY" vol scrub -r $((rsize / 3)) slow >/dev/null 2>&1 &
spid=$!
seen=
for _ in $(seq 60); do
	"$PONY" vol detail slow 2>/dev/null | sed -n 2p | grep -q "^slow *clean .* scrub *[0-9]\+ " && seen=1 && break
	sleep 0.2
done
wait $spid
[ -n "$seen" ] || fail "detail never showed the scrub"

# A status file whose writer is gone (killed) is stale: detail ignores it;
# the same file from a live process is shown.
suuid=$("$PONY" vol status --json slow | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])')
true & gone=$!; wait $gone
status_file() {
	printf 'version=1\nwhat=scrub\npid=%s\ndone=%s\ntotal=%s\npercent=37\nrate=1000\neta=9\nupdated=%s\n' \
		"$1" $((rsize * 37 / 100)) "$rsize" "$(date +%s)" >"$PONY_RUNDIR/volume/$suuid"
}
status_file $gone
"$PONY" vol detail --json slow | json "v = s['volumes'][0]; assert v['action'] is None, v"
status_file $$
"$PONY" vol detail --json slow | json "
v = s['volumes'][0]; assert (v['action'], v['percent'], v['rate'], v['eta']) == ('scrub', 37, 1000, 9), v"
[ -f "$PONY_RUNDIR/volume/$suuid" ] || fail "detail removed the status file of another process"
rm "$PONY_RUNDIR/volume/$suuid"

# On a terminal: a bar with percent, rate and time left.
if command -v script >/dev/null; then
	"$PONY" vol fail -m 2 slow >/dev/null || fail "fail 2"
	truncate -s 48M r5.img
	script -qec "'$PONY' vol add -d r5.img -r $((rsize / 3)) slow" /dev/null >tty.out || fail "rebuild on a tty"
	grep -qE "rebuild \[[#.]{40}\] [0-9]+% of 1[0-9]{2}M, [0-9.]+M/s, [0-9]+ s left" tty.out ||
		fail "no bar with percent, rate and time left: $(tr '\r' '\n' <tty.out | tail -3)"
	grep -q "^pony: rebuild:" tty.out && fail "lines on a terminal, not a bar"
fi
pass
