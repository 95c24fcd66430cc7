#!/usr/bin/env bash
# nbd_member_timeout.sh - --member-timeout's default is 30 s: a server
# that stops answering (SIGSTOP) in the middle of a write, with no
# --member-timeout given, is failed after about 30 s (not sooner, not
# much later), the write goes on degraded, and the volume reads back the
# same. nbd_faults shows the option given (1 s); this one, the default.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-member-timeout
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

head -c 16M /dev/urandom > "$T/data"
URIS=()
for i in 0 1 2 3; do
	nbd_start "s$i" "" -- --filter=log --filter=delay memory 64M logfile="$T/log$i" delay-write=20ms
	URIS+=("$(nbd_uri "s$i")")
done
"$PONY" vol create -l 5 "${URIS[@]}" > /dev/null || fail "create"
: > "$T/log3"
"$PONY" vol write -f "$T/data" "${URIS[@]}" 2> "$T/err" &
writer=$!
# Stopped once the data is being written (the superblocks are a few writes).
for _ in $(seq 1 200); do [ "$(grep -c " Write id" "$T/log3")" -ge 16 ] && break; sleep 0.05; done
kill -0 "$writer" 2>/dev/null || fail "the write ended before the server was stopped"
kill -STOP "${NBD_PID[s3]}"
start=$(date +%s.%N)
wait "$writer" || fail "write with a silent server: $(cat "$T/err")"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
kill -CONT "${NBD_PID[s3]}"
echo "the silent member failed the write's wait for ${took} s"
# The deadline runs from the oldest request in flight, sent at most one
# delay (20 ms) before the stop; a loaded machine may add a few seconds.
awk -v t="$took" 'BEGIN { exit !(t >= 29) }' || fail "failed after ${took} s: sooner than the 30 s default"
awk -v t="$took" 'BEGIN { exit !(t < 45) }' || fail "failed after ${took} s: not at the 30 s default"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1
grep -Eq "^3 +failed " "$T/out" || fail "the silent member was not failed: $(cat "$T/out")"
"$PONY" vol read -L 16M "${URIS[@]}" 2> /dev/null | cmp - "$T/data" || fail "read back after the timeout"
pass
