#!/usr/bin/env bash
# nbd_devdb.sh - members on NBD servers found through the device database:
# `pony dev register URI` connects and probes the export and keeps what it
# holds, so `pony dev list` shows each server's URI with the volume member
# it holds, `pony vol assemble UUID=...` and `pony mount UUID=...` find the
# members wherever they live, and with --degraded leave out (and name) one
# whose server is down; a tag given on the command line wins over the
# probed one; an absent server is refused by URI and nothing is kept,
# unless the tags to expect are given (registered before it exists).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-devdb
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
export PONY_DEVDB="$T/devdb.sqlite"

nbd_six memory 64M
"$PONY" mkfs --data raid6 --metadata mirror --label farvol "${URIS[@]}" > /dev/null 2>&1 || fail "mkfs"
uuid=$("$PONY" vol status --json "${URIS[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])')
for u in "${URIS[@]}"; do "$PONY" dev register "$u" || fail "register $u"; done
"$PONY" dev list > "$T/list" || fail "dev list"
for i in 0 1 2 3 4 5; do
	grep -q "^nbd://127.0.0.1:${NBD_PORT[s$i]}/ *pony_volume_member *farvol *$uuid *remote$" "$T/list" ||
		fail "server s$i not listed with its member: $(cat "$T/list")"
done
"$PONY" dev find "UUID=$uuid" > "$T/out" 2>/dev/null || fail "dev find UUID=$uuid"
grep -q "^nbd://127.0.0.1:" "$T/out" || fail "dev find does not print a URI: $(cat "$T/out")"

"$PONY" vol assemble "UUID=$uuid" > "$T/out" 2>&1 || fail "vol assemble UUID=: $(cat "$T/out")"
record_field STATE <"$T/out" | grep -qx clean || fail "assemble UUID=: $(cat "$T/out")"
grep -Ec "^[0-5] +ok +nbd://127.0.0.1:" "$T/out" | grep -qx 6 || fail "members: $(cat "$T/out")"

if [ -c /dev/fuse ] && command -v fusermount3 > /dev/null; then
	head -c 1000000 /dev/urandom > "$T/a"
	pony_mount "UUID=$uuid"
	cp "$T/a" "$T/m/a" || fail "write through mount UUID="
	pony_umount
	pony_mount "LABEL=farvol"
	cmp "$T/a" "$T/m/a" || fail "read through mount LABEL="
	pony_umount
fi

# A server down: UUID= still names its URI; refused without --degraded,
# left out with it (and said so).
nbd_kill s5 KILL
"$PONY" vol assemble "UUID=$uuid" > "$T/out" 2> "$T/err" && fail "assembled without a server unasked"
grep -q "nbd://127.0.0.1:${NBD_PORT[s5]}/: cannot connect" "$T/err" || fail "down: $(cat "$T/err")"
"$PONY" vol assemble --degraded "UUID=$uuid" > "$T/out" 2> "$T/err" ||
	fail "assemble --degraded with a server down: $(cat "$T/err")"
grep -q "nbd://127.0.0.1:${NBD_PORT[s5]}/ left out" "$T/err" || fail "not said: $(cat "$T/err")"
record_field STATE <"$T/out" | grep -qx degraded || fail "not degraded: $(cat "$T/out")"
if [ -c /dev/fuse ] && command -v fusermount3 > /dev/null; then
	pony_mount --degraded "UUID=$uuid"
	cmp "$T/a" "$T/m/a" || fail "read through a degraded mount UUID="
	pony_umount
fi

# A tag given wins over the probe.
"$PONY" dev register "${URIS[0]}" LABEL=renamed || fail "register with a tag"
"$PONY" dev show "${URIS[0]}" | grep -Eq "^LABEL +renamed$" || fail "the given LABEL did not win"
# Nobody there: refused by URI, nothing kept.
port=$(nbd_free_port)
"$PONY" dev register "nbd://127.0.0.1:$port/x" 2> "$T/err" && fail "registered an absent server"
grep -q "nbd://127.0.0.1:$port/x: cannot connect" "$T/err" || fail "absent: $(cat "$T/err")"
"$PONY" dev list | grep -q ":$port/" && fail "an absent server was kept"
# ... unless the identity to expect is given: registered before it exists.
"$PONY" dev register "nbd://127.0.0.1:$port/x" LABEL=later 2> "$T/err" || fail "register with tags: $(cat "$T/err")"
grep -q "not probed; kept with the tags given" "$T/err" || fail "not said: $(cat "$T/err")"
"$PONY" dev show "nbd://127.0.0.1:$port/x" | grep -Eq "^LABEL +later$" || fail "the given tags were not kept"
pass
