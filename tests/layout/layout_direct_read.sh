#!/usr/bin/env bash
# layout_direct_read.sh - the direct reader (libpony-layout, `pony fs cat
# --direct`) on real mounts over image members: on a RAID6 of six images,
# a mirror of two and a one-image ponyfs, files with holes, unwritten
# (fallocate) ranges, several extents, data still cached in the daemon and
# sizes that are not a multiple of 4096 read the same bytes directly as
# through the mount (a file of several 16 MiB chunks too, which cat
# --direct's readers take as each is free), whole and at random offsets (layout_read_check, linked
# against libpony-layout.so); a data block corrupted on its member with dd
# is rebuilt from parity or the other copy (and the member is left as it
# was: the reader never writes); with a member missing (mount --degraded)
# its blocks are rebuilt, exactly those counted as rebuilt; an encrypted file is refused with a message that
# says why; bad usage and files off a pony mount are errors people can act on.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
CHECK=$1

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-direct

# same FILE REF: --direct, through the mount and REF agree, and the library
# agrees with the mount at random offsets. A direct read that hangs (its
# readers waiting for a chunk's turn that never comes) fails in 120 s.
same() {
	timeout 120 "$PONY" fs cat --direct --stats "$1" >"$T/direct.out" 2>"$T/stats" ||
		fail "cat --direct $1: $(cat "$T/stats")"
	cmp "$T/direct.out" "$2" || fail "cat --direct $1 differs from what was written"
	"$PONY" fs cat "$1" | cmp - "$2" || fail "cat $1 (through the mount) differs"
	"$CHECK" "$1" || fail "layout_read_check $1"
}
# stat_of WHAT: a number of the last --stats line ("blocks rebuilt", ...).
stat_of() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$T/stats"; }

# The first data piece of FILE as "DEVICE MEMBER_OFFSET".
first_piece() {
	"$PONY" fs layout --json "$1" | python3 -c '
import json, sys
l = json.load(sys.stdin)
p = next(p for e in l["extents"] for p in e.get("children", []) if p["role"] == "data")
print(p["device"], p["member_offset"])'
}

# corrupt FILE: 4 KiB of garbage over FILE's first data block, on its member.
corrupt() {
	local dev off
	read -r dev off < <(first_piece "$1") || fail "no data piece for $1"
	head -c 4096 /dev/urandom >"$T/garbage"
	dd if="$T/garbage" of="$dev" bs=4096 seek=$((off / 4096)) count=1 conv=notrunc status=none ||
		fail "dd over $dev"
	CORRUPT_DEV=$dev CORRUPT_OFF=$off
}

# Files of every shape, written and synced but f_dirty (cached in the daemon).
make_files() {
	local m=$1
	head -c 3000123 /dev/urandom >"$T/big"
	cp "$T/big" "$m/big"
	# Holes: a sparse file with data at odd places, its size odd.
	rm -f "$T/holes"
	truncate -s 1234567 "$T/holes"
	head -c 10000 /dev/urandom | dd of="$T/holes" bs=1 seek=100000 conv=notrunc status=none
	head -c 5000 /dev/urandom | dd of="$T/holes" bs=1 seek=700001 conv=notrunc status=none
	truncate -s 1234567 "$m/holes"
	dd if="$T/holes" of="$m/holes" bs=1 skip=100000 seek=100000 count=10000 conv=notrunc status=none
	dd if="$T/holes" of="$m/holes" bs=1 skip=700001 seek=700001 count=5000 conv=notrunc status=none
	# Unwritten: 2 MiB fallocated, 12 KiB written in its middle, 777 bytes appended.
	fallocate -l 2097152 "$m/falloc" || fail "fallocate"
	head -c 12288 /dev/urandom >"$T/mid"
	dd if="$T/mid" of="$m/falloc" bs=4096 seek=100 conv=notrunc status=none
	head -c 777 /dev/urandom >>"$m/falloc"
	# Several extents: written, synced, overwritten in the middle (copy on write), appended.
	head -c 600000 /dev/urandom >"$m/multi"
	"$PONY" sync "$m" || fail "pony sync"
	head -c 50000 /dev/urandom | dd of="$m/multi" bs=1 seek=200000 conv=notrunc status=none
	head -c 12345 /dev/urandom >>"$m/multi"
	"$PONY" sync "$m" || fail "pony sync"
	cp "$m/falloc" "$T/falloc"
	cp "$m/multi" "$T/multi"
	cp "$T/holes" "$T/holes.ref"
	"$PONY" fs cat "$m/holes" | cmp - "$T/holes" || fail "the mount's holes file is not the reference"
}

