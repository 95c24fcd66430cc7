#!/usr/bin/env bash
# nbd_faults.sh - NBD members failing under a volume, with nbdkit's own
# filters and signals, never a mock: a member whose reads fail (the error
# filter: EIO at 100%, and at a rate of 30%) is read around from parity;
# one whose writes fail is failed and the write goes on; latency
# (the delay filter) slows a member without failing it; a server that
# stops answering (SIGSTOP) is failed after --member-timeout and the write
# goes on without it; a server that comes back with another volume's
# member on its port is refused by member UUID. Every byte written reads
# back the same.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-faults
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

head -c 8M /dev/urandom > "$T/data"
readback() { "$PONY" vol read -L 8M "$@" 2> "$T/read.err" | cmp - "$T/data"; }

# Reads failing on member 3 (once its trigger file exists, after the mount
# read the superblocks): ponyfs's reads are served from parity.
nbd_six --filter=log --filter=error memory 64M logfile="$T/log%i" error=EIO error-pread-rate=100% error-pwrite-rate=100% \
	error-pread-file="$T/rtrig%i" error-pwrite-file="$T/wtrig%i"
"$PONY" mkfs --data raid6 --metadata mirror "${URIS[@]}" > /dev/null || fail "mkfs"
pony_mount "${URIS[@]}"
cp "$T/data" "$T/m/data" || fail "write through the mount"
pony_umount
pony_mount "${URIS[@]}"
touch "$T/rtrig3"
cmp "$T/data" "$T/m/data" || fail "read back with member 3 failing every read"
grep -q "Read .*return=-1 error=EIO" "$T/log3" || fail "no read of member 3 failed: the test tested nothing"
pony_umount
rm "$T/rtrig3"
# Writes failing on member 1 (every one: at a lower rate, whether a write
# of its superblock or bitmap fails, which fails the member, or only data
# writes, which its bad-block log takes, is chance): it is failed, the
# write goes on degraded.
touch "$T/wtrig1"
"$PONY" vol write -f "$T/data" "${URIS[@]}" 2> "$T/err" || fail "write with member 1 failing: $(cat "$T/err")"
rm "$T/wtrig1"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1
grep -Eq "^1 +failed " "$T/out" || fail "member 1 not failed after write errors: $(cat "$T/out")"
readback "${URIS[@]}" || fail "read back after member 1 failed"
for i in 0 1 2 3 4 5; do nbd_kill "s$i"; done

# Reads failing at a rate (30%) on member 2 of a RAID5 of three: each read
# that fails is served from the other two, every byte the same, through
# the mount and through the volume alone (the mount could also repair
# from its checksums); the server's log shows reads of member 2 both
# failing and not.
for i in 0 1 2; do truncate -s 64M "$T/e$i.img"; done
nbd_start e0 "" -- file "$T/e0.img"
nbd_start e1 "" -- file "$T/e1.img"
nbd_start e2 "" -- --filter=log --filter=error file "$T/e2.img" logfile="$T/elog" error=EIO \
	error-pread-rate=30% error-pread-file="$T/etrig"
e=("$(nbd_uri e0)" "$(nbd_uri e1)" "$(nbd_uri e2)")
"$PONY" mkfs --data raid5 "${e[@]}" > /dev/null || fail "mkfs on the RAID5"
pony_mount "${e[@]}"
cp "$T/data" "$T/m/data" || fail "write through the RAID5's mount"
pony_umount
# Failing once mounted: an assembly whose superblock read fails is refused.
pony_mount "${e[@]}"
: > "$T/elog"
touch "$T/etrig"
cmp "$T/data" "$T/m/data" || fail "read back with 30% of member 2's reads failing"
pony_umount
# The volume engine alone (no ponyfs checksums to repair from): every byte
# of the volume read with the faults equals the volume read without them.
"$PONY" vol read "${e[@]}" > "$T/vol.faulty" 2> "$T/read.err" ||
	fail "pony vol read with 30% of member 2's reads failing: $(cat "$T/read.err")"
rm "$T/etrig"
"$PONY" vol read "${e[@]}" > "$T/vol.clean" 2> "$T/read.err" || fail "pony vol read: $(cat "$T/read.err")"
cmp -s "$T/vol.faulty" "$T/vol.clean" || fail "the volume read with 30% of member 2's reads failing differs"
grep -aq "Read .*return=-1 error=EIO" "$T/elog" || fail "no read of member 2 failed: the test tested nothing"
grep -aq "Read .*return=0" "$T/elog" || fail "every read of member 2 failed: not a rate"
for i in 0 1 2; do nbd_kill "e$i"; done

# Latency alone fails nothing; a server that stops answering is failed after the timeout.
for i in 0 1 2 3 4 5; do truncate -s 64M "$T/m$i.img"; done
nbd_six --filter=log --filter=delay file "$T/m%i.img" logfile="$T/dlog%i" delay-write=20ms \
	delay-read=5ms
"$PONY" vol create -l 6 "${URIS[@]}" > /dev/null || fail "create (delayed)"
"$PONY" vol write -f "$T/data" "${URIS[@]}" || fail "write (delayed)"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1 || fail "latency failed a member: $(cat "$T/out")"
: > "$T/dlog4"
"$PONY" --member-timeout 1 vol write -f "$T/data" "${URIS[@]}" 2> "$T/err" &
writer=$!
# Stopped once the data is being written (the superblocks are a few writes).
for _ in $(seq 1 200); do [ "$(grep -c " Write id" "$T/dlog4")" -ge 16 ] && break; sleep 0.05; done
kill -0 "$writer" 2>/dev/null || fail "the write ended before the server was stopped"
kill -STOP "${NBD_PID[s4]}"
start=$(date +%s)
wait "$writer" || fail "write with a silent server: $(cat "$T/err")"
[ $(($(date +%s) - start)) -lt 30 ] || fail "the write waited for the silent server"
kill -CONT "${NBD_PID[s4]}"
"$PONY" vol status "${URIS[@]}" > "$T/out" 2>&1
grep -Eq "^4 +failed " "$T/out" || fail "the silent member was not failed: $(cat "$T/out")"
readback "${URIS[@]}" || fail "read back after the timeout"

# Member 2's server comes back on its port serving another volume's member 2.
for i in 0 1 2 3 4 5; do truncate -s 64M "$T/o$i.img"; done
"$PONY" vol create -l 6 "$T"/o{0,1,2,3,4,5}.img > /dev/null || fail "create the other volume"
nbd_kill s2 KILL
nbd_start s2 "${NBD_PORT[s2]}" -- file "$T/o2.img"
"$PONY" vol assemble "${URIS[@]}" > "$T/out" 2> "$T/err" && fail "assembled with another volume's member"
grep -q "nbd://127.0.0.1:${NBD_PORT[s2]}/: a member of another pony volume" "$T/err" ||
	fail "the impostor is not named: $(cat "$T/err")"
pass
