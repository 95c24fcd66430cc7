#!/usr/bin/env bash
# tests/union/union_xattr_walk.sh - a tree walk's xattr queries, as podman's
# layer diff makes them (containers/storage's naive diff, used whenever a
# mount_program is set: per file lstat, getxattr security.capability, then
# listxattr), answered by pony-overlayfs as the kernel's overlayfs answers
# them over the same layers, twice over (the second walk is served by the
# union's record of xattr-less lower files), on a read-only union of lowers
# and on a writable one where a lower file gains an xattr, is written (a
# capability is dropped by the write) and is copied up after being walked,
# and where a file made through the union gains a capability after a walk.
# Then that record's point: the walk's capability queries do not reach the
# lowers (the daemon's host getxattr calls, strace), and the mount's line in
# PONY_FUSE_REQUEST_LOG counts the walk's GETXATTR and LISTXATTR requests.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/union_lib.sh"

union_setup xattrwalk
require_cmd strace setfattr
ovl_require

# Layers: l1 (top) over l2. CAP: a file capability (cap_net_raw+ep,
# VFS_CAP_REVISION_2), as setcap writes it.
CAP=0x0100000200200000000000000000000000000000
mkdir -p "$T"/{l1,l2,u,w,km} "$T/l2/d" "$T/l1/d2"
for f in plain user cap both; do echo "$f" > "$T/l2/$f"; done
for i in $(seq 1 40); do echo "$i" > "$T/l2/d/f$i"; done
setfattr -n user.tag -v low "$T/l2/user"
setfattr -n security.capability -v $CAP "$T/l2/cap"
setfattr -n security.capability -v $CAP "$T/l2/both"
setfattr -n user.tag -v both "$T/l2/both"
echo top > "$T/l1/topcap"; setfattr -n security.capability -v $CAP "$T/l1/topcap"
echo top > "$T/l1/topplain"
setfattr -n user.dir -v y "$T/l1/d2"

ovl_start() { local m=$1; shift; fuse_daemon_start "$m" "$T/pony.log" pony-overlayfs "$OVL" -f "$@" "$m"; }
same() { # same WHAT: pony's walk of pm twice, each equal to the kernel's of km
	local k p1 p2
	k=$(xattr_walk "$T/km"); p1=$(xattr_walk "$T/pm"); p2=$(xattr_walk "$T/pm")
	echo "$k" | grep -q "^both 0100" || fail "$1: the kernel's walk shows no capability: $k"
	[ "$p1" = "$k" ] || fail "$1: first walk differs from overlayfs: $(diff <(echo "$k") <(echo "$p1"))"
	[ "$p2" = "$k" ] || fail "$1: second walk differs from overlayfs: $(diff <(echo "$k") <(echo "$p2"))"
}

# 1. Read-only union of the lowers (podman's parent mount in a layer diff),
# the daemon traced: a capability query of a file known xattr-less does not
# reach the lower. Three walks of 49 names make 147 capability queries;
# without the record, the first walk's 49 and the values of the xattrs that
# exist reach the host (92 calls), with it only those values (49).
mkdir "$T/pm"
export PONY_FUSE_REQUEST_LOG=$T/requests.log
ovl_start "$T/pm" -o "lowerdir=$T/l1:$T/l2"
mount -t overlay overlay -o "lowerdir=$T/l1:$T/l2" "$T/km" || fail "kernel overlay mount failed"
strace -f -qq -c -e trace=getxattr -o "$T/strace.txt" -p "$PONY_PID" & STRACE=$!
sleep 0.5
same "read-only union"
xattr_walk "$T/pm" > /dev/null
kill -INT $STRACE; wait $STRACE 2>/dev/null
host=$(awk '$NF == "getxattr" { print $4 }' "$T/strace.txt")
echo "host getxattr calls of the daemon in three walks: $host"
[ -n "$host" ] && [ "$host" -lt 60 ] ||
	fail "the daemon made ${host:-no} host getxattr calls for 3 walks of 49 names: $(cat "$T/strace.txt")"
fuse_daemon_stop "$T/pm" "$T/pony.log"
umount "$T/km"
line=$(reqlog_line "$T/requests.log" "$T/pm")
for op in getxattr listxattr readdirplus; do
	n=$(reqlog_count "$line" $op)
	[ -n "$n" ] && [ "$n" -ge 49 -o $op = readdirplus ] && [ "$n" -gt 0 ] ||
		fail "request log: fuse_$op is '${n}' after three walks of 49 names: $line"
done
unset PONY_FUSE_REQUEST_LOG

# 2. Writable unions, pony's and the kernel's over the same lowers: walked
# (pony's record made), then on the same mounts a lower file gains an xattr
# through the union, a capable one is written to (the kernel drops the
# capability) and another is copied up by a chmod (keeping it); walked again.
mkdir -p "$T/u2" "$T/w2"
ovl_start "$T/pm" -o "lowerdir=$T/l1:$T/l2,upperdir=$T/u,workdir=$T/w"
mount -t overlay overlay -o "lowerdir=$T/l1:$T/l2,upperdir=$T/u2,workdir=$T/w2" "$T/km" ||
	fail "kernel overlay mount failed"
same "writable union"
for m in "$T/pm" "$T/km"; do
	setfattr -n user.new -v 1 "$m/plain" && setfattr -n user.new -v 2 "$m/d/f1" ||
		fail "setfattr through $m failed"
	echo more >> "$m/cap"
	chmod 600 "$m/both"
done
same "writable union after changes"
# 3. A file made through the union (upper only) is walked, so its missing
# capability is remembered, then given one: the next walk must show it
# (the setxattr forgets what was remembered).
for m in "$T/pm" "$T/km"; do echo fresh > "$m/fresh" || fail "create through $m failed"; done
same "writable union with a new file"
for m in "$T/pm" "$T/km"; do
	setfattr -n security.capability -v $CAP "$m/fresh" || fail "setcap through $m failed"
done
same "writable union after a capability is set on the new file"
fuse_daemon_stop "$T/pm" "$T/pony.log"
umount "$T/km"
pass
