#!/usr/bin/env bash
# scripts/fstests.sh - runs fstests (xfstests) against ponyfs through FUSE, as
# docs/fstests.md describes: FSTYP=fuse, FUSE_SUBTYP=.pony, image files as
# TEST_DEV and SCRATCH_DEV, mounted by `mount -t fuse.pony IMG MNT -o format`.
#
# Usage: scripts/fstests.sh XFSTESTS_DIR [check arguments]   (default: -g quick)
# Environment: PONY_FSTESTS_WORK (default /var/tmp/pony-fstests), PONY_FSTESTS_SIZE (image
# size, default 8G), PONY_FSTESTS_LOOP=0 (plain image files, no loop devices).
#
# XFSTESTS_DIR is cloned (from $XFSTESTS_URL, default kdave/xfstests) when
# missing and built when not built yet; it lives outside pony's tree and is
# never committed. The work directory gets fresh blank images (attached as
# loop devices), the mount points and a copy
# of build/pony, linked as /usr/local/sbin/pony for the run: mount(8) runs
# mount.fuse3 with the standard PATH only. Needs root. fstests' build dependencies (Debian):
#   apt-get install xfslibs-dev uuid-dev libtool libattr1-dev libacl1-dev \
#       libaio-dev libgdbm-dev liburing-dev libcap-dev autoconf automake make \
#       gcc pkg-config xfsprogs attr acl bc psmisc gawk
set -eu

[ $# -ge 1 ] && [ "$1" != -h ] && [ "$1" != --help ] || {
	sed -n '2,19s/^# \{0,1\}//p' "$0"
	exit 2
}
XFS=$(realpath -m "$1")
shift
[ $# -gt 0 ] || set -- -g quick
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${PONY_FSTESTS_WORK:-/var/tmp/pony-fstests}
SIZE=${PONY_FSTESTS_SIZE:-8G}

[ "$(id -u)" -eq 0 ] || { echo "fstests.sh: needs root" >&2; exit 1; }
[ -x "$SRC/build/pony" ] || make -C "$SRC" build
[ -d "$XFS" ] || git clone "${XFSTESTS_URL:-https://github.com/kdave/xfstests}" "$XFS"
[ -x "$XFS/src/godown" ] && [ -x "$XFS/ltp/fsstress" ] || make -C "$XFS" -j"$(nproc)"

# A stale mount of an earlier run would hold the images.
for m in "$WORK/test" "$WORK/scratch"; do
	! mountpoint -q "$m" || umount "$m"
done
mkdir -p "$WORK/test" "$WORK/scratch"
for img in "$WORK/test.img" "$WORK/scratch.img"; do
	for dev in $(losetup -n -O NAME -j "$img" 2>/dev/null); do losetup -d "$dev"; done
	rm -f "$img"
	truncate -s "$SIZE" "$img"     # blank: -o format makes the filesystem
done
# The images as loop devices (PONY_FSTESTS_LOOP=0: as plain files): the
# shutdown tests want a local block device (_require_local_device).
TEST_DEV=$WORK/test.img
SCRATCH_DEV=$WORK/scratch.img
if [ "${PONY_FSTESTS_LOOP:-1}" = 1 ]; then
	TEST_DEV=$(losetup -f --show "$WORK/test.img")
	SCRATCH_DEV=$(losetup -f --show "$WORK/scratch.img")
fi

# A copy, so rebuilding pony during a run does not change the daemon under it.
cp "$SRC/build/pony" "$WORK/pony.new" && mv "$WORK/pony.new" "$WORK/pony"
if [ -e /usr/local/sbin/pony ] && [ ! -L /usr/local/sbin/pony ]; then
	echo "fstests.sh: /usr/local/sbin/pony is installed, not a link of ours; move it away" >&2
	exit 1
fi
ln -sfn "$WORK/pony" /usr/local/sbin/pony

# The users some tests switch to (fstests' README).
id fsgqa >/dev/null 2>&1 || useradd -m fsgqa
id fsgqa2 >/dev/null 2>&1 || useradd -m fsgqa2
id 123456-fsgqa >/dev/null 2>&1 || useradd -m 123456-fsgqa

cat > "$XFS/local.config" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.pony
export TEST_DEV=$TEST_DEV
export TEST_DIR=$WORK/test
export SCRATCH_DEV=$SCRATCH_DEV
export SCRATCH_MNT=$WORK/scratch
# subtype= (empty): the type plain fuse, which fstests' _fs_type compares
# with FSTYP (a mount(8) mount is fuse.pony otherwise).
export FUSE_MOUNT_OPTIONS="-oformat,subtype="
# Tests may write over the scratch device (generic/570 makes a swap device
# of it): the scratch mount formats whatever is not pony's.
export MOUNT_OPTIONS="-oformat=foreign,subtype="
export TEST_FS_MOUNT_OPTS="-oformat,subtype="
EOF
cd "$XFS"
rc=0
./check "$@" || rc=$?
# Leave no pony on the machine's PATH (a second run beside this one, with
# its own work directory, links its own again when it starts).
[ "$(readlink /usr/local/sbin/pony)" = "$WORK/pony" ] && rm -f /usr/local/sbin/pony
exit "$rc"
