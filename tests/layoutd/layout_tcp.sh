#!/usr/bin/env bash
# layout_tcp.sh - the layout service across hosts (`pony mount
# --layout-listen ADDR --layout-psk FILE`): a client in a second network
# namespace (another host, as far as the network goes) reaches the mount's
# daemon over a veth pair, in TLS 1.3 with a pre-shared key, names files
# by path: gets a layout, the volume's members, a lease whose recall is
# pushed when the file is overwritten on the mount's host. A wrong key and
# a client in the clear are refused; --insecure serves in the clear; a
# listener without a key or --insecure, or a key file that is not one, is
# the mount command's error.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_root
CLIENT=${LAYOUT_SOCKET_CLIENT:?the test client is built beside the tests}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-tcp
. "$PONY_SRCDIR/tests/netns_lib.sh"
peer_up ponyfs_cleanup

PORT=$(free_port)
printf 'host-b:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/psk"
printf 'host-b:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/wrong.psk"

# Usage: a listener needs a key or --insecure; a bad key file is named.
for i in 0 1 2 3; do truncate -s 64M "$T/m$i.img"; done
imgs=("$T/m0.img" "$T/m1.img" "$T/m2.img" "$T/m3.img")
"$PONY" mkfs --data raid5 "${imgs[@]}" >/dev/null || fail "mkfs"
expect_usage_error "$PONY" mount --layout-listen "$HOST_IP:$PORT" "${imgs[@]}" "$T/m"
echo "not a key" >"$T/bad.psk"
"$PONY" mount --layout-listen "$HOST_IP:$PORT" --layout-psk "$T/bad.psk" "${imgs[@]}" "$T/m" \
	2>"$T/err" && fail "a mount with a bad key file succeeded"
grep -q "bad.psk" "$T/err" || fail "the bad key file is not named: $(cat "$T/err")"
mountpoint -q "$T/m" && fail "mounted despite the bad key file"

pony_mount --layout-listen "$HOST_IP:$PORT" --layout-psk "$T/psk" "${imgs[@]}"
head -c 300000 /dev/urandom >"$T/m/file" || fail "write"
"$PONY" sync "$T/m" || fail "sync"
A="tcp:$HOST_IP:$PORT"

out=$(in_peer env PONY_LAYOUT_PSK="$T/psk" "$CLIENT" layout "$A" file) || fail "layout over TCP: $out"
[ "$out" = "extents 1 size 300000" ] || fail "layout over TCP: $out"
in_peer env PONY_LAYOUT_PSK="$T/psk" "$CLIENT" topology "$A" >"$T/topo" || fail "topology: $(cat "$T/topo")"
head -1 "$T/topo" | grep -qx "level raid5 members 4" || fail "topology: $(cat "$T/topo")"
grep -qx "member 0 $T/m0.img" "$T/topo" || fail "members not named: $(cat "$T/topo")"
out=$(in_peer env PONY_LAYOUT_PSK="$T/psk" "$CLIENT" layout "$A" nosuch)
[ "$out" = "error 2" ] || fail "a missing path is not ENOENT: $out"

# A lease from the other host; the overwrite here pushes its recall there.
in_peer env PONY_LAYOUT_PSK="$T/psk" "$CLIENT" hold "$A" file "$T/ready" 20 >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
[ -e "$T/ready" ] || fail "no lease over TCP: $(cat "$T/hold.out")"
head -c 300000 /dev/urandom >"$T/m/file" && "$PONY" sync "$T/m" || fail "overwrite"
wait $holder || fail "holder over TCP: $(cat "$T/hold.out")"
lease=$(awk '/^lease/ {print $2}' "$T/hold.out")
grep -qx "recalled $lease" "$T/hold.out" || fail "no recall over TCP: $(cat "$T/hold.out")"
grep -qx "returned recalled" "$T/hold.out" || fail "return over TCP: $(cat "$T/hold.out")"

# A wrong key, and no TLS at all: refused.
out=$(in_peer env PONY_LAYOUT_PSK="$T/wrong.psk" "$CLIENT" layout "$A" file)
[ "$out" = "connect Permission denied" ] || fail "a wrong key got: $out"
out=$(in_peer timeout 20 "$CLIENT" layout "$A" file)
case "$out" in extents*) fail "a client in the clear got a layout from a TLS listener" ;; esac
pony_umount

# --insecure: the same in the clear.
PORT2=$(free_port)
pony_mount --layout-listen "$HOST_IP:$PORT2" --insecure "${imgs[@]}"
out=$(in_peer "$CLIENT" layout "tcp:$HOST_IP:$PORT2" file) || fail "insecure layout: $out"
[ "$out" = "extents 1 size 300000" ] || fail "insecure layout: $out"
pony_umount
pass