# --- RAID6 of six images ---------------------------------------------------
raid6_mount
make_files "$T/m"

same "$T/m/big" "$T/big"
[ "$(stat_of "bytes from members")" -ge 3000123 ] || fail "big: not read from members: $(cat "$T/stats")"
[ "$(stat_of "blocks rebuilt")" = 0 ] || fail "big: rebuilt blocks on a clean volume: $(cat "$T/stats")"
# Three 16 MiB chunks and a bit: cat --direct's readers (one per core) take
# the next free one each and must write them in order, the short last one
# last (a chunk left untaken hangs the others, waiting for its turn).
head -c $((36 * 1048576 + 12345)) /dev/urandom >"$T/large"
cp "$T/large" "$T/m/large"
"$PONY" sync "$T/m" || fail "pony sync"
same "$T/m/large" "$T/large"
[ "$(stat_of "bytes from members")" -ge $((36 * 1048576 + 12345)) ] ||
	fail "large: not read from members: $(cat "$T/stats")"
same "$T/m/holes" "$T/holes.ref"
[ "$(stat_of "zeros")" -gt 0 ] || fail "holes: no zeros: $(cat "$T/stats")"
same "$T/m/falloc" "$T/falloc"
[ "$(stat_of "zeros")" -ge 2000000 ] || fail "falloc: unwritten not zeros: $(cat "$T/stats")"
same "$T/m/multi" "$T/multi"
: >"$T/empty"
touch "$T/m/empty"
same "$T/m/empty" "$T/empty"

# Cached in the daemon (dirty): read through the mount, the same bytes.
head -c 70000 /dev/urandom >"$T/dirty"
exec 3>"$T/m/dirty"
cat "$T/dirty" >&3
same "$T/m/dirty" "$T/dirty"
exec 3>&-
[ "$(stat_of "through the mount")" -gt 0 ] || fail "dirty: not read through the mount: $(cat "$T/stats")"

# A bad block on its member: rebuilt from P and Q, the member left as it was.
corrupt "$T/m/big"
"$PONY" fs cat --direct --stats "$T/m/big" >"$T/direct.out" 2>"$T/stats" ||
	fail "cat --direct of a file with a bad block: $(cat "$T/stats")"
cmp "$T/direct.out" "$T/big" || fail "a bad block was not rebuilt"
[ "$(stat_of "blocks rebuilt")" = 1 ] || fail "bad block: $(cat "$T/stats")"
dd if="$CORRUPT_DEV" bs=4096 skip=$((CORRUPT_OFF / 4096)) count=1 status=none | cmp - "$T/garbage" ||
	fail "the direct reader wrote to a member"
"$CHECK" "$T/m/big" || fail "layout_read_check over a bad block"

# Encrypted: refused, with the reason.
head -c 64 /dev/urandom >"$T/key"
id=$("$PONY" crypt add-key "$T/m" <"$T/key") || fail "crypt add-key"
mkdir "$T/m/enc" && "$PONY" crypt set-policy "$T/m/enc" "$id" || fail "crypt set-policy"
echo "secret" >"$T/m/enc/f"
"$PONY" sync "$T/m"
out=$("$PONY" fs cat --direct "$T/m/enc/f" 2>&1 >/dev/null) && fail "an encrypted file was read directly"
echo "$out" | grep -q "enc/f is encrypted: keys never leave the mount; read it through the mount" ||
	fail "encrypted: $out"
[ "$("$PONY" fs cat "$T/m/enc/f")" = secret ] || fail "cat through the mount of an encrypted file"

