#!/usr/bin/env bash
# ponyfs_fsck.sh - pony fsck as fsck(8): exit 0 clean, 1 all fixed, 4 left,
# 8 could not check, 16 usage (added together: 5 is fixed and left). On a
# ponyfs with /dir/file (hard-linked as /hard) and /dir/sub/g, each
# corruption made in its database by SQL is reported naming the file by
# path; -n (and no option) change no byte of the image even with a WAL to
# replay; -p fixes what needs no decision and leaves the rest (exit 4);
# -y fixes that too (an unreachable directory goes to /lost+found), and
# the next run is clean. A bad checksum names the file, the block and both
# sums; --json gives the same problems.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-fsck
. "$PONY_SRCDIR/tests/ponyfs/fsck_lib.sh"
IMG=$T/a.img
OUT=$T/fsck.out

# Usage (16) and what cannot be checked (8).
fsck_expect 16 "$OUT"
fsck_expect 16 "$OUT" --bogus "$IMG"
fsck_expect 16 "$OUT" -n -y "$IMG"
fsck_expect 8 "$OUT" "$T/missing.img"
grep -q "missing.img" "$OUT" || fail "the missing image is not named: $(cat "$OUT")"
head -c 8M /dev/urandom >"$T/junk.img"
fsck_expect 8 "$OUT" "$T/junk.img"
"$PONY" fsck --help | grep -q -- "-p, -a" || fail "fsck --help does not explain -p"

truncate -s 64M "$IMG"
"$PONY" mkfs "$IMG" >/dev/null || fail "mkfs"
pony_mount "$IMG"
mkdir -p "$T/m/dir/sub" || fail "mkdir"
head -c 20000 /dev/urandom >"$T/m/dir/file" && ln "$T/m/dir/file" "$T/m/hard" &&
	echo g >"$T/m/dir/sub/g" || fail "populate"
pony_umount
fsck_expect 0 "$OUT" "$IMG"
grep -q "clean" "$OUT" || fail "a clean filesystem is not called clean: $(cat "$OUT")"
cp "$IMG" "$T/orig.img"
file=$(ino_of "$IMG" file)

# Wrong link count, leaked blocks, an entry naming nothing.
img_sql "$IMG" "UPDATE inodes SET nlink = 5 WHERE ino = $file;
	UPDATE free SET nblocks = nblocks - 100 WHERE pblock = (SELECT max(pblock) FROM free);
	INSERT INTO dentries SELECT 1, CAST('ghost' AS BLOB), 9999, next_cookie FROM inodes WHERE ino = 1;
	UPDATE inodes SET next_cookie = next_cookie + 1 WHERE ino = 1" >/dev/null

# Then a crash: an orphan (unlinked while open) and a WAL to replay, which
# the old fsck checkpointed into the image when it closed the database.
pony_mount "$IMG"
exec 4>"$T/m/orphan"
rm "$T/m/orphan" && echo x >&4 && echo more >"$T/m/more" && "$PONY" sync "$T/m" ||
	fail "write before the kill"
orphan=$(stat -L -c %i /proc/self/fd/4)
kill -9 "$PONY_PID"
wait "$PONY_PID" 2>/dev/null
PONY_PID=
exec 4>&-
umount -l "$T/m" 2>/dev/null || fusermount3 -uz "$T/m" 2>/dev/null
sum=$(sha256sum <"$IMG")
for mode in -n ""; do
	fsck_expect 4 "$OUT" $mode "$IMG"
	[ "$(sha256sum <"$IMG")" = "$sum" ] || fail "fsck ${mode:-without options} changed the image"
	grep -qx "/hard, /dir/file: has nlink 5 but 2 names" "$OUT" ||
		fail "the link count is not reported by path: $(cat "$OUT")"
	grep -qx "/ghost: names inode 9999, which does not exist" "$OUT" ||
		fail "the dangling entry: $(cat "$OUT")"
	grep -qx "inode $orphan (orphan): unlinked while open when the filesystem went down (2 bytes)" "$OUT" ||
		fail "the orphan: $(cat "$OUT")"
	grep -qx "$IMG: 100 data blocks are neither used nor free" "$OUT" ||
		fail "the leaked blocks: $(cat "$OUT")"
	grep -q "4 problems: 0 fixed, 4 left" "$OUT" || fail "the summary: $(cat "$OUT")"
