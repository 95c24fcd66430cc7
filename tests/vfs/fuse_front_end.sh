#!/usr/bin/env bash
# fuse_front_end.sh - the FUSE front end over hostfs: the mount shows the
# host directory (df/mount name the source), what FUSE drops is carried by the
# mount's ioctls (pony fs statx with a mask, pony fs syncfs), SIGTERM and
# SIGINT unmount cleanly, and a daemonized mount unmounts with pony fs umount.
# Arguments are extra `pony fs mount-host` options (tests/fuse runs it again
# with --io-uring).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

T=$(mktemp -d /tmp/pony-fuse-it.XXXXXX)
PONY_PID=
cleanup() {
	if mountpoint -q "$T/m" 2>/dev/null; then
		fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"
	fi
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/src/dir" "$T/m"
echo hello > "$T/src/file"
ln "$T/src/file" "$T/src/hard"
ln -s file "$T/src/link"

start() {
	fuse_daemon_start "$T/m" "$T/log" "mount-host" "$PONY" fs mount-host --foreground "$@" \
		"$T/src" "$T/m"
}

start "$@"
mount | grep -q "^$T/src on $T/m type fuse.pony-hostfs" || fail "fsname is not the source: $(mount | grep "$T/m")"
[ "$(cat "$T/m/file")" = hello ] || fail "cannot read through the mount"
[ "$(stat -c %i "$T/m/file")" = "$(stat -c %i "$T/m/hard")" ] || fail "hard links are two inodes"
[ "$(ls -A "$T/m" | sort)" = "$(ls -A "$T/src" | sort)" ] || fail "listing differs from the host"
echo written > "$T/m/new"; [ "$(cat "$T/src/new")" = written ] || fail "write did not reach the host"
mv "$T/m/new" "$T/m/dir/moved"; [ -f "$T/src/dir/moved" ] || fail "rename did not reach the host"

out=$("$PONY" fs statx --mask 0x200 --dont-sync "$T/m/file") || fail "pony fs statx failed"
[[ $out == *"size=6 "* ]] || fail "statx through the ioctl said: $out"
[[ $out == *"ino=$(stat -c %i "$T/src/file") "* ]] || fail "statx ino is not the host's: $out"
"$PONY" fs syncfs "$T/m" || fail "pony fs syncfs failed"
expect_failure "$PONY" fs statx /  # not a pony mount: refused with a message

# POSIX ACLs are not enforced on a FUSE mount without FUSE_CAP_POSIX_ACL:
# the mount says EOPNOTSUPP rather than store one it would ignore, and
# hides the name from listxattr; other xattrs pass.
python3 - "$T/m/file" <<'PY' || fail "ACL xattrs are not refused, or user xattrs broke"
import errno, os, sys
f = sys.argv[1]
for call in (lambda: os.getxattr(f, "system.posix_acl_access"),
             lambda: os.setxattr(f, "system.posix_acl_access", b"\x02\0\0\0"),
             lambda: os.removexattr(f, "system.posix_acl_access")):
    try:
        call()
        sys.exit("an ACL call succeeded")
    except OSError as e:
        if e.errno != errno.EOPNOTSUPP:
            sys.exit(f"ACL call: {e}")
os.setxattr(f, "user.k", b"v")
assert os.getxattr(f, "user.k") == b"v"
assert os.listxattr(f) == ["user.k"], os.listxattr(f)
PY
python3 -c "import os; os.setxattr('$T/src/file', 'system.posix_acl_access', bytes.fromhex('02000000010006000000ffff04000400ffffffff10000600ffffffff20000400ffffffff'))" 2>/dev/null &&
	{ [ "$(python3 -c "import os; print(os.listxattr('$T/m/file'))")" = "['user.k']" ] ||
	  fail "listxattr shows an ACL the mount refuses"; }

kill -TERM "$PONY_PID"
wait "$PONY_PID" || fail "SIGTERM: pony exited $? ($(cat "$T/log"))"
PONY_PID=
mountpoint -q "$T/m" && fail "SIGTERM left the mount behind"

start "$@"
kill -INT "$PONY_PID"
wait "$PONY_PID" || fail "SIGINT: pony exited $?"
PONY_PID=
mountpoint -q "$T/m" && fail "SIGINT left the mount behind"

# Daemonized: returns once mounted; pony fs umount ends it.
"$PONY" fs mount-host "$@" "$T/src" "$T/m" || fail "daemonized mount failed"
mountpoint -q "$T/m" || fail "daemonized mount is not mounted on return"
# A mount busy for a moment (a process whose cwd is in it, leaving) is
# unmounted once it is free, not refused with EBUSY; one busy for longer
# than pony waits is refused with a message and stays mounted.
# hold_mount SECONDS: a process sits in the mount for that long; returns once it does.
hold_mount() {
	(cd "$T/m" && sleep "$1") &
	holder=$!
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$holder/cwd")" = "$T/m" ] && return
		sleep 0.05
	done
	fail "the process holding the mount did not enter it"
}
hold_mount 0.5
"$PONY" fs umount "$T/m" || fail "pony fs umount refused a mount busy for 0.5 s"
wait "$holder"
mountpoint -q "$T/m" && fail "pony fs umount left the mount"
"$PONY" fs mount-host "$@" "$T/src" "$T/m" || fail "daemonized mount failed"
hold_mount 4
expect_failure "$PONY" fs umount "$T/m"
mountpoint -q "$T/m" || fail "a failed unmount still unmounted"
wait "$holder"
"$PONY" fs umount "$T/m" || fail "pony fs umount failed"
mountpoint -q "$T/m" && fail "pony fs umount left the mount"
expect_failure "$PONY" fs mount-host "$T/nonexistent" "$T/m"
expect_usage_error "$PONY" fs mount-host "$T/src"
pass
