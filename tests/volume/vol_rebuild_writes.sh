#!/usr/bin/env bash
# vol_rebuild_writes.sh - a mounted ponyfs keeps taking writes while a hot
# spare is rebuilt in its place. A RAID5 of four images, member 2 and the
# spare served by nbdkit (the spare through its rate filter at 2 MB/s, so
# the rebuild lasts many seconds); member 2's server is killed under a
# writer that writes and fsyncs a small file again and again. The daemon
# fails the member and the spare takes its place; while the log says the
# rebuild is under way, fsynced writes must go on completing (a write
# waiting on the volume set's lock, which the rebuild holds to its end,
# stalled the whole mount until the rebuild finished). Every file written
# reads back, and the rebuild finishes.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 nbdkit
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" vol-rebuild-writes
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

for i in 0 1 2 3; do truncate -s 48M "$T/m$i.img"; done
truncate -s 48M "$T/spare.img"
nbd_start s2 "" -- file "$T/m2.img"
nbd_start spare "" -- --filter=rate file "$T/spare.img" rate=16M
spare=$(nbd_uri spare)
members=("$T/m0.img" "$T/m1.img" "$(nbd_uri s2)" "$T/m3.img")
"$PONY" mkfs --data raid5 --assume-clean "${members[@]}" >/dev/null || fail "mkfs --data raid5"
"$PONY" vol add -d "$spare" "${members[@]}" >"$T/add.out" 2>&1 || fail "vol add (spare): $(cat "$T/add.out")"
pony_mount --commit 50 --member-timeout 2 "${members[@]}" "$spare"
head -c 4000000 /dev/urandom >"$T/big" && cp "$T/big" "$T/m/big" && "$PONY" sync "$T/m" || fail "write big"

# The writer: file N holds N, written and fsynced, one after another;
# each completion is a line in $T/done.
( n=0; while [ ! -e "$T/stop" ]; do
	printf '%s\n' "$n" | dd of="$T/m/f$((n % 50))" conv=fsync status=none 2>/dev/null &&
		echo "$n" >>"$T/done"
	n=$((n + 1))
done ) &
writer=$!
sleep 1
nbd_kill s2 KILL
for _ in $(seq 1 300); do grep -q "rebuild of member .* started" "$T/pony.log" && break; sleep 0.1; done
grep -q "rebuild of member .* started" "$T/pony.log" || fail "no rebuild started: $(cat "$T/pony.log")"
# While it lasts: writes complete (counted over 3 s well inside it).
before=$(wc -l <"$T/done")
sleep 3
after=$(wc -l <"$T/done")
running=yes
grep -q "rebuild of member .* finished" "$T/pony.log" && running=
touch "$T/stop"
wait "$writer"
[ -n "$running" ] || skip "the rebuild finished within 3 s: nothing measured (rate filter too fast?)"
[ "$after" -gt "$before" ] ||
	fail "no write completed in 3 s of the spare's rebuild ($before then $after): the mount stalled"
for _ in $(seq 1 900); do grep -q "rebuild of member .* finished" "$T/pony.log" && break; sleep 0.1; done
grep -q "rebuild of member .* finished" "$T/pony.log" || fail "the rebuild did not finish: $(tail "$T/pony.log")"
last=$(tail -1 "$T/done")
for ((k = last > 49 ? last - 49 : 0; k <= last; k++)); do
	[ "$(cat "$T/m/f$((k % 50))")" -ge "$k" ] 2>/dev/null || fail "f$((k % 50)) lost write $k"
done
cmp "$T/big" "$T/m/big" || fail "big differs after the rebuild"
pony_umount
pass
