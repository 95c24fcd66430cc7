#!/usr/bin/env bash
# layout_socket.sh - the layout control socket on a real mount
# (`pony mount --layout-socket`): a client gets a leased layout of a file by
# passing its descriptor, hears the recall pushed when the file is
# overwritten through the mount, sees RECALLED then EXPIRED after its
# return; a client killed while holding a lease has it returned when its
# connection closes; bad requests get errors (no descriptor: EBADF, a file
# of another filesystem: EXDEV, a wrong magic: EPROTO and a hang-up); a
# second daemon on a socket in use is refused at mount time, and the socket
# goes away with the mount.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
CLIENT=${LAYOUT_SOCKET_CLIENT:?the test client is built beside the tests}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-socket

S=$T/layout.sock
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
pony_mount --layout-socket "$S" "$T/img"
[ -S "$S" ] || fail "no socket at $S"

head -c 200000 /dev/urandom >"$T/m/file" || fail "write"
"$PONY" sync "$T/m" || fail "pony sync"

# Hold a lease; overwrite the file through the mount: the recall comes unasked.
"$CLIENT" hold "unix:$S" "$T/m/file" "$T/ready" 20 >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
[ -e "$T/ready" ] || fail "the holder got no layout: $(cat "$T/hold.out")"
head -c 200000 /dev/urandom >"$T/m/file" || fail "overwrite"
"$PONY" sync "$T/m" || fail "pony sync after the overwrite"
wait $holder || fail "holder: $(cat "$T/hold.out")"
lease=$(awk '/^lease/ {print $2}' "$T/hold.out")
[ -n "$lease" ] && [ "$lease" != 0 ] || fail "no lease: $(cat "$T/hold.out")"
grep -qx "recalled $lease" "$T/hold.out" || fail "no recall of $lease: $(cat "$T/hold.out")"
grep -qx "state recalled" "$T/hold.out" || fail "status after recall: $(cat "$T/hold.out")"
grep -qx "returned recalled" "$T/hold.out" || fail "return: $(cat "$T/hold.out")"
grep -qx "state expired" "$T/hold.out" || fail "status after return: $(cat "$T/hold.out")"

# A holder that dies: its connection's close returns the lease.
rm -f "$T/ready"
"$CLIENT" keep "unix:$S" "$T/m/file" "$T/ready" >"$T/keep.out" 2>&1 &
keeper=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
kept=$(awk '/^lease/ {print $2}' "$T/keep.out")
[ -n "$kept" ] || fail "keeper got no lease: $(cat "$T/keep.out")"
[ "$("$CLIENT" status "unix:$S" "$kept")" = "state held" ] || fail "the kept lease is not held"
kill -9 $keeper
wait $keeper 2>/dev/null
for _ in $(seq 50); do
	[ "$("$CLIENT" status "unix:$S" "$kept")" = "state expired" ] && break
	sleep 0.1
done
[ "$("$CLIENT" status "unix:$S" "$kept")" = "state expired" ] ||
	fail "lease $kept outlived its connection"

# Bad requests.
[ "$("$CLIENT" nofd "unix:$S")" = "error 9" ] || fail "a GET without a descriptor is not EBADF"
[ "$("$CLIENT" foreign "unix:$S" /etc/hostname)" = "error 18" ] ||
	fail "a GET of another filesystem's file is not EXDEV"
garbage=$(python3 - "$S" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(struct.pack("<IHHII", 0x12345678, 1, 2, 8, 5) + bytes(8))
h = s.recv(64)
magic, ver, typ, length, tag = struct.unpack("<IHHII", h[:16])
err = struct.unpack("<I", h[16:20])[0]
print(hex(typ), err, "closed" if s.recv(64) == b"" else "open")
PY
)
[ "$garbage" = "0xff 71 closed" ] || fail "a wrong magic is not EPROTO and a hang-up: $garbage"

# A second daemon (another filesystem) on the same socket: refused before mounting.
mkdir "$T/m2"
truncate -s 256M "$T/img2"
"$PONY" mkfs "$T/img2" >/dev/null || fail "mkfs img2"
expect_failure "$PONY" mount --layout-socket "$S" "$T/img2" "$T/m2"
mountpoint -q "$T/m2" && fail "the second mount went ahead"
# The first still serves.
[ "$("$CLIENT" status "unix:$S" 99999)" = "state expired" ] || fail "the first daemon stopped serving"

pony_umount
[ -e "$S" ] && fail "the socket outlived the mount"
pass
