#!/usr/bin/env bash
# nbd_multi_conn.sh - a member on a server that advertises multi-conn is
# reached over several connections, and the requests go over all of them;
# one that does not (nbdkit's multi-conn filter, mode disable) gets one
# connection only, as the protocol asks: a flush on one connection then
# covers only that connection's writes. Counted by the servers themselves
# (nbdkit's log filter names each request's connection); the bytes read
# back are the ones written either way.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-multi-conn
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

# conns LOG: the connections that carried a write; opened LOG: those opened.
conns() { grep -aE " Write id=" "$1" | sed 's/.*connection=\([0-9]*\) .*/\1/' | sort -u | wc -l; }
opened() { grep -ac " Connect export=" "$1"; }

head -c 8M /dev/urandom > "$T/data"
nbd_start multi "" -- --filter=log memory 64M logfile="$T/multi.log"
nbd_start single "" -- --filter=log --filter=multi-conn memory 64M logfile="$T/single.log" \
	multi-conn-mode=disable
nbdinfo --json "$(nbd_uri multi)" | grep -q '"can_multi_conn": true' ||
	fail "the memory plugin does not advertise multi-conn: the test tests nothing"
nbdinfo --json "$(nbd_uri single)" | grep -q '"can_multi_conn": false' ||
	fail "the multi-conn filter did not take multi-conn away"
"$PONY" vol create -l 1 "$(nbd_uri multi)" "$(nbd_uri single)" > /dev/null || fail "create"
: > "$T/multi.log"
: > "$T/single.log"
"$PONY" vol write -f "$T/data" "$(nbd_uri multi)" "$(nbd_uri single)" || fail "write"
cp "$T/multi.log" "$T/multi.write.log"
cp "$T/single.log" "$T/single.write.log"
"$PONY" vol read -L 8M "$(nbd_uri multi)" "$(nbd_uri single)" | cmp - "$T/data" || fail "read back"

# The write's one open of the volume: four connections (pony's most) to
# the multi-conn server, and the writes spread over all four; one
# connection to the other.
[ "$(opened "$T/multi.write.log")" -eq 4 ] ||
	fail "$(opened "$T/multi.write.log") connections to the multi-conn server, not 4"
[ "$(conns "$T/multi.write.log")" -eq 4 ] ||
	fail "writes on $(conns "$T/multi.write.log") of the multi-conn server's 4 connections"
[ "$(opened "$T/single.write.log")" -eq 1 ] ||
	fail "$(opened "$T/single.write.log") connections to the server without multi-conn, not 1"
pass
