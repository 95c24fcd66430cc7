#!/usr/bin/env bash
# vol_names.sh - named volumes, as mdadm users name arrays: `pony vol
# assemble` records a volume in the device database, and every vol command
# (status, table, read, write, fail, add, rebuild, re-add, scrub, badblocks,
# detail, serve) then takes NAME, UUID=U or LABEL=L for the member list,
# from any directory. --name records another name; the name goes to the
# volume assembled last (the older one stays reachable by UUID=); an
# unknown name is exit 1 with a message and touches nothing.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-names
export PONY_DEVDB=$work/devdb.sqlite PONY_RUNDIR=$work/run

for i in 0 1 2 3 4; do truncate -s 16M m$i.img; done
"$PONY" vol create -l raid5 -N tank m0.img m1.img m2.img m3.img >/dev/null || fail "create"
head -c 2000000 /dev/urandom >data
# Not assembled yet: the name is unknown, and nothing is written.
sum=$(cat m*.img | md5sum)
"$PONY" vol write -f data tank >out 2>err; rc=$?
[ $rc = 1 ] || fail "write to an unknown name exited $rc, expected 1"
grep -q "tank: no such file or device, nor a volume of that name" err || fail "message: $(cat err)"
[ "$(cat m*.img | md5sum)" = "$sum" ] || fail "an unknown name touched the members"
"$PONY" vol status nosuch >/dev/null 2>&1; rc=$?
[ $rc = 4 ] || fail "status of an unknown name exited $rc, expected 4 (cannot read)"

"$PONY" vol assemble m0.img m1.img m2.img m3.img >/dev/null || fail "assemble"
uuid=$("$PONY" vol status --json tank | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])') ||
	fail "status tank"
[ "$(sqlite3 "$PONY_DEVDB" "SELECT name FROM volumes WHERE uuid='$uuid'")" = tank ] ||
	fail "the volume is not recorded by name"
[ "$(sqlite3 "$PONY_DEVDB" "SELECT count(*) FROM volume_members WHERE uuid='$uuid'")" = 4 ] ||
	fail "the members are not recorded by UUID"

# From another directory, by each spelling.
mkdir elsewhere && cd elsewhere || fail "cd"
for v in tank "UUID=$uuid" "LABEL=tank"; do
	"$PONY" vol status "$v" | record_field STATE | grep -qx clean || fail "status $v"
	"$PONY" vol table "$v" | grep -q " raid raid5_ls " || fail "table $v"
	"$PONY" vol detail --json "$v" | json "assert s['volumes'][0]['uuid'] == '$uuid'"
done
"$PONY" vol write -f ../data tank || fail "write tank"
"$PONY" vol read -L 2000000 -f out "UUID=$uuid" || fail "read UUID="
cmp -s out ../data || fail "read back by UUID= differs"
"$PONY" vol fail -m 2 LABEL=tank >/dev/null || fail "fail by LABEL="
"$PONY" vol detail --test tank >/dev/null; rc=$?
[ $rc = 1 ] || fail "detail --test after fail: $rc, expected 1 (degraded)"
"$PONY" vol add -d ../m4.img tank >/dev/null 2>&1 || fail "add by name"
"$PONY" vol detail --json tank |
	json "m = s['volumes'][0]['children']; assert m[2]['device'].endswith('/m4.img') and m[2]['state'] == 'ok', m"
"$PONY" vol scrub tank 2>/dev/null | record_field MISMATCHES | grep -qx 0 || fail "scrub by name"
"$PONY" vol badblocks tank >/dev/null || fail "badblocks by name"
"$PONY" vol rebuild tank >/dev/null 2>&1 || fail "rebuild by name"
"$PONY" vol read -L 2000000 -f out2 tank || fail "read after add"
cmp -s out2 ../data || fail "data after the rebuild by name differs"
"$PONY" vol re-add tank >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "member\|nothing" out || fail "re-add by name on a whole volume: $rc $(cat out)"
cd .. || fail "cd .."

# --name: another name for the same volume, which replaces the first.
"$PONY" vol assemble --name vault tank >/dev/null || fail "assemble --name vault"
"$PONY" vol detail vault | grep -q "^vault " || fail "detail vault: $("$PONY" vol detail vault)"
"$PONY" vol status tank >/dev/null 2>&1 && fail "tank still names the volume after --name vault"
expect_usage_error "$PONY" vol assemble --name a/b vault
expect_usage_error "$PONY" vol status --name x vault

# A second volume labelled vault, assembled: the name is now its; the first by UUID=.
for i in 0 1; do truncate -s 16M n$i.img; done
"$PONY" vol create -l raid1 -N vault n0.img n1.img >/dev/null || fail "create second"
"$PONY" vol assemble n0.img n1.img >/dev/null || fail "assemble second"
"$PONY" vol detail --json vault | json "v = s['volumes'][0]; assert v['level'] == 'mirror' and v['uuid'] != '$uuid', v"
"$PONY" vol detail --json "UUID=$uuid" | json "assert s['volumes'][0]['level'] == 'raid5'"

# serve takes a name too (nbdkit is given the members the name stands for).
if command -v nbdkit >/dev/null && command -v nbdcopy >/dev/null && [ -z "${PONY_SANITIZE:-}" -o "${PONY_SANITIZE:-}" = none ]; then
	sock=$work/nbd.sock
	"$PONY" vol serve --nbd "$sock" --read-only "UUID=$uuid" 2>serve.err &
	spid=$!
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || fail "serve by UUID= did not listen: $(cat serve.err)"
	nbdcopy "nbd+unix:///?socket=$sock" - | head -c 2000000 | cmp -s - data ||
		fail "the volume served by UUID= reads other bytes: $(cat serve.err)"
	kill "$spid"; wait "$spid" 2>/dev/null
fi
pass
