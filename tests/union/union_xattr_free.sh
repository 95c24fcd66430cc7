#!/usr/bin/env bash
# tests/union/union_xattr_free.sh - a read-only union (lowers alone, as
# podman mounts the parent image for a layer diff) whose layers hold no
# xattr it shows tells the kernel so at the first xattr query (FUSE's
# ENOSYS), and the kernel answers every later one itself: a walk as the
# layer diff makes it (per name lstat, getxattr security.capability,
# listxattr) sends one GETXATTR and one LISTXATTR in all (the mount's
# PONY_FUSE_REQUEST_LOG line), every name still shows no xattr and the
# union its whiteouts and opaque directories (whose trusted.overlay.*
# markers are the union's own, not shown). Where that is not so the union
# answers as before, equal to the kernel's overlayfs: a capability on one
# file deep in the bottom layer (the walk shows it and sends a request per
# name), and a writable union over the xattr-free layers (ENODATA, and a
# setfattr through it is read back).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/union_lib.sh"

union_setup xattrfree
require_cmd setfattr getfattr
ovl_require
ENODATA=61 EOPNOTSUPP=95
CAP=0x0100000200200000000000000000000000000000  # cap_net_raw+ep, as setcap writes it

# Layers: l1 (top) over l2. l2: 3 directories of 15 files, a symlink, a
# directory "op" and a file "gone"; l1 hides l2's op (opaque) and gone
# (a whiteout), and adds a file to op.
mkdir -p "$T"/{l1,l2,u,w,km,pm} "$T/l2/op" "$T/l1/op"
for d in a b c; do
	mkdir "$T/l2/$d"
	for i in $(seq 1 15); do echo "$d$i" > "$T/l2/$d/f$i"; done
done
ln -s a/f1 "$T/l2/link"
echo hidden > "$T/l2/op/hidden"; echo gone > "$T/l2/gone"
echo shown > "$T/l1/op/shown"
setfattr -n trusted.overlay.opaque -v y "$T/l1/op"
mknod "$T/l1/gone" c 0 0
LOWERS=$T/l1:$T/l2

export PONY_FUSE_REQUEST_LOG=$T/requests.log
ovl_ro() { fuse_daemon_start "$T/pm" "$T/pony.log" pony-overlayfs "$OVL" -f -o "lowerdir=$LOWERS" "$T/pm"; }
ovl_stop() { fuse_daemon_stop "$T/pm" "$T/pony.log"; }

# 1. Xattr-free layers: three walks, then the mount's requests.
ovl_ro
mount -t overlay overlay -o "lowerdir=$LOWERS" "$T/km" || fail "kernel overlay mount failed"
k=$(xattr_walk "$T/km")
NAMES=$(echo "$k" | wc -l)
for _ in 1 2 3; do p=$(xattr_walk "$T/pm"); done
umount "$T/km"
ovl_stop
# The same names as the kernel's (whiteout and opaque directory kept), each
# with no xattr: EOPNOTSUPP where the kernel says ENODATA and an empty list.
[ "$(echo "$p" | cut -d' ' -f1)" = "$(echo "$k" | cut -d' ' -f1)" ] ||
	fail "the names differ from overlayfs's: $(diff <(echo "$k" | cut -d' ' -f1) <(echo "$p" | cut -d' ' -f1))"
echo "$k" | grep -q "^op/shown " && ! echo "$k" | grep -q "hidden\|^gone" ||
	fail "the kernel's walk does not show the whiteout and the opaque directory: $k"
bad=$(echo "$p" | grep -v " errno$EOPNOTSUPP list:errno$EOPNOTSUPP\$") &&
	fail "names with an answer other than 'no xattrs here' (EOPNOTSUPP): $bad"
line=$(reqlog_line "$T/requests.log" "$T/pm")
for op in getxattr listxattr; do
	n=$(reqlog_count "$line" $op)
	[ -n "$n" ] && [ "$n" -le 2 ] ||
		fail "fuse_$op is '$n' after three walks of $NAMES names (at most 2 wanted): $line"
done
echo "xattr-free: $NAMES names, 3 walks: $(reqlog_count "$line" getxattr) GETXATTR, $(reqlog_count "$line" listxattr) LISTXATTR"

# 2. One capability deep in the bottom layer: every query is served, the
# walk equals the kernel's (the capability shown, ENODATA elsewhere).
setfattr -n security.capability -v $CAP "$T/l2/c/f15"
: > "$T/requests.log"
ovl_ro
mount -t overlay overlay -o "lowerdir=$LOWERS" "$T/km" || fail "kernel overlay mount failed"
k=$(xattr_walk "$T/km"); p=$(xattr_walk "$T/pm")
umount "$T/km"
ovl_stop
echo "$k" | grep -q "^c/f15 0100" || fail "the kernel's walk shows no capability: $k"
[ "$p" = "$k" ] || fail "with a capability in a layer the walk differs: $(diff <(echo "$k") <(echo "$p"))"
n=$(reqlog_count "$(reqlog_line "$T/requests.log" "$T/pm")" getxattr)
[ -n "$n" ] && [ "$n" -ge "$NAMES" ] || fail "fuse_getxattr is '$n' for a walk of $NAMES names"
setfattr -x security.capability "$T/l2/c/f15"

# 3. A writable union over the xattr-free layers: no xattr is ENODATA, as
# the kernel's, and one set through the union is read back.
fuse_daemon_start "$T/pm" "$T/pony.log" pony-overlayfs "$OVL" -f \
	-o "lowerdir=$LOWERS,upperdir=$T/u,workdir=$T/w" "$T/pm"
p=$(xattr_walk "$T/pm")
echo "$p" | grep -q "^a/f1 errno$ENODATA \$" || fail "writable union: a/f1 is not 'no xattr (ENODATA)': $p"
setfattr -n user.mark -v 1 "$T/pm/a/f2" || fail "setfattr through the writable union failed"
[ "$(getfattr --only-values -n user.mark "$T/pm/a/f2")" = 1 ] || fail "user.mark not read back"
ovl_stop
pass
