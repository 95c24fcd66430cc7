#!/usr/bin/env bash
# union_userxattr.sh - a union mounted by an unprivileged user (uid 1000 by
# setpriv, no capabilities) with --userxattr: changes made through it are
# recorded as user.overlay.* (origin, opaque) and whiteouts the user may
# make, never trusted.overlay.*, and the kernel's overlayfs with -o userxattr
# over the same directories shows the same tree.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd setpriv fusermount3 getfattr
[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid: users cannot mount"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "the kernel has no overlayfs to compare with"
USER_ID=${PONY_TEST_UID:-1000}

T=$(mktemp -d /tmp/pony-union-ux.XXXXXX)
PONY_PID=
as_user() { setpriv --reuid="$USER_ID" --regid="$USER_ID" --clear-groups --inh-caps=-all "$@"; }
# A user's FUSE mount refuses even root (no allow_other): look as the user.
cleanup() {
	as_user mountpoint -q "$T/m" 2>/dev/null && { as_user fusermount3 -u "$T/m" || umount -l "$T/m"; }
	mountpoint -q "$T/km" 2>/dev/null && umount "$T/km"
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T"
mkdir -p "$T"/{l,u,w,m,km} "$T/l/d" "$T/l/gone" || fail "cannot make the directories"
echo a > "$T/l/f"; echo x > "$T/l/d/x"; echo g > "$T/l/gone/g"; echo r > "$T/l/r"
chown -R "$USER_ID:$USER_ID" "$T"/{l,u,w,m}
as_user true 2>/dev/null || skip "cannot run as uid $USER_ID"
before=$(cd "$T/l" && find . -printf '%p %y %m %s %T@\n' | sort | md5sum)

as_user "$PONY" union mount --foreground --userxattr --lower "$T/l" --upper "$T/u" \
	--work "$T/w" "$T/m" 2>>"$T/pony.log" &
PONY_PID=$!
wait_for_mount "$T/m" "$PONY_PID" "$T/pony.log" "pony union mount as uid $USER_ID" as_user
as_user bash -c 'cd "$1" && echo more >> f && rm r && rm -r gone && mkdir gone &&
	touch gone/new && mkdir d/sub' _ "$T/m" || fail "changes as uid $USER_ID failed: $(cat "$T/pony.log")"
tree_of() { (cd "$1" && find . -printf '%p %y %m %s %U:%G\n' | sort && find . -type f -exec md5sum {} + | sort -k2); }
p_tree=$(as_user bash -c "$(declare -f tree_of); tree_of \"\$1\"" _ "$T/m")
as_user fusermount3 -u "$T/m" || fail "the user cannot unmount"
wait "$PONY_PID" || fail "pony exited $? after unmount: $(cat "$T/pony.log")"
PONY_PID=

# The upper in overlayfs's userxattr format, written without privilege.
[ "$(stat -c '%F %t:%T' "$T/u/r")" = "character special file 0:0" ] || fail "r is no whiteout"
[ "$(getfattr --only-values -n user.overlay.opaque "$T/u/gone" 2>/dev/null)" = y ] ||
	fail "gone is not user.overlay.opaque"
python3 -c "import os, sys; v = os.getxattr(sys.argv[1], 'user.overlay.origin'); sys.exit(not (v[:2] == b'\0\xfb' and v[2] == len(v)))" \
	"$T/u/f" || fail "f has no user.overlay.origin in overlayfs's format"
getfattr -R -d -m '^trusted\.' "$T/u" 2>/dev/null | grep -q trusted. && fail "trusted.* xattrs written"
[ "$(cd "$T/l" && find . -printf '%p %y %m %s %T@\n' | sort | md5sum)" = "$before" ] ||
	fail "the lower was modified"

mount -t overlay overlay -o "lowerdir=$T/l,upperdir=$T/u,workdir=$T/w,userxattr" "$T/km" ||
	fail "the kernel cannot mount the upper with userxattr"
k_tree=$(tree_of "$T/km")
umount "$T/km"
[ "$p_tree" = "$k_tree" ] || fail "the kernel shows another tree: $(diff <(echo "$p_tree") <(echo "$k_tree"))"
pass
