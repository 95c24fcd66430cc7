#!/usr/bin/env bash
# ponyfs_falloc.sh - preallocation through FUSE, with the kernel's own
# tools: fallocate takes the blocks at once (st_blocks, df) and writing
# the range adds none (generic/568); on a filesystem filled up after the
# fallocate, writing into the range, and overwriting it again, still
# succeeds and reads back; fsck is clean. And an image of schema version 1 (before unwritten extents):
# fsck checks it, a read-only mount reads it and leaves it version 1, a
# read-write mount upgrades it to version 3 (meta_chunks came after).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 xfs_io fallocate sqlite3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-falloc

blocks() { stat -c %b "$1"; }
bfree() { stat -f -c %f "$T/m"; }

truncate -s 64M "$T/a.img"
"$PONY" mkfs "$T/a.img" >/dev/null || fail "mkfs"
pony_mount "$T/a.img"

# generic/568: two bytes across a block boundary.
xfs_io -f -c "falloc 4095 2" "$T/m/f568" || fail "falloc"
b0=$(blocks "$T/m/f568")
xfs_io -c "pwrite 4095 2" "$T/m/f568" >/dev/null || fail "pwrite"
b1=$(blocks "$T/m/f568")
[ "$b0" = 16 ] && [ "$b1" = 16 ] || fail "st_blocks after falloc $b0, after the write $b1 (want 16, 16)"

# 4 MiB preallocated (KEEP_SIZE): df drops at once, the file reads empty.
f0=$(bfree)
xfs_io -f -c "falloc -k 0 4M" "$T/m/pre" || fail "falloc -k"
f1=$(bfree)
[ $((f0 - f1)) -ge 1024 ] || fail "df dropped by $((f0 - f1)) blocks for 4 MiB"
[ "$(stat -c %s "$T/m/pre")" = 0 ] || fail "KEEP_SIZE changed the size"
[ "$(blocks "$T/m/pre")" = 8192 ] || fail "st_blocks $(blocks "$T/m/pre") after 4 MiB"

# Fill the filesystem, then write the preallocated range: no ENOSPC.
dd if=/dev/zero of="$T/m/fill" bs=1M count=200 2>"$T/dd.err" && fail "200 MiB fit in 64 MiB"
grep -q "No space left on device" "$T/dd.err" || fail "not ENOSPC: $(cat "$T/dd.err")"
head -c 4M /dev/urandom >"$T/data"
dd if="$T/data" of="$T/m/pre" bs=64k conv=notrunc,fsync 2>"$T/dd.err" ||
	fail "writing the preallocated range of a full filesystem: $(cat "$T/dd.err")"
[ "$(blocks "$T/m/pre")" = 8192 ] || fail "st_blocks grew to $(blocks "$T/m/pre") by the write"
# And again: an overwrite, copy-on-write, lent its blocks by the overwrite reserve.
head -c 4M /dev/urandom >"$T/data"
dd if="$T/data" of="$T/m/pre" bs=64k conv=notrunc,fsync 2>"$T/dd.err" ||
	fail "overwriting the range on a full filesystem: $(cat "$T/dd.err")"
"$PONY" stat --counters "$T/m" | grep -q "^overwrite_loans [1-9]" ||
	fail "no overwrite was lent a block: $("$PONY" stat --counters "$T/m")"
pony_umount
"$PONY" fsck "$T/a.img" >"$T/fsck.out" || fail "fsck: $(cat "$T/fsck.out")"
pony_mount "$T/a.img"
cmp "$T/data" "$T/m/pre" || fail "the preallocated file does not read back"
pony_umount

