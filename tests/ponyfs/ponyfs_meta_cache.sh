#!/usr/bin/env bash
# ponyfs_meta_cache.sh - -o meta_cache=SIZE bounds the daemon's memory: it
# keeps nothing per file that is neither open nor dirty beyond SQLite's page
# cache, so a find + stat of 100,000 files grows the daemon's resident set
# by about that much. With meta_cache=1M it grows by under 4 MiB, and by
# less than half what the default (16M) lets it grow; a bad size is refused.
# Usage: ponyfs_meta_cache.sh PONYFS_POPULATE
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3
POPULATE=$1
[ -x "$POPULATE" ] || fail "no ponyfs_populate at $POPULATE"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-meta-cache
truncate -s 1G "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
"$POPULATE" "$T/img" 100000 >/dev/null || fail "ponyfs_populate"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# growth [OPTION...]: KiB the daemon grew by over a find + stat of every file.
growth() {
	local pid before after
	pony_mount "$@" "$T/img"
	pid=$(pgrep -f "pony mount --foreground .*$T/img") || fail "no daemon"
	before=$(rss_kib "$pid")
	n=$(find "$T/m/pre" -type f -printf '%s\n' | wc -l)
	[ "$n" = 100000 ] || fail "find saw $n files, not 100000"
	after=$(rss_kib "$pid")
	pony_umount
	echo $((after - before))
}
if [ "${PONY_SANITIZE:-none}" = none ]; then
	small=$(growth -o meta_cache=1M)
	default=$(growth)
	echo "# daemon growth over 100,000 stats: $small KiB with meta_cache=1M, $default KiB by default"
	[ "$small" -lt 4096 ] || fail "meta_cache=1M: the daemon grew by $small KiB"
	[ $((small * 2)) -lt "$default" ] || fail "meta_cache=1M grew $small KiB, the default $default KiB"
else
	# ASan keeps freed memory in quarantine (256 MiB): RSS says nothing here.
	echo "# memory bounds not measured under -fsanitize=$PONY_SANITIZE (the plain build measures them)"
	growth -o meta_cache=1M >/dev/null
fi

out=$("$PONY" mount -o meta_cache=1 "$T/img" "$T/m" 2>&1) && fail "meta_cache=1 was taken"
grep -q "meta_cache" <<<"$out" || fail "no word on meta_cache: $out"
pass
