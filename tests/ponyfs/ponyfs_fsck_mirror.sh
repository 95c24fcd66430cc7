#!/usr/bin/env bash
# ponyfs_fsck_mirror.sh - fsck compares the copies of a pony volume's
# metadata mirror, where `pony vol scrub` used to find mismatches that
# fsck called clean. On a volume of three images (metadata mirrored three
# ways): bytes written into one member's copy of a database page are
# reported by member, region bytes and page, with no byte written by -n;
# -p rewrites them from the one copy that is a clean database (exit 1),
# after which fsck is clean and scrub finds nothing. A bad copy on the
# member reads come from (member 0) is replaced from the others. Copies
# that are all clean databases but differ cannot be told apart: left, and
# said so (exit 4).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_cmd python3

. "$PONY_SRCDIR/tests/ponyfs/fsck_lib.sh"
fsck_scratch fsck-mirror
OUT=$T/fsck.out
IMGS=("$T"/r{0,1,2}.img)

for i in 0 1 2; do truncate -s 64M "$T/r$i.img"; done
"$PONY" mkfs --data raid5 --assume-clean "${IMGS[@]}" >/dev/null || fail "mkfs"
fsck_expect 0 "$OUT" "${IMGS[@]}"

# scribble IMG PAGE BYTE: fills database page PAGE (from 1) of IMG's copy with BYTE.
scribble() {
	python3 - "$@" <<'PY'
import mmap, sys
img, page, byte = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0)
with open(img, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    at = m.find(b"SQLite format 3\0")
    assert at >= 0, "no database on " + img
    m[at + (page - 1) * 4096:at + page * 4096] = bytes([byte]) * 4096
    m.flush()
PY
}

# db_copy IMG: the first 64 KiB of IMG's copy of the database.
db_copy() {
	python3 -c 'import sys; m = open(sys.argv[1], "rb").read(); a = m.find(b"SQLite format 3\0")
sys.stdout.buffer.write(m[a:a + 65536])' "$1"
}

# Member 1's copy of page 2 (a table's root) is junk.
scribble "$T/r1.img" 2 0xee
sha256sum "${IMGS[@]}" >"$T/sums"
fsck_expect 4 "$OUT" -n "${IMGS[@]}"
sha256sum --quiet -c "$T/sums" || fail "fsck -n wrote to the members"
# (The database follows the superblock and the chunk table's two copies: it starts at 12288.)
grep -qx "${IMGS[0]}: metadata mirror: member 1 (${IMGS[1]}) differs from member 0 (${IMGS[0]}) at region bytes 16384-20479 (database page 2)" "$OUT" ||
	fail "the mismatch is not reported: $(cat "$OUT")"
fsck_expect 1 "$OUT" -p "${IMGS[@]}"
grep -q "database page 2): rewritten from member 0, the one copy that is a clean database$" "$OUT" ||
	fail "-p: $(cat "$OUT")"
fsck_expect 0 "$OUT" "${IMGS[@]}"
"$PONY" vol scrub "${IMGS[@]}" >"$OUT" 2>&1 || fail "vol scrub: $(cat "$OUT")"
record_field MISMATCHES <"$OUT" | grep -qx 0 || fail "scrub after the repair: $(cat "$OUT")"

# Member 0 is the bad one: reads come from it, so the database looks
# corrupt; the two others agree and are clean, and win.
scribble "$T/r0.img" 2 0xee
fsck_expect 8 "$OUT" -n "${IMGS[@]}"
grep -q "member 2 (${IMGS[2]}) differs from member 0" "$OUT" || fail "member 0 bad: $(cat "$OUT")"
fsck_expect 1 "$OUT" -y "${IMGS[@]}"
grep -q "rewritten from member 1, the one copy that is a clean database" "$OUT" || fail "-y: $(cat "$OUT")"
cmp -s <(db_copy "$T/r0.img") <(db_copy "$T/r1.img") || fail "member 0's copy was not rewritten"
fsck_expect 0 "$OUT" "${IMGS[@]}"

# Differences only where the database does not reach: every copy is a
# clean database, so there is nothing to decide by.
scribble "$T/r1.img" 1000 0x01
scribble "$T/r2.img" 1000 0x02
fsck_expect 4 "$OUT" -y "${IMGS[@]}"
grep -q "cannot tell which to trust, left as they are" "$OUT" || fail "undecidable: $(cat "$OUT")"
fsck_expect 4 "$OUT" "${IMGS[@]}"
pass
