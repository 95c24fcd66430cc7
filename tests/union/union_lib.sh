# tests/union/union_lib.sh - what the scripts comparing a pony union with
# the kernel's overlayfs share (sourced after tests/lib.sh): the checks
# (FUSE, root, an overlayfs to compare with), a scratch directory $T whose
# mounts are undone and which is removed at exit, and the two mounts over
# the same layers, pony's at $T/pm and the kernel's at $T/km.
#
# union_setup NAME: skips unless the test can run; makes $T. Before it, a
# script sets PONY_OPTS (extra `pony union mount` options) and UNION_LOWERS
# (the lowers a mount takes when it names none).
union_setup() {
	require_fuse
	require_root
	require_cmd fusermount3 python3
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		skip "the kernel has no overlayfs to compare with"
	T=$(mktemp -d "/tmp/pony-union-$1.XXXXXX")
	PONY_PID=
	trap union_cleanup EXIT
}

union_cleanup() {
	exec 3<&-
	for m in "$T"/pm "$T"/km; do
		mountpoint -q "$m" 2>/dev/null || continue
		fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || umount -l "$m"
	done
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}

# pony_mount UPPER WORK [LOWERS]: pony in the foreground in the background,
# so its exit status (ASan, leaks) is seen at unmount.
pony_mount() {
	fuse_daemon_start "$T/pm" "$T/pony.log" "pony union mount" "$PONY" union mount \
		--foreground "${PONY_OPTS[@]}" --lower "${3:-$UNION_LOWERS}" --upper "$1" \
		--work "$2" "$T/pm"
}
pony_umount() { fuse_daemon_stop "$T/pm" "$T/pony.log"; }
# kernel_mount UPPER WORK [LOWERS [OPTIONS]]: with redirect_dir=on, which
# follows and writes redirects as pony does.
kernel_mount() {
	mount -t overlay overlay \
		-o "lowerdir=${3:-$UNION_LOWERS},upperdir=$1,workdir=$2,redirect_dir=on${4:+,$4}" \
		"$T/km" || fail "kernel overlay mount failed"
}
kernel_umount() { umount "$T/km" || fail "umount of the kernel overlay failed"; }

# xattr_walk DIR: each name under DIR (sorted) with its capability and its
# xattr list, read as podman's layer diff (containers/storage's
# collectFileInfo) reads them: lstat, getxattr security.capability, then
# listxattr; an error shows as its errno ("errno61": ENODATA).
xattr_walk() {
	python3 - "$1" <<'PY'
import os, sys
top = sys.argv[1]
for root, dirs, files in os.walk(top):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(root, name)
        os.lstat(p)
        try:
            cap = os.getxattr(p, "security.capability", follow_symlinks=False).hex()
        except OSError as e:
            cap = "errno%d" % e.errno
        try:
            names = sorted(n for n in os.listxattr(p, follow_symlinks=False)
                           if not n.startswith(("trusted.overlay.", "user.overlay.")))
            vals = [n + "=" + os.getxattr(p, n, follow_symlinks=False).hex() for n in names]
        except OSError as e:
            vals = ["list:errno%d" % e.errno]
        print(os.path.relpath(p, top), cap, " ".join(vals))
PY
}

# reqlog_line LOG MNT: the PONY_FUSE_REQUEST_LOG line of MNT's mount (its
# requests by opcode, written at unmount); reqlog_count LINE OP: how many
# OP requests ("getxattr") it counts, empty if none.
reqlog_line() {
	grep " $2 " "$1" || fail "no PONY_FUSE_REQUEST_LOG line for $2: $(cat "$1")"
}
reqlog_count() {
	echo "$1" | awk -v k="fuse_$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'
}

# ovl_require: OVL, the pony-overlayfs built beside $PONY.
ovl_require() {
	OVL=$(dirname "$PONY")/pony-overlayfs
	[ -x "$OVL" ] || fail "$OVL is not built"
}
