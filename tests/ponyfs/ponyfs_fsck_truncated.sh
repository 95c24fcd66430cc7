#!/usr/bin/env bash
# ponyfs_fsck_truncated.sh - fsck of a truncated image says which region
# is short and by how much instead of a generic error. The metadata region
# short: exit 8 (nothing can be checked); the data region short: the
# metadata is checked all the same, and extents past the end are named
# (exit 4). The image is not written to by the check.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_cmd python3

. "$PONY_SRCDIR/tests/ponyfs/fsck_lib.sh"
fsck_scratch fsck-truncated
IMG=$T/a.img
OUT=$T/fsck.out
M=$((4 << 20))                  # a 64 MiB image's metadata region

truncate -s 64M "$IMG"
"$PONY" mkfs "$IMG" >/dev/null || fail "mkfs"
# A file's extent near the end of the data region, as if written there.
img_sql "$IMG" "INSERT INTO inodes (mode, uid, gid, nlink, size, atime, mtime, ctime, btime)
		VALUES (33188, 0, 0, 1, 8192, 0, 0, 0, 0);
	INSERT INTO dentries SELECT 1, CAST('late' AS BLOB), max(ino), 3 FROM inodes;
	UPDATE inodes SET next_cookie = 4 WHERE ino = 1;
	INSERT INTO extents (ino, foff, nblocks, pblock, csums, flags)
		SELECT max(ino), 0, 2, 15000, zeroblob(8), 0 FROM inodes;
	UPDATE free SET nblocks = 15000 - pblock;
	INSERT INTO free VALUES (15002, 15360 - 15002)" >/dev/null
fsck_expect 0 "$OUT" --no-data "$IMG"       # its sums are made up: not read here

# The data region short by 24 MiB: named, the rest checked, exit 4.
truncate -s 40M "$IMG"
sum=$(sha256sum <"$IMG")
fsck_expect 4 "$OUT" "$IMG"
grep -qx "$IMG: truncated: data region needs 67108864 bytes, image has 41943040 (short by 25165824)" "$OUT" ||
	fail "the short data region: $(cat "$OUT")"
grep -q "^/late: block 0 (file offset 0): data blocks 15000-15001 lie past the end of the truncated data region (9216 blocks present)$" "$OUT" ||
	fail "the file past the end: $(cat "$OUT")"
[ "$(sha256sum <"$IMG")" = "$sum" ] || fail "fsck wrote to the truncated image"
fsck_expect 4 "$OUT" -y "$IMG"              # nothing to fix it with
grep -q "short by 25165824" "$OUT" || fail "-y: $(cat "$OUT")"

# The metadata region short by 2 MiB: named, exit 8.
truncate -s 2M "$IMG"
fsck_expect 8 "$OUT" "$IMG"
grep -qx "$IMG: truncated: metadata region needs $M bytes, image has 2097152 (short by $((M - 2097152)))" "$OUT" ||
	fail "the short metadata region: $(cat "$OUT")"
pass
