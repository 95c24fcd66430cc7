#!/usr/bin/env bash
# nbd_readd.sh - `pony vol re-add` by hand over NBD: a RAID6 member whose
# server was killed (SIGKILL) while the volume was written degraded comes
# back when its server is restarted on the same port, and only what the
# write-intent bitmap marks (one 64 MiB bit of a 384 MiB volume) is
# resynced onto it; the volume is then clean, and reads right with two
# other servers gone (so from the re-added member). nbd_auto_readd shows
# the automatic re-add of a mount and of vol serve; this one, the command.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-readd
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

MiB=1048576
URIS=()
for i in 0 1 2 3 4 5; do
	truncate -s 98M "$T/d$i.img"
	nbd_start "s$i" "" -- file "$T/d$i.img"
	URIS+=("$(nbd_uri "s$i")")
done
"$PONY" vol create -l raid6 -c 64K --assume-clean "${URIS[@]}" > /dev/null || fail "create"
size=$("$PONY" vol status --json "${URIS[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')
[ "$size" -ge $((300 * MiB)) ] || fail "volume of $size bytes: too small for several bitmap bits"
head -c $MiB /dev/urandom > "$T/a"
head -c $MiB /dev/urandom > "$T/b"
"$PONY" vol write -O $((150 * MiB)) -f "$T/a" "${URIS[@]}" || fail "write a"

# Server 5 killed; the volume written at 150 MiB (bit 2) without it.
nbd_kill s5 KILL
"$PONY" vol write --degraded -O $((150 * MiB)) -f "$T/b" "${URIS[@]}" 2> "$T/err" ||
	fail "degraded write with server 5 down: $(cat "$T/err")"
grep -q "${URIS[5]} left out" "$T/err" || fail "the absent server is not named: $(cat "$T/err")"
nbd_start s5 "${NBD_PORT[s5]}" -- file "$T/d5.img"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1
grep -Eq "^5 +(failed|missing|stale|removed)" "$T/out" ||
	fail "member 5 back before the re-add: $(cat "$T/out")"

"$PONY" vol re-add "${URIS[@]}" > "$T/out" 2> "$T/err" || fail "re-add: $(cat "$T/err")"
grep -qx "member 5 (${URIS[5]}) re-added: $((64 * MiB)) bytes resynced" "$T/out" ||
	fail "re-add resynced other than the one 64 MiB bit written: $(cat "$T/out")"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1 || fail "status after re-add: $(cat "$T/out")"
record_field STATE < "$T/out" | grep -qx clean || fail "not clean after re-add: $(cat "$T/out")"
# Two others gone: the bytes at 150 MiB come from member 5 and parity.
nbd_kill s0 KILL
nbd_kill s1 KILL
"$PONY" vol read --degraded -O $((150 * MiB)) -L $MiB "${URIS[@]}" 2> /dev/null | cmp - "$T/b" ||
	fail "the re-added member does not hold what was written without it"
pass
