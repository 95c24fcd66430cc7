#!/usr/bin/env bash
# vol_degraded.sh - members absent, from `pony vol`: assembling five of six
# RAID6 members is refused without --degraded, naming the missing member
# by UUID, and changes nothing; with --degraded it runs and says so; the
# sixth member, back, is named stale and never read; `pony vol status`
# prints a state line (clean, degraded (N missing), rebuilding N%) and
# exits as mdadm --detail --test does (0 clean, 1 degraded, 2 failed);
# too few members say how many the level needs; a truncated member is
# named with its size and left out.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-degraded
# run_rc WANT CMD...: runs CMD (stdout to out, stderr to err) and wants exit WANT.
run_rc() {
	local want=$1 rc
	shift
	"$@" > out 2> err; rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $(cat err)"
}

for i in 0 1 2 3 4 5; do truncate -s 12M d$i.img; done
all=(d0.img d1.img d2.img d3.img d4.img d5.img)
five=(d0.img d1.img d2.img d3.img d4.img)
"$PONY" vol create -l raid6 -c 64K -N deg "${all[@]}" > /dev/null || fail "create"
head -c 3000000 /dev/urandom > data1
head -c 3000000 /dev/urandom > data2
"$PONY" vol write -f data1 "${all[@]}" || fail "write"
run_rc 0 "$PONY" vol status "${all[@]}"
record_field STATE <out | grep -qx clean || fail "status of a whole volume: $(cat out)"
uuid5=$("$PONY" vol status --json "${all[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["members"][5]["uuid"])')

# Five of six: refused without --degraded, the missing member named, nothing written.
md5sum "${five[@]}" > sums
run_rc 1 "$PONY" vol assemble "${five[@]}"
grep -q "member 5 is missing (member UUID $uuid5)" err || fail "missing member not named: $(cat err)"
grep -q "5 of 6 members present; not started without --degraded" err ||
	fail "no word of --degraded: $(cat err)"
run_rc 1 "$PONY" vol write -f data2 "${five[@]}"
md5sum -c --quiet sums || fail "a refused start wrote to the members"
# status and read change nothing, so they need no --degraded.
run_rc 1 "$PONY" vol status "${five[@]}"
[ "$(record_field STATE <out)/$(record_field MISSING <out)" = degraded/1 ] ||
	fail "status of five: $(cat out)"
"$PONY" vol status --json "${five[@]}" 2>/dev/null |
	json 'v = s["volume"][0]; assert v["state"] == "degraded" and v["missing"] == 1, s; assert s["members"][5]["device"] is None, s'
run_rc 0 "$PONY" vol read -L 3000000 -f back "${five[@]}"
cmp -s back data1 || fail "degraded read differs"
md5sum -c --quiet sums || fail "status or read wrote to the members"

# --degraded: runs, says so; writes go on without member 5.
run_rc 0 "$PONY" vol write --degraded -f data2 "${five[@]}"
grep -q "runs degraded: 5 of 6 members" err || fail "no word of running degraded: $(cat err)"

# All six again: member 5 is stale, named, refused; its old data is never read.
run_rc 1 "$PONY" vol assemble "${all[@]}"
grep -q "refusing stale member 5 (d5.img)" err || fail "stale member not named: $(cat err)"
run_rc 1 "$PONY" vol status "${all[@]}"
[ "$(record_field STATE <out)/$(record_field MISSING <out)" = degraded/1 ] ||
	fail "status with a stale member: $(cat out)"
grep -q "refusing stale member 5 (d5.img)" err || fail "status: stale member not named: $(cat err)"
run_rc 0 "$PONY" vol read -L 3000000 -f back "${all[@]}"
cmp -s back data2 || fail "stale data was read"

# Too few: how many there are and how many raid6 needs (status: exit 2).
run_rc 2 "$PONY" vol status d0.img d1.img d2.img
grep -q "3 of 6 members present, raid6 needs at least 4" err || fail "too few: $(cat err)"
run_rc 1 "$PONY" vol assemble --degraded d0.img d1.img d5.img d2.img
grep -q "3 of 6 members present, raid6 needs at least 4" err ||
	fail "too few (one stale): $(cat err)"
grep -q "refusing stale member 5" err || fail "too few: the stale member not named: $(cat err)"
run_rc 4 "$PONY" vol status data1

# Rebuilt: a new member 5 (rebuild interrupted half way first: rebuilding N%).
truncate -s 12M n5.img
set -- d0.img d1.img d2.img d3.img d4.img n5.img
"$PONY" vol add -r 2M -d n5.img "${five[@]}" > /dev/null 2>&1 &
add=$!
sleep 2
kill -INT $add
wait $add
run_rc 1 "$PONY" vol status "$@"
[ "$(record_field STATE <out)" = rebuilding ] && record_field REBUILD_PERCENT <out | grep -Eqx "[1-9]|[1-9][0-9]" ||
	fail "status mid-rebuild: $(cat out)"
run_rc 0 "$PONY" vol rebuild "$@"
run_rc 0 "$PONY" vol status "$@"
record_field STATE <out | grep -qx clean || fail "status after the rebuild: $(cat out)"

# A truncated member: named with both sizes, left out (with --degraded).
cp d3.img t3.img
truncate -s 6M t3.img
set -- d0.img d1.img d2.img t3.img d4.img n5.img
run_rc 1 "$PONY" vol assemble "$@"
grep -Eq "refusing member 3 \(t3.img\): truncated to 6291456 bytes, it needs [0-9]+" err ||
	fail "truncated member not named: $(cat err)"
grep -q "No space left" err && fail "a truncated member reads as ENOSPC: $(cat err)"
run_rc 0 "$PONY" vol read -L 3000000 -f back "$@"
cmp -s back data2 || fail "read without the truncated member differs"
run_rc 0 "$PONY" vol assemble --degraded "$@"
grep -q "runs degraded: 5 of 6 members" err || fail "truncated, --degraded: $(cat err)"
pass