# Errors people can act on.
out=$("$PONY" fs cat --direct "$T/m/enc" 2>&1) && fail "a directory was read"
echo "$out" | grep -q "is a directory" || fail "directory: $out"
out=$("$PONY" fs cat --direct "$T/big" 2>&1 >/dev/null) && fail "a file off the mount was read directly"
echo "$out" | grep -q "$T/big: not on a pony mount" || fail "off the mount: $out"
out=$("$PONY" fs cat --direct "$T/m/nothing" 2>&1) && fail "a missing file was read"
echo "$out" | grep -q "nothing: No such file" || fail "missing file: $out"
expect_usage_error "$PONY" fs cat --direct
expect_usage_error "$PONY" fs cat --stats "$T/m/big"
expect_usage_error "$PONY" fs cat --bogus "$T/m/big"
"$PONY" fs cat --help | grep -q "Usage: pony fs cat" || fail "--help"
pony_umount

# --- the same volume with member 2 missing (mount --degraded) --------------
mv "$T/m2.img" "$T/gone.img"
pony_mount --degraded "$T/m0.img" "$T/m1.img" "$T/m3.img" "$T/m4.img" "$T/m5.img"
# The layout says so: member 2 failed, with no device; the others working.
"$PONY" fs layout --json "$T/m/big" | python3 -c '
import json, sys
m = json.load(sys.stdin)["members"]
assert [x["state"] for x in m] == ["working"] * 2 + ["failed"] + ["working"] * 3, m
assert m[2]["device"] is None and all(x["device"] for x in m[:2] + m[3:]), m' ||
	fail "degraded: the layout's members: $("$PONY" fs layout --json "$T/m/big")"
same "$T/m/big" "$T/big"
# Rebuilt: exactly member 2's data blocks, and perhaps the block corrupted
# above (unless the daemon mended it meanwhile, reading the file through
# the mount); the rest of their stripes, read with them through the volume,
# counts as read from members.
lost=$("$PONY" fs layout --json "$T/m/big" | python3 -c '
import json, sys
l = json.load(sys.stdin)
gone = [m["member"] for m in l["members"] if m["state"] != "working"]
print(sum((p["length"] + 4095) // 4096 for e in l["extents"] for p in e.get("children", [])
          if p["role"] == "data" and p["member"] in gone) if gone == [2] else -1)')
[ "$lost" -gt 100 ] || fail "degraded: member 2 holds $lost data blocks of big"
rebuilt=$(stat_of "blocks rebuilt")
[ "$rebuilt" -ge "$lost" ] && [ "$rebuilt" -le $((lost + 1)) ] ||
	fail "degraded: $lost blocks of big on member 2 (and one corrupted), rebuilt: $(cat "$T/stats")"
[ $(($(stat_of "bytes from members") + rebuilt * 4096)) -ge 3000123 ] ||
	fail "degraded: big not all from members or rebuilt: $(cat "$T/stats")"
same "$T/m/large" "$T/large"
same "$T/m/holes" "$T/holes.ref"
same "$T/m/falloc" "$T/falloc"
same "$T/m/multi" "$T/multi"
pony_umount
mv "$T/gone.img" "$T/m2.img"

# --- a mirror of two images --------------------------------------------------
rm -f "$T"/m?.img
truncate -s 64M "$T/a.img" "$T/b.img"
"$PONY" mkfs --data mirror "$T/a.img" "$T/b.img" >/dev/null || fail "mkfs --data mirror"
pony_mount --commit 3600000 "$T/a.img" "$T/b.img"
make_files "$T/m"
same "$T/m/big" "$T/big"
same "$T/m/holes" "$T/holes.ref"
same "$T/m/falloc" "$T/falloc"
same "$T/m/multi" "$T/multi"
corrupt "$T/m/multi"
same "$T/m/multi" "$T/multi"
[ "$(stat_of "blocks rebuilt")" = 1 ] || fail "mirror bad block: $(cat "$T/stats")"
pony_umount

# --- one image: no members to name, the mount reads ---------------------------
truncate -s 64M "$T/one.img"
"$PONY" mkfs "$T/one.img" >/dev/null || fail "mkfs"
pony_mount "$T/one.img"
make_files "$T/m"
same "$T/m/big" "$T/big"
same "$T/m/holes" "$T/holes.ref"
same "$T/m/falloc" "$T/falloc"
same "$T/m/multi" "$T/multi"
pony_umount
pass