done

# -p fixes all four (no decision needed): exit 1, then clean.
fsck_expect 1 "$OUT" -p "$IMG"
grep -q "has nlink 5 but 2 names: set to 2" "$OUT" || fail "-p: $(cat "$OUT")"
grep -q "entry removed" "$OUT" && grep -q "deleted, its blocks freed" "$OUT" &&
	grep -q "added to free space" "$OUT" || fail "-p did not say what it did: $(cat "$OUT")"
fsck_expect 0 "$OUT" "$IMG"
pony_mount "$IMG"
[ "$(cat "$T/m/more")" = more ] && cmp -s "$T/m/dir/file" "$T/m/hard" || fail "data lost by -p"
pony_umount

# An unreachable directory: -p fixes its parent's link count and leaves it
# (exit 1 + 4); -y links it into /lost+found (exit 1), then clean.
cp "$T/orig.img" "$IMG"
sub=$(ino_of "$IMG" sub)
img_sql "$IMG" "DELETE FROM dentries WHERE name = CAST('sub' AS BLOB)" >/dev/null
fsck_expect 4 "$OUT" -n "$IMG"
grep -qx "inode $sub (unreachable): not reachable from the root (directory, 1 inode below it)" "$OUT" ||
	fail "the unreachable directory: $(cat "$OUT")"
grep -q "^/dir: directory has nlink 3, should be 2" "$OUT" || fail "/dir's link count: $(cat "$OUT")"
fsck_expect 5 "$OUT" -p "$IMG"
grep -q "^/dir: .*: set to 2$" "$OUT" && grep -q "^inode $sub (unreachable): .*below it)$" "$OUT" ||
	fail "-p: $(cat "$OUT")"
fsck_expect 1 "$OUT" -y "$IMG"
grep -q "linked as /lost+found/#$sub" "$OUT" || fail "-y: $(cat "$OUT")"
fsck_expect 0 "$OUT" "$IMG"
pony_mount "$IMG"
[ "$(cat "$T/m/lost+found/#$sub/g")" = g ] || fail "/lost+found/#$sub/g is not the lost file"
pony_umount

# A bad checksum on one image: the path, the block, both sums; nothing to repair it from.
cp "$T/orig.img" "$IMG"
pblock=$(img_sql "$IMG" "SELECT pblock FROM extents WHERE ino = $file AND foff = 0")
data=$(python3 -c "import struct,sys; print(struct.unpack_from('<Q', open(sys.argv[1],'rb').read(64), 0x28)[0])" "$IMG")
printf 'XXXX' | dd of="$IMG" bs=1 seek=$((data + (pblock + 1) * 4096 + 100)) conv=notrunc status=none
fsck_expect 4 "$OUT" "$IMG"
grep -Eq "^/hard, /dir/file: block 1 \(file offset 4096\): checksum mismatch \(stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\)$" "$OUT" ||
	fail "the bad block: $(cat "$OUT")"
fsck_expect 4 "$OUT" -y "$IMG"
grep -q "no redundancy to repair it from" "$OUT" || fail "-y without redundancy: $(cat "$OUT")"
fsck_expect 0 "$OUT" --no-data "$IMG"

# --json: the same problem, with its path and inode.
"$PONY" fsck --json "$IMG" >"$OUT"; rc=$?
[ "$rc" -eq 4 ] || fail "fsck --json: exit $rc"
python3 - "$OUT" "$file" <<'PY' || fail "fsck --json: $(cat "$OUT")"
import json, sys
j = json.load(open(sys.argv[1]))
p, = j["problems"]
run, = j["fsck"]
assert p["check"] == "checksum" and p["path"] == "/hard, /dir/file" and p["inode"] == int(sys.argv[2])
assert p["fixed"] is False and run["found"] == 1 and run["left"] == 1 and run["exit"] == 4
assert run["mode"] == "check" and run["error"] is None
PY
pass
