#!/usr/bin/env bash
# ponyfs_close_requests.sh - a close(2) on a pony mount costs no round trip:
# ponyfs has nothing to do at close (a write reached it before write(2)
# returned, locks are the kernel's), so every open answers FOPEN_NOFLUSH
# and the kernel sends no FLUSH (docs/fuse-requests.md: one of an untar's
# eleven requests a file). Files written, rewritten and read through
# descriptors closed at once, and several descriptors of one file, keep
# what was written: after the closes, after `pony sync`, and after a
# remount. RELEASE still comes (ponyfs tracks open files).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-close-requests
require_root
require_fuse
require_cmd python3
M=$T/m
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"

pony_mount "$T/img"
fl0=$(requests_count fuse_flush) rel0=$(requests_count fuse_release)
python3 - "$M" <<'PY' || fail "the writes through the mount"
import os, sys
m = sys.argv[1]
for i in range(20):                      # new files, one write each
    fd = os.open(f"{m}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"%d" % i * 100)
    os.close(fd)
for i in range(5):                       # truncate-and-rewrite
    fd = os.open(f"{m}/f{i}", os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"new%d" % i)
    os.close(fd)
a = os.open(f"{m}/shared", os.O_RDWR | os.O_CREAT, 0o644)  # two descriptors
b = os.dup(a)
os.write(a, b"one")
os.close(a)
os.write(b, b"two")
os.close(b)
for i in range(20):
    with open(f"{m}/f{i}", "rb") as f:
        want = b"new%d" % i if i < 5 else b"%d" % i * 100
        assert f.read() == want, (i, "after the closes")
PY
[ "$(cat "$M/shared")" = onetwo ] || fail "shared reads '$(cat "$M/shared")'"
fl=$(( $(requests_count fuse_flush) - fl0 )) rel=$(( $(requests_count fuse_release) - rel0 ))
[ "$fl" = 0 ] || fail "46 closes sent $fl FLUSH requests, not 0: $(requests_all)"
[ "$rel" -ge 46 ] || fail "46 opens were released $rel times"

"$PONY" sync "$M" || fail "pony sync"
pony_umount
pony_mount "$T/img"
for i in $(seq 0 19); do
	if [ "$i" -lt 5 ]; then want=new$i; else want=$(printf "$i%.0s" $(seq 100)); fi
	[ "$(cat "$M/f$i")" = "$want" ] || fail "f$i after the remount reads '$(head -c 40 "$M/f$i")'"
done
[ "$(cat "$M/shared")" = onetwo ] || fail "shared after the remount reads '$(cat "$M/shared")'"
echo "ok: 46 closes, no FLUSH, $rel RELEASEs; contents kept through a remount"
