# uring_lib.sh - sourced by tests/fuse's ring tests after tests/lib.sh: skips
# where the kernel has no FUSE over io_uring, makes $T (with l, u, w, m),
# restores the module parameter and unmounts at exit, and gives
# mount_union [OPTIONS] (a union of $T/l in the foreground at $T/m),
# counter NAME and counters (`pony fs requests` there).
require_root
require_fuse
require_cmd fusermount3 python3
PARAM=/sys/module/fuse/parameters/enable_uring
[ -w "$PARAM" ] || skip "the kernel has no FUSE over io_uring ($PARAM)"
ORIG=$(cat "$PARAM")

T=$(mktemp -d /tmp/pony-fuse-uring.XXXXXX)
PONY_PID=
uring_cleanup() {
	mountpoint -q "$T/m" 2>/dev/null && { fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"; }
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	echo "$ORIG" > "$PARAM"
	rm -rf "$T"
}
trap uring_cleanup EXIT
mkdir -p "$T"/{l,u,w,m}

mount_union() {
	rm -rf "$T/u" "$T/w"; mkdir -p "$T/u" "$T/w"
	fuse_daemon_start "$T/m" "$T/log" "pony union mount" "$PONY" union mount --foreground \
		--lower "$T/l" --upper "$T/u" --work "$T/w" --timeout 0 "$@" "$T/m"
}
counter() { "$PONY" fs requests "$T/m" | awk -v k="$1" '$1 == k { n = $2 } END { print n + 0 }'; }
counters() { "$PONY" fs requests "$T/m" | tr '\n' ' '; }
