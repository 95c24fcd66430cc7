#!/usr/bin/env bash
# ponyfs_ioctls.sh - what FUSE does not carry, through a real ponyfs mount
# and the pony commands that make the ioctls: `pony stat --fields` computes
# only the fields asked for (no extent walk without blocks) and --dont-sync
# flushes and writes nothing; `pony barrier` writes the file's data back
# without committing; `pony sync` commits; and `pony shutdown` (fstests'
# godown's XFS_IOC_GOINGDOWN) is a power cut: nothing more reaches the image,
# not even at unmount, every later call fails with EIO, and the next mount
# holds exactly the committed state (what was fsynced or synced, nothing
# after it), fsck clean; godown -f's flavour commits what was written first.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ioctls
M=$T/m

# Bad input, no FUSE needed.
expect_usage_error "$PONY" barrier
expect_usage_error "$PONY" sync
expect_usage_error "$PONY" shutdown
expect_usage_error "$PONY" stat --fields bogus "$T"
expect_usage_error "$PONY" stat --fields size
expect_failure "$PONY" sync "$T"                      # not a pony mount
expect_failure "$PONY" stat --counters "$T/missing"
for c in barrier sync stat shutdown; do
	"$PONY" "$c" --help | grep -q Usage || fail "$c --help"
done

require_fuse
require_cmd fusermount3
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" || fail "mkfs"

counter() { "$PONY" stat --counters "$M" | awk -v k="$1" '$1 == k { print $2 }'; }
# The work counters (rows served from memory or read are not work done).
counters() { "$PONY" stat --counters "$M" | grep -v '^row_' | tr '\n' ' '; }

# No commit timer: what is committed is what fsync and pony sync made so.
pony_mount --commit 0 "$T/img"
head -c 100000 /dev/urandom > "$T/data"
cp "$T/data" "$M/f" || fail "write f"

# statx light: size and mtime without an extent walk, and right.
# The kernel's own GETATTR (all fields) walks the extents when its cached
# attributes expire between the ls and pony stat's open, which a loaded
# machine can stretch past the timeout: one try without a walk
# proves the ioctl itself walks nothing (ten tries: CI machines are busy).
for try in $(seq 1 10); do
	ls -l "$M/f" >/dev/null         # the kernel's own lookup, done now
	walks=$(counter extent_walks) cached=$(counter blocks_cached)
	out=$("$PONY" stat --fields size,mtime "$M/f") || fail "pony stat"
	[ "$(counter extent_walks)" = "$walks" ] && break
	[ "$try" = 10 ] && fail "size,mtime walked the extents"
done
[ "$(record_field size <<<"$out")" = 100000 ] || fail "pony stat size: $out"
[ "$(record_field mtime <<<"$out" | cut -d. -f1)" = "$(stat -c %Y "$M/f")" ] ||
	fail "pony stat mtime: $out"
out=$("$PONY" stat --fields blocks "$M/f") || fail "pony stat blocks"
# Counted by a walk, or kept in the row cache from the ls's walk (rowcache.c).
[ $(($(counter extent_walks) + $(counter blocks_cached))) -gt $((walks + cached)) ] ||
	fail "blocks were neither walked nor cached"
[ "$(record_field blocks <<<"$out")" = "$(stat -c %b "$M/f")" ] || fail "pony stat blocks: $out"
"$PONY" stat --json --fields size,mode,mtime "$M/f" | python3 -c '
import json, os, sys
d = json.load(sys.stdin)["stat"]
st = os.stat(sys.argv[1])
assert len(d) == 1 and d[0]["size"] == 100000 and d[0]["mode"] == "0%o" % st.st_mode, d
assert int(d[0]["mtime"]) == int(st.st_mtime), d' "$M/f" || fail "pony stat --json"

