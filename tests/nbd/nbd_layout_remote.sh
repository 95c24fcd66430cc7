#!/usr/bin/env bash
# nbd_layout_remote.sh - direct reads from another host (`pony fs cat
# --direct --server ADDR`, pony_layout_get_remote): a ponyfs on a RAID5 of
# four nbdkit servers (TLS with a pre-shared key) is mounted here with its
# layout service on TCP; a client in a second network namespace, and in a
# mount namespace where the mount is gone, gets layouts from the service
# and reads the bytes from the NBD servers, in parallel (their logs): the
# same bytes as written, all from the members (--stats); a lease that ran out while the file was
# rewritten on the mount's host is got again (the new bytes, regets > 0);
# with one server killed, its blocks are rebuilt from parity. Bad usage,
# a missing file and a wrong key are errors that say so.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_root
require_cmd fusermount3 unshare
READER=$1
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-layout-remote
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
. "$PONY_SRCDIR/tests/netns_lib.sh"
peer_up nbd_cleanup

printf 'host-b:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/psk"
printf 'host-b:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/wrong.psk"

# The members: four servers on this host's side of the veth, TLS required.
NBD_HOST=$HOST_IP
URIS=()
for i in 0 1 2 3; do
	nbd_start "s$i" "" -- --tls=require --tls-psk="$T/psk" --filter=log --filter=delay memory 64M \
		logfile="$T/rlog$i" delay-read=2ms
	URIS+=("nbds://host-b@$HOST_IP:${NBD_PORT[s$i]}/?tls-psk-file=$T/psk")
done
"$PONY" mkfs --data raid5 "${URIS[@]}" >/dev/null || fail "mkfs on the NBD members"
PORT=$(free_port)
A=$HOST_IP:$PORT
pony_mount --layout-listen "$A" --layout-psk "$T/psk" --layout-lease 1 "${URIS[@]}"

head -c 5000321 /dev/urandom >"$T/big"
cp "$T/big" "$T/m/big" || fail "write big"
truncate -s 3000000 "$T/holes"
head -c 70000 /dev/urandom | dd of="$T/holes" bs=1 seek=1000000 conv=notrunc status=none
cp --sparse=always "$T/holes" "$T/m/holes" || fail "write holes"
head -c 2000000 /dev/urandom >"$T/lease.old"
cp "$T/lease.old" "$T/m/lease" || fail "write lease"
"$PONY" sync "$T/m" || fail "pony sync"

# away CMD...: CMD on the other "host": its network namespace, and a mount
# namespace of its own where the mount is unmounted (it sees no mount).
away() {
	in_peer unshare --mount --propagation private sh -c \
		'umount -l "$1" || exit 99; mountpoint -q "$1" && exit 98; shift; exec "$@"' sh "$T/m" "$@"
}
stat_of() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$T/stats"; }

# Whole files, all from the members, in parallel: the servers' logs show
# reads on two servers in flight at once (each read takes 2 ms there).
for i in 0 1 2 3; do : >"$T/rlog$i"; done
away "$PONY" fs cat --direct --server "$A" --psk "$T/psk" --stats big >"$T/out" 2>"$T/stats" ||
	fail "remote cat big: $(cat "$T/stats")"
python3 - "$T"/rlog{0,1,2,3} <<'PY' || fail "the members were not read in parallel"
import re, sys
from datetime import datetime
spans = []                                 # (start, end, server) of each read
for n, path in enumerate(sys.argv[1:]):
    start = {}
    for line in open(path, errors="replace"):
        m = re.match(r"(\S+ \S+) connection=(\d+) (\.\.\.)?Read id=(\d+)", line)
        if not m:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
        key = (m.group(2), m.group(4))
        if m.group(3):
            if key in start:
                spans.append((start.pop(key), t, n))
        else:
            start[key] = t
spans.sort()
overlap = any(b[0] < a[1] and b[2] != a[2] for i, a in enumerate(spans) for b in spans[i + 1:i + 64])
print("%d reads on %d servers, in parallel across servers: %s" % (len(spans), len({s[2] for s in spans}), overlap))
sys.exit(0 if overlap and len({s[2] for s in spans}) == 4 else 1)
PY
cmp "$T/out" "$T/big" || fail "remote cat big differs from what was written"
[ "$(stat_of "bytes from members")" -ge 5000321 ] || fail "big not from the members: $(cat "$T/stats")"
[ "$(stat_of "through the mount")" = 0 ] || fail "read through a mount: $(cat "$T/stats")"
[ "$(stat_of "blocks rebuilt")" = 0 ] || fail "blocks rebuilt with every member up: $(cat "$T/stats")"
away "$PONY" fs cat --direct --server "$A" --psk "$T/psk" --stats /holes >"$T/out" 2>"$T/stats" ||
	fail "remote cat holes: $(cat "$T/stats")"
cmp "$T/out" "$T/holes" || fail "remote cat holes differs"
[ "$(stat_of zeros)" -gt 0 ] || fail "the holes were not zeros: $(cat "$T/stats")"

# Errors: usage (2), a missing file and a wrong key (1).
expect_usage_error "$PONY" fs cat --direct --server "$A" big
expect_usage_error "$PONY" fs cat --server "$A" --psk "$T/psk" big
expect_usage_error "$PONY" fs cat --direct --psk "$T/psk" big
expect_usage_error "$PONY" fs cat --direct --server "$A" --psk "$T/psk" --insecure big
away "$PONY" fs cat --direct --server "$A" --psk "$T/psk" nosuch >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "a missing file did not exit 1"
grep -q "nosuch" "$T/err" || fail "the missing file is not named: $(cat "$T/err")"
away "$PONY" fs cat --direct --server "$A" --psk "$T/wrong.psk" big >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "a wrong key did not exit 1"
grep -q "refused" "$T/err" || fail "a wrong key is not said: $(cat "$T/err")"
[ -s "$T/out" ] && fail "a wrong key printed bytes"

# A lease that ran out while the file was rewritten here: got again, the new bytes.
head -c 2000000 /dev/urandom >"$T/lease.new"
away "$READER" "$A" "$T/psk" lease "$T/lease.new" "$T/ready" "$T/go" >"$T/reader.out" 2>&1 &
reader=$!
for _ in $(seq 200); do [ -e "$T/ready" ] && break; sleep 0.05; done
[ -e "$T/ready" ] || fail "the remote reader got no layout: $(cat "$T/reader.out")"
cp "$T/lease.new" "$T/m/lease" && "$PONY" sync "$T/m" || fail "rewrite lease"
sleep 2.5
touch "$T/go"
wait $reader || fail "remote read after the rewrite: $(cat "$T/reader.out")"
regets=$(awk '/^regets/ {print $2}' "$T/reader.out")
[ "${regets:-0}" -ge 1 ] || fail "the expired layout was not got again: $(cat "$T/reader.out")"

# One server killed: its blocks are rebuilt from parity, the bytes the same.
nbd_kill s2 KILL
away "$PONY" --member-timeout 5 fs cat --direct --server "$A" --psk "$T/psk" --stats big \
	>"$T/out" 2>"$T/stats" || fail "remote cat with s2 gone: $(cat "$T/stats")"
cmp "$T/out" "$T/big" || fail "remote cat with s2 gone differs"
[ "$(stat_of "blocks rebuilt")" -gt 0 ] || fail "nothing rebuilt with s2 gone: $(cat "$T/stats")"
pony_umount
pass
