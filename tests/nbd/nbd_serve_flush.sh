#!/usr/bin/env bash
# nbd_serve_flush.sh - the flush nbdkit-pony-plugin.so advertises is real: a
# RAID5 served by the plugin over four member servers that each hold writes
# in a volatile cache (nbdkit's cache filter, cache=writeback: a write reaches
# the image file only when flushed, as a disk's write cache). nbdcopy writes
# through the plugin and flushes at its end (--flush); then every server is
# killed (SIGKILL: the members' caches are lost, as in a power cut) and the
# members restarted on their images: `pony vol read` must find every byte.
# It fails if the plugin's flush does not reach the members.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-serve-flush
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
require_cmd nbdcopy
plugin=${PONY_NBDKIT_PLUGIN:-$(dirname "$PONY")/src/nbdkit/nbdkit-pony-plugin.so}
[ -f "$plugin" ] || skip "nbdkit-pony-plugin.so was not built (no nbdkit-plugin-dev)"

# members_start: the four member servers, each its image behind a volatile cache.
members_start() {
	local i
	URIS=()
	for i in 0 1 2 3; do
		nbd_start "s$i" "${NBD_PORT[s$i]:-}" -- --filter=cache file "$T/d$i.img" cache=writeback
		URIS+=("$(nbd_uri "s$i")")
	done
}
for i in 0 1 2 3; do truncate -s 64M "$T/d$i.img"; done
members_start
"$PONY" vol create -l 5 --assume-clean "${URIS[@]}" >/dev/null || fail "vol create on the members"
members=()
for u in "${URIS[@]}"; do members+=("member=$u"); done
nbd_start_plugin front "" -- "$plugin" "${members[@]}"
head -c 24M /dev/urandom >"$T/data"
nbdcopy --flush "$T/data" "$(nbd_uri front)" || fail "nbdcopy --flush through the plugin"
for s in front s0 s1 s2 s3; do nbd_kill "$s" KILL; done
members_start
"$PONY" vol read -L 24M "${URIS[@]}" >"$T/back" 2>"$T/read.err" || fail "vol read: $(cat "$T/read.err")"
cmp "$T/back" "$T/data" || fail "bytes flushed through the plugin were lost with the members' caches"
pass