# DONT_SYNC: f's data is still cached; nothing is written, flushed or committed.
# The same kernel GETATTR can land between the two counter reads (a
# parallel make check under load saw extent_walks 6 -> 7): one try in ten
# with every counter unchanged proves the ioctl did nothing.
[ "$(counter dirty_bytes)" -gt 0 ] || fail "f's data is not cached"
dirty=$(counter dirty_bytes) commits=$(counter commits)
for try in $(seq 1 10); do
	ls -l "$M/f" >/dev/null
	before=$(counters)
	out=$("$PONY" stat --dont-sync --fields size "$M/f") || fail "pony stat --dont-sync"
	[ "$(record_field size <<<"$out")" = 100000 ] || fail "--dont-sync size: $out"
	[ "$(counters)" = "$before" ] && break
	[ "$try" = 10 ] && fail "--dont-sync did work: $before -> $(counters)"
done
# A retry must not hide a first try that did write: the data is still cached.
[ "$(counter dirty_bytes)" = "$dirty" ] && [ "$(counter commits)" = "$commits" ] ||
	fail "--dont-sync wrote back or committed: $(counters)"

# barrier: f's data written back, nothing committed, nothing waited for.
commits=$(counter commits)
"$PONY" barrier "$M/f" || fail "pony barrier"
[ "$(counter dirty_bytes)" = 0 ] || fail "barrier left f's data cached"
[ "$(counter writebacks)" -ge 1 ] || fail "barrier wrote nothing back"
[ "$(counter commits)" = "$commits" ] || fail "barrier committed"
expect_failure "$PONY" barrier "$M"      # a directory has no data

# sync commits; an fsync commits; what comes after them is committed by nothing.
"$PONY" sync "$M" || fail "pony sync"
[ "$(counter commits)" -gt "$commits" ] || fail "pony sync did not commit"
head -c 5000 /dev/urandom > "$T/fsynced"
dd if="$T/fsynced" of="$M/fsynced" conv=fsync status=none || fail "write + fsync"
echo lost > "$M/after-fsync"
echo overwritten | dd of="$M/f" conv=notrunc status=none || fail "overwrite f"

# The power cut: the image does not change from here on, unmount included.
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PONY" shutdown "$M" 2>/dev/null &&
		fail "a user could shut the filesystem down"
	[ "$(cat "$M/fsynced" | md5sum)" = "$(md5sum < "$T/fsynced")" ] || fail "read after a refused shutdown"
fi
"$PONY" shutdown "$M" || fail "pony shutdown"
sum=$(md5sum < "$T/img")
for op in "cat $M/fsynced" "ls $M" "touch $M/new" "mkdir $M/d" "rm $M/f"; do
	$op >/dev/null 2>"$T/err" && fail "'$op' worked after the shutdown"
	grep -q "Input/output error" "$T/err" || fail "'$op': $(cat "$T/err")"
done
expect_failure "$PONY" sync "$M"
pony_umount
[ "$(md5sum < "$T/img")" = "$sum" ] || fail "the image changed after the shutdown"

# The next mount: the committed state, as after a crash.
"$PONY" fsck "$T/img" >"$T/fsck" || fail "fsck after the shutdown: $(cat "$T/fsck")"
pony_mount --commit 0 "$T/img"
cmp -s "$T/data" "$M/f" || fail "f lost its synced content"
cmp -s "$T/fsynced" "$M/fsynced" || fail "the fsynced file is not whole"
[ -e "$M/after-fsync" ] && fail "an uncommitted file survived the power cut"
echo again > "$M/again" || fail "a write after the remount"

# godown -f (XFS_GOING_FLAGS_LOGFLUSH, the flags word read from the caller):
# what was written commits first, then the cut.
if command -v perl >/dev/null; then
	echo flushed > "$M/unsynced"
	perl -e 'open(my $d, "<", $ARGV[0]) or die "$!\n";
		 my $f = pack("L", 1); ioctl($d, 0x8004587d, $f) or die "GOINGDOWN: $!\n"' "$M" ||
		fail "godown -f"
	touch "$M/later" 2>/dev/null && fail "a write after godown -f"
	pony_umount
	pony_mount --commit 0 "$T/img"
	[ "$(cat "$M/unsynced")" = flushed ] || fail "godown -f lost what was written"
	[ "$(cat "$M/again")" = again ] || fail "godown -f lost the earlier file"
fi
pony_umount
pass