# db_off IMG: where the database starts (the superblock's db_off, 4096 before chunk tables).
db_off() {
	local flags
	flags=$(od -An -tu4 -j $((0x24)) -N4 "$1" | tr -d ' ')
	if [ $((flags & 1)) = 1 ]; then od -An -tu8 -j $((0x78)) -N8 "$1" | tr -d ' '; else echo 4096; fi
}
# db_copy IMG OUT / db_back OUT IMG: the SQLite database of a one-image ponyfs
# (unmounted: WAL checkpointed) out to a file and back.
db_copy() {
	local pages off
	off=$(db_off "$1")
	pages=$(od -An -tu1 -j $((off + 28)) -N4 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4 }')
	dd if="$1" of="$2" bs=4096 skip=$((off / 4096)) count="$pages" status=none
}
db_back() { dd if="$1" of="$2" bs=4096 seek=$(($(db_off "$2") / 4096)) conv=notrunc status=none; }
version() { db_copy "$1" "$T/v.db" && sqlite3 "$T/v.db" "PRAGMA user_version"; }

# A version 1 image: what an older pony made (no extents.flags column).
truncate -s 64M "$T/old.img"
"$PONY" mkfs "$T/old.img" >/dev/null || fail "mkfs old"
pony_mount "$T/old.img"
head -c 300000 /dev/urandom >"$T/m/data"
cp "$T/m/data" "$T/data"
pony_umount
db_copy "$T/old.img" "$T/old.db"
sqlite3 "$T/old.db" "ALTER TABLE extents DROP COLUMN flags; DROP TABLE meta_chunks;
	DROP INDEX inodes_crypt; ALTER TABLE inodes DROP COLUMN crypt;
	DROP INDEX extents_pblock; PRAGMA user_version = 1;" ||
	fail "sqlite3 could not make a version 1 database"
db_back "$T/old.db" "$T/old.img"
[ "$(version "$T/old.img")" = 1 ] || fail "not a version 1 image"
"$PONY" fsck "$T/old.img" >"$T/fsck.out" || fail "fsck of version 1: $(cat "$T/fsck.out")"
pony_mount -o ro "$T/old.img"
cmp "$T/data" "$T/m/data" || fail "version 1 read-only: data differs"
pony_umount
[ "$(version "$T/old.img")" = 1 ] || fail "a read-only mount changed the version"
pony_mount "$T/old.img"
cmp "$T/data" "$T/m/data" || fail "version 1 read-write: data differs"
fallocate -l 1M "$T/m/pre" || fail "fallocate on the upgraded image"
pony_umount
[ "$(version "$T/old.img")" = 5 ] || fail "a read-write mount left version $(version "$T/old.img")"
"$PONY" fsck "$T/old.img" >"$T/fsck.out" || fail "fsck after the upgrade: $(cat "$T/fsck.out")"

# A version 4 image (before the extents_pblock index): read-only leaves
# it as it is, read-write adds the index and makes it version 5.
db_copy "$T/old.img" "$T/v4.db"
sqlite3 "$T/v4.db" "DROP INDEX extents_pblock; PRAGMA user_version = 4;" ||
	fail "sqlite3 could not make a version 4 database"
db_back "$T/v4.db" "$T/old.img"
pony_mount -o ro "$T/old.img"
cmp "$T/data" "$T/m/data" || fail "version 4 read-only: data differs"
pony_umount
[ "$(version "$T/old.img")" = 4 ] || fail "a read-only mount changed version 4"
pony_mount "$T/old.img"
cmp "$T/data" "$T/m/data" || fail "version 4 read-write: data differs"
pony_umount
[ "$(version "$T/old.img")" = 5 ] || fail "version 4 read-write left version $(version "$T/old.img")"
db_copy "$T/old.img" "$T/v5.db"
[ "$(sqlite3 "$T/v5.db" "SELECT count(*) FROM sqlite_master WHERE name = 'extents_pblock'")" = 1 ] ||
	fail "the version 4 to 5 upgrade made no extents_pblock index"
"$PONY" fsck "$T/old.img" >"$T/fsck.out" || fail "fsck after the v4 upgrade: $(cat "$T/fsck.out")"
echo "ok: preallocation through FUSE, and the version 1 upgrade"
