#!/usr/bin/env bash
# ponyfs_fsck_unclean.sh - fsck -n after a crash does not call in-flight
# writes corruption. A volume killed mid-write (SIGKILL of the mount, as a
# power cut) may leave the copies of its metadata mirror differing where
# the last write-ahead log frames reached some members only; the
# write-intent bitmap marks those regions and the next writable open
# resyncs them, as md resyncs a dirty array. CI once failed nbd_crash on
# exactly that: fsck -n reported five "differs from member 0" problems in
# the log's last frames (exit 4) on a volume whose every acknowledged
# byte was intact. Here the difference is made on purpose in member 1's
# copy of the log after the crash: fsck -n exits 0 and says the copies
# will be resynced, writing nothing; fsck -p resyncs (a writable
# assembly), after which the copies agree and nothing is said; the same
# difference on a volume closed clean is still a problem (exit 4).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" fsck-unclean
. "$PONY_SRCDIR/tests/ponyfs/fsck_lib.sh"
OUT=$T/fsck.out

volume_images raid5 3 64M --assume-clean

# wal_scribble IMG: 4 KiB of junk at byte 8192 of IMG's copy of the
# write-ahead log (the database's region, then the log: docs/ponyfs-format.md).
wal_scribble() {
	python3 - "$1" <<'PY'
import mmap, struct, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    at = m.find(b"SQLite format 3\0")
    assert at >= 0, "no database on " + sys.argv[1]
    sb = at - 12288                          # the superblock, then the chunk table's two copies
    assert m[sb:sb + 8] == b"PONYFS1\0", "no ponyfs superblock before the database"
    db_bytes, = struct.unpack_from("<Q", m, sb + 0x30)
    wal = at + db_bytes + 8192
    m[wal:wal + 4096] = b"\xee" * 4096
    m.flush()
PY
}
wal_copy() {
	python3 - "$1" <<'PY'
import struct, sys
m = open(sys.argv[1], "rb").read()
at = m.find(b"SQLite format 3\0")
db_bytes, = struct.unpack_from("<Q", m, at - 12288 + 0x30)
sys.stdout.buffer.write(m[at + db_bytes:at + db_bytes + 65536])
PY
}

# The crash: files written and synced, then the daemon killed.
pony_mount "${imgs[@]}"
for i in $(seq 40); do head -c 20000 /dev/urandom >"$T/m/f$i"; done
sync -f "$T/m/f1" || fail "sync"
kill -KILL "$PONY_PID"
wait "$PONY_PID" 2>/dev/null
PONY_PID=
fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"

wal_scribble "${imgs[1]}"
sha256sum "${imgs[@]}" >"$T/sums"
fsck_expect 0 "$OUT" -n "${imgs[@]}"
grep -qx "${imgs[0]}: 4096 bytes of the metadata mirror's copies differ where writes were in flight at an unclean shutdown; the next writable open resyncs them" "$OUT" ||
	fail "fsck -n after the crash does not say the copies wait for a resync: $(cat "$OUT")"
grep -q "differs from member" "$OUT" && fail "in-flight writes called a problem: $(cat "$OUT")"
sha256sum --quiet -c "$T/sums" || fail "fsck -n wrote to the members"

# A writable open resyncs: the copies agree after it.
fsck_expect 0 "$OUT" -p "${imgs[@]}"
cmp -s <(wal_copy "${imgs[0]}") <(wal_copy "${imgs[1]}") || fail "fsck -p did not resync member 1's copy"
fsck_expect 0 "$OUT" -n "${imgs[@]}"
grep -q "in flight" "$OUT" && fail "a clean volume said to wait for a resync: $(cat "$OUT")"

# Closed clean, the same difference is a problem of the copies.
pony_mount "${imgs[@]}"
echo after >"$T/m/after"
pony_umount
wal_scribble "${imgs[1]}"
fsck_expect 4 "$OUT" -n "${imgs[@]}"
grep -q "metadata mirror: member 1 (${imgs[1]}) differs from member 0 (${imgs[0]}) at region bytes .* (write-ahead log bytes 8192-12287)" "$OUT" ||
	fail "a difference on a clean volume is not reported: $(cat "$OUT")"
pass
