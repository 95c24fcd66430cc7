#!/usr/bin/env bash
# vol_expose_ext4.sh - a real filesystem on a pony RAID6: six image files,
# exposed through FUSE, mkfs.ext4 with a copy of pony's source tree in it;
# two members fail; served again only with --degraded, fsck.ext4 -f finds
# the degraded volume's filesystem clean and every file reads back identical; two new members are rebuilt
# and scrub finds nothing.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
require_root
require_fuse
require_cmd mkfs.ext4 debugfs
work=$(mktemp -d /tmp/pony-vol-ext4.XXXXXX)
cleanup() {
	"$PONY" vol stop "$work/mnt" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
mkdir mnt tree
cp -r "$PONY_SRCDIR/src" "$PONY_SRCDIR/include" tree/
for i in 0 1 2 3 4 5; do truncate -s 24M d$i.img; done
"$PONY" vol create -l raid6 -c 64K --assume-clean d*.img >/dev/null || fail "create"
"$PONY" vol expose d*.img mnt || skip "cannot mount FUSE here"
mkfs.ext4 -q -F -d tree mnt/volume || fail "mkfs.ext4 on the exposed volume"
"$PONY" vol stop mnt || fail "stop"

"$PONY" vol fail -m 1 d*.img >/dev/null || fail "fail 1"
"$PONY" vol fail -m 4 d*.img >/dev/null 2>&1 || fail "fail 4"
# Members 1 and 4 are stale now: serving the volume without them needs --degraded.
"$PONY" vol expose d*.img mnt 2>expose.err && fail "exposed a degraded volume unasked"
grep -q -- "--degraded" expose.err || fail "expose degraded: $(cat expose.err)"
"$PONY" vol expose --degraded d*.img mnt 2>/dev/null || fail "expose --degraded"
fsck.ext4 -fn mnt/volume >fsck.out 2>&1 || fail "fsck on the degraded RAID6: $(cat fsck.out)"
mkdir back && debugfs -R "rdump / $work/back" mnt/volume >/dev/null 2>&1 || fail "debugfs rdump"
"$PONY" vol stop mnt || fail "stop"
(cd tree && find . -type f -exec sha256sum {} + | sort -k2) > want
(cd back && find . -type f ! -path './lost+found/*' -exec sha256sum {} + | sort -k2) > got
cmp -s want got || fail "files differ after losing two members"
[ "$(wc -l < want)" -gt 20 ] || fail "too few files copied"

truncate -s 24M n1.img n4.img
"$PONY" vol add -d n1.img d*.img >/dev/null 2>&1 || fail "add n1"
"$PONY" vol add -d n4.img d0.img n1.img d2.img d3.img d5.img >/dev/null 2>&1 || fail "add n4"
"$PONY" vol scrub d0.img n1.img d2.img d3.img n4.img d5.img 2>/dev/null |
	record_field MISMATCHES | grep -qx 0 || fail "scrub after rebuild"
"$PONY" vol expose d0.img n1.img d2.img d3.img n4.img d5.img mnt || fail "expose rebuilt"
fsck.ext4 -fn mnt/volume >/dev/null 2>&1 || fail "fsck after rebuild"
"$PONY" vol stop mnt
pass
