#!/usr/bin/env bash
# ponyfs_repair.sh - a checksum mismatch is repaired from the volume's
# redundancy and reported. On a RAID6 and on a mirror data region of image
# files: write a file whose blocks carry unique markers, unmount, find one
# block on a member image and corrupt its bytes there (the volume alone
# cannot tell), remount and read the file through FUSE: the content is
# right, the daemon logs the repair, the member's bytes are restored, and
# fsck is clean. Without redundancy (one image) the read fails with EIO
# and fsck reports the block.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-repair


# A file of 64 blocks, each starting with a marker no other byte run has.
python3 - "$T/orig" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(64):
        f.write((b"PONYREPAIR-%05d-" % i) + os.urandom(4096 - 17))
PY

# corrupt IMG...: flips 64 bytes of block 37's marker run on whichever
# image holds it; prints "IMG OFFSET" and keeps the good bytes in $T/good.
corrupt() {
	python3 - "$T/good" "$@" <<'PY'
import mmap, sys
good, imgs = sys.argv[1], sys.argv[2:]
for img in imgs:
    with open(img, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        at = m.find(b"PONYREPAIR-00037-")
        if at < 0:
            continue
        open(good, "wb").write(m[at:at + 64])
        m[at:at + 64] = bytes(b ^ 0xff for b in m[at:at + 64])
        m.flush()
        print(img, at)
        sys.exit(0)
sys.exit("marker not found on any image")
PY
}

for data in raid6 mirror; do
	rm -f "$T"/r*.img
	for i in 0 1 2 3; do truncate -s 96M "$T/r$i.img"; done
	imgs=("$T"/r{0,1,2,3}.img)
	"$PONY" mkfs --data "$data" --metadata mirror --assume-clean "${imgs[@]}" >/dev/null ||
		fail "mkfs --data $data"
	pony_mount "${imgs[@]}"
	cp "$T/orig" "$T/m/file" && sync "$T/m/file" || fail "write ($data)"
	pony_umount
	read -r img off < <(corrupt "${imgs[@]}") || fail "no block to corrupt ($data)"
	: >"$T/pony.log"
	pony_mount "${imgs[@]}"
	cmp "$T/orig" "$T/m/file" || fail "$data: corrupt data read back"
	pony_umount
	grep -q "failed its checksum: repaired member" "$T/pony.log" ||
		fail "$data: no repair reported: $(cat "$T/pony.log")"
	cmp <(dd if="$img" bs=1 skip="$off" count=64 status=none) "$T/good" ||
		fail "$data: the member's bytes were not rewritten"
	"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" || fail "$data: fsck after repair: $(cat "$T/fsck.out")"
done

# fsck --repair finds and fixes one the mount never read.
read -r img off < <(corrupt "${imgs[@]}") || fail "no block to corrupt (fsck)"
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" && fail "fsck missed a corrupt block"
grep -q "/file: block 37 (file offset 151552): checksum mismatch" "$T/fsck.out" || fail "fsck: $(cat "$T/fsck.out")"
"$PONY" fsck --repair "${imgs[@]}" >"$T/fsck.out"
grep -q "repaired member" "$T/fsck.out" || fail "fsck --repair: $(cat "$T/fsck.out")"
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" || fail "fsck after --repair: $(cat "$T/fsck.out")"

# No redundancy: a clear error, and fsck names the block.
truncate -s 96M "$T/one.img"
"$PONY" mkfs "$T/one.img" >/dev/null || fail "mkfs one"
pony_mount "$T/one.img"
cp "$T/orig" "$T/m/file" && sync "$T/m/file" || fail "write (one image)"
pony_umount
corrupt "$T/one.img" >/dev/null || fail "no block to corrupt (one image)"
pony_mount "$T/one.img"
cat "$T/m/file" >/dev/null 2>"$T/cat.err" && fail "corrupt data read without an error"
grep -q "Input/output error\|Bad message" "$T/cat.err" || fail "unclear error: $(cat "$T/cat.err")"
pony_umount
grep -q "no redundancy" "$T/pony.log" || fail "no report of the unrepairable block"
"$PONY" fsck "$T/one.img" >"$T/fsck.out" && fail "fsck missed the corrupt block"
grep -q "/file: block 37 (file offset 151552): checksum mismatch" "$T/fsck.out" || fail "fsck: $(cat "$T/fsck.out")"
pass
