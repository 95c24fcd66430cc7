#!/usr/bin/env bash
# nbd_ponyfs.sh - ponyfs on a RAID6 of six NBD exports (nbdkit memory
# servers on loopback): mkfs and mount by URI, files written, unmounted,
# the volume reassembled clean from the URIs, mounted again with every
# byte the same, fsck clean; the same as a daemon. Then a server is killed
# (SIGKILL) while files are written and fsynced, then a second one: the
# mount goes on degraded, names both failed members in its log, and after
# a remount on the four left every file whose fsync returned reads back
# whole (RAID6 through two server losses).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-ponyfs
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

nbd_six memory 96M
"$PONY" mkfs --data raid6 --metadata mirror "${URIS[@]}" > "$T/out" 2>&1 || fail "mkfs: $(cat "$T/out")"
head -c 3000000 /dev/urandom > "$T/big"
pony_mount "${URIS[@]}"
cp "$T/big" "$T/m/big" || fail "write big"
mkdir "$T/m/dir" || fail "mkdir"
for i in $(seq 1 20); do echo "small file $i" > "$T/m/dir/f$i" || fail "write f$i"; done
pony_umount

"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1 || fail "status after unmount: $(cat "$T/out")"
record_field STATE <"$T/out" | grep -qx clean || fail "not clean: $(cat "$T/out")"
grep -Eq "^5 +ok +nbd://127.0.0.1:" "$T/out" || fail "members not named by URI: $(cat "$T/out")"
# Any order: the superblocks place the members.
rev=("${URIS[5]}" "${URIS[4]}" "${URIS[3]}" "${URIS[2]}" "${URIS[1]}" "${URIS[0]}")
pony_mount "${rev[@]}"
cmp "$T/big" "$T/m/big" || fail "big differs after remount"
for i in $(seq 1 20); do
	[ "$(cat "$T/m/dir/f$i")" = "small file $i" ] || fail "f$i differs after remount"
done
pony_umount
"$PONY" fsck "${URIS[@]}" > "$T/out" 2>&1 || fail "fsck: $(cat "$T/out")"

# As a daemon (it forks after connecting: the connections serve the child).
"$PONY" mount "${URIS[@]}" "$T/m" 2> "$T/err" || fail "daemon mount: $(cat "$T/err")"
cmp "$T/big" "$T/m/big" || fail "big differs through the daemon"
cp "$T/big" "$T/m/big2" && sync "$T/m/big2" || fail "write through the daemon"
fusermount3 -u "$T/m" || fail "unmount the daemon"
# Its last commit comes after the unmount; URIs have no lock to wait on.
for _ in $(seq 1 100); do pgrep -f -- "mount ${URIS[0]} " > /dev/null || break; sleep 0.1; done
pgrep -f -- "mount ${URIS[0]} " > /dev/null && fail "the daemon did not exit after unmount"

# A server lost mid-write: files acknowledged by fsync survive it.
: > "$T/pony.log"
pony_mount "${URIS[@]}"
: > "$T/acked"
(
	for i in $(seq 1 60); do
		head -c 200000 "$T/big" > "$T/m/w$i" && sync "$T/m/w$i" && echo "$i" >> "$T/acked" || exit 1
	done
) &
writer=$!
for _ in $(seq 1 100); do [ "$(wc -l < "$T/acked")" -ge 5 ] && break; sleep 0.05; done
kill -0 "$writer" 2>/dev/null || fail "the writer ended before the server was killed"
nbd_kill s2 KILL
# A second server lost later in the same write: RAID6 keeps every byte.
for _ in $(seq 1 300); do [ "$(wc -l < "$T/acked")" -ge 20 ] && break; sleep 0.05; done
kill -0 "$writer" 2>/dev/null || fail "the writer ended before the second server was killed"
nbd_kill s4 KILL
wait "$writer" || fail "writes failed after two of six servers died"
[ "$(wc -l < "$T/acked")" -eq 60 ] || fail "only $(wc -l < "$T/acked") files acknowledged"
cmp <(head -c 200000 "$T/big") "$T/m/w60" || fail "w60 differs in the degraded mount"
pony_umount
for i in 2 4; do
	grep -q "member $i (nbd://127.0.0.1:${NBD_PORT[s$i]}/) failed" "$T/pony.log" ||
		fail "lost member $i is not named in the log: $(cat "$T/pony.log")"
done

four=("${URIS[0]}" "${URIS[1]}" "${URIS[3]}" "${URIS[5]}")
pony_mount --degraded "${four[@]}"
while read -r i; do
	cmp <(head -c 200000 "$T/big") "$T/m/w$i" || fail "acknowledged file w$i lost or damaged"
done < "$T/acked"
cmp "$T/big" "$T/m/big" || fail "big differs on four members"
pony_umount
pass
