#!/usr/bin/env bash
# nbd_auto_readd.sh - `pony mount --auto-readd`: a ponyfs on a RAID5 of
# four nbdkit servers (file plugin: an export keeps its bytes across a
# restart) under a write load of fsynced files. One server is SIGKILLed:
# its member fails, the writes go on degraded; the server is restarted on
# the same port and the mount re-adds the member by itself, resyncing only
# what the write-intent bitmap marks (fewer bytes than the volume holds),
# the writes going on meanwhile. Every acknowledged file reads back the
# same; then, unmounted, another server is killed and the volume mounted
# degraded: every file still reads back, so the re-added member holds the
# data. Then `pony vol serve --auto-readd` (the plugin's auto-readd=true):
# a member server killed while nbdcopy writes and restarted is re-added
# while the volume is served: stopped, the volume is clean with every
# member working, and reads back the same with another member gone.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-auto-readd
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

URIS=()
for i in 0 1 2 3; do
	truncate -s 96M "$T/d$i.img"
	nbd_start "s$i" "" -- file "$T/d$i.img"
	URIS+=("$(nbd_uri "s$i")")
done
"$PONY" mkfs --data raid5 --metadata mirror "${URIS[@]}" >/dev/null || fail "mkfs"
size=$("$PONY" vol status --json "${URIS[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')
"$PONY" --member-timeout 2 mount --auto-readd --help | grep -q -- "--auto-readd" ||
	fail "mount --help does not tell of --auto-readd"
pony_mount --member-timeout 2 --auto-readd "${URIS[@]}"
head -c 20000000 /dev/urandom >"$T/base"
cp "$T/base" "$T/m/base" && "$PONY" sync "$T/m" || fail "write base"

# The load: files of 64 KiB to 512 KiB, each fsynced, then listed with its
# SHA-256 in $T/acked (acknowledged); an error ends it non-zero.
mkdir "$T/m/load" || fail "mkdir load"
: >"$T/acked"
python3 - "$T/m/load" "$T/acked" "$T/stop" <<'PY' >"$T/load.out" 2>&1 &
import hashlib, os, sys
d, acked, stop = sys.argv[1:]
with open(acked, "w") as out:
    i = 0
    while not os.path.exists(stop) or i < 20:
        data = os.urandom(65536 * (1 + i % 8))
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        out.write("f%05d %s\n" % (i, hashlib.sha256(data).hexdigest()))
        out.flush()
        i += 1
PY
load=$!
acked() { wc -l <"$T/acked"; }
for _ in $(seq 100); do [ "$(acked)" -ge 5 ] && break; sleep 0.1; done
[ "$(acked)" -ge 5 ] || fail "the load did not start: $(cat "$T/load.out")"

nbd_kill s1 KILL
for _ in $(seq 100); do grep -q "member 1 .* failed" "$T/pony.log" && break; sleep 0.1; done
grep -q "member 1 .* failed" "$T/pony.log" || fail "member 1 not failed: $(cat "$T/pony.log")"
before=$(acked)
sleep 2
[ "$(acked)" -gt "$before" ] || fail "the writes stopped with member 1 gone"
kill -0 $load 2>/dev/null || fail "the load ended: $(cat "$T/load.out")"

nbd_start s1 "${NBD_PORT[s1]}" -- file "$T/d1.img"
for _ in $(seq 300); do grep -q "member 1 .* re-added" "$T/pony.log" && break; sleep 0.1; done
grep -q "member 1 .* re-added" "$T/pony.log" || fail "member 1 not re-added: $(cat "$T/pony.log")"
resynced=$(sed -n 's/.*member 1 .* re-added: \([0-9]*\) bytes resynced.*/\1/p' "$T/pony.log" | tail -1)
[ -n "$resynced" ] && [ "$resynced" -gt 0 ] && [ "$resynced" -lt "$size" ] ||
	fail "resynced ${resynced:-?} bytes, not the bitmap's regions only: $(cat "$T/pony.log")"
before=$(acked)
sleep 1
touch "$T/stop"
wait $load || fail "an acknowledged write failed: $(cat "$T/load.out")"
[ "$(acked)" -gt "$before" ] || fail "no writes after the re-add"

check_all() {
	cmp "$T/base" "$T/m/base" || fail "base differs ($1)"
	while read -r name sum; do
		[ "$(sha256sum <"$T/m/load/$name" | cut -d' ' -f1)" = "$sum" ] ||
			fail "acknowledged $name lost or damaged ($1)"
	done <"$T/acked"
}
check_all "after the re-add"
pony_umount
"$PONY" vol status "${URIS[@]}" >"$T/out" 2>&1 || fail "status: $(cat "$T/out")"
record_field STATE <"$T/out" | grep -qx clean || fail "not clean after the re-add: $(cat "$T/out")"

# Another member gone: member 1's blocks are needed, and hold the data.
nbd_kill s2 KILL
pony_mount --degraded --member-timeout 2 "${URIS[@]}"
check_all "with member 2 gone"
pony_umount
echo "$(acked) files acknowledged, $resynced bytes resynced"

# pony vol serve --auto-readd.
require_cmd nbdcopy
nbd_start s2 "${NBD_PORT[s2]}" -- file "$T/d2.img"
"$PONY" vol create -f -l 5 "${URIS[@]}" >/dev/null 2>&1 || fail "vol create"
port=$(nbd_free_port)
NBD_PORT[vol]=$port
"${PLUGIN_ENV[@]}" "$PONY" --member-timeout 2 vol serve --auto-readd --nbd "127.0.0.1:$port" "${URIS[@]}" \
	2>>"$T/nbdkit-vol.log" &
NBD_PID[vol]=$!
nbd_wait vol "$port"
head -c 100000000 /dev/urandom >"$T/data"
nbdcopy --flush "$T/data" "$(nbd_uri vol)" &
copy=$!
sleep 0.2
nbd_kill s3 KILL
wait $copy || fail "nbdcopy with member 3 gone"
grep -q "member 3 .* failed" "$T/nbdkit-vol.log" ||
	fail "member 3 did not fail under the write: $(cat "$T/nbdkit-vol.log")"
nbd_start s3 "${NBD_PORT[s3]}" -- file "$T/d3.img"
sleep 12                        # backoff: a try within 8 s of the restart
nbd_kill vol
"$PONY" vol status "${URIS[@]}" >"$T/out" 2>&1 || fail "status after serve: $(cat "$T/out")"
record_field STATE <"$T/out" | grep -qx clean || fail "member 3 not re-added while served: $(cat "$T/out")"
nbd_kill s0 KILL
"$PONY" vol read --degraded -L 100000000 "${URIS[@]}" 2>/dev/null | cmp - "$T/data" ||
	fail "served bytes lost with member 0 gone after the re-add"
pass
