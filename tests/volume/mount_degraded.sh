#!/usr/bin/env bash
# mount_degraded.sh - `pony mount` and `pony fsck` of a ponyfs on a RAID6
# of six images with members absent: five of six is refused without
# --degraded, naming the missing member, and nothing is mounted or
# written; with --degraded it mounts and says it runs degraded; the sixth
# member, back, is named stale, and the files written meanwhile read right
# (nothing stale is read); fsck of the degraded volume checks it read-only
# and says so, and --repair needs --degraded; too few members say how many
# raid6 needs, not "not a ponyfs".
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" mount-degraded

for i in 0 1 2 3 4 5; do truncate -s 64M "$T/d$i.img"; done
all=("$T"/d{0,1,2,3,4,5}.img)
five=("$T"/d{0,1,2,3,4}.img)
"$PONY" mkfs --data raid6 --metadata mirror --assume-clean "${all[@]}" > /dev/null || fail "mkfs"
head -c 1000000 /dev/urandom > "$T/a"
head -c 1000000 /dev/urandom > "$T/b"
pony_mount "${all[@]}"
cp "$T/a" "$T/m/a" || fail "write a"
pony_umount

# Five of six without --degraded: refused, the missing member named, nothing touched.
md5sum "${five[@]}" > "$T/sums"
# (In the background, as a refusal comes before the daemon forks: a mount that
# wrongly succeeds returns, and the exit trap unmounts it.)
"$PONY" mount "${five[@]}" "$T/m" 2> "$T/err" && fail "mounted five of six without --degraded"
mountpoint -q "$T/m" && fail "five of six got mounted"
grep -q "member 5 is missing (member UUID " "$T/err" || fail "missing member not named: $(cat "$T/err")"
grep -q -- "--degraded" "$T/err" || fail "no word of --degraded: $(cat "$T/err")"
grep -q "not a ponyfs" "$T/err" && fail "five of six called 'not a ponyfs': $(cat "$T/err")"
md5sum -c --quiet "$T/sums" || fail "a refused mount wrote to the members"

# --degraded: mounts, says so, writes go on.
: > "$T/pony.log"
pony_mount --degraded "${five[@]}"
grep -q "runs degraded: 5 of 6 members" "$T/pony.log" || fail "no word of degraded: $(cat "$T/pony.log")"
cp "$T/b" "$T/m/b" || fail "write b (degraded)"
pony_umount

# All six: member 5 is stale now, refused by name until allowed to run degraded.
"$PONY" mount "${all[@]}" "$T/m" 2> "$T/err" && fail "mounted with a stale member"
grep -q "refusing stale member 5 ($T/d5.img)" "$T/err" ||
	fail "stale member not named: $(cat "$T/err")"
: > "$T/pony.log"
pony_mount --degraded "${all[@]}"
grep -q "refusing stale member 5" "$T/pony.log" || fail "mount: stale member not named"
cmp "$T/a" "$T/m/a" || fail "file a differs"
cmp "$T/b" "$T/m/b" || fail "file b (written while degraded) differs: stale data read"
pony_umount

# fsck: a check of a degraded volume runs read-only and says so; --repair needs --degraded.
md5sum "${all[@]}" > "$T/sums"
"$PONY" fsck "${all[@]}" > "$T/out" 2> "$T/err" || fail "fsck degraded: $(cat "$T/out" "$T/err")"
grep -q "runs degraded (read-only): 5 of 6 members" "$T/err" || fail "fsck: $(cat "$T/err")"
grep -q ": clean$" "$T/out" || fail "fsck: $(cat "$T/out")"
md5sum -c --quiet "$T/sums" || fail "fsck of a degraded volume wrote to the members"
"$PONY" fsck --repair "${all[@]}" > /dev/null 2> "$T/err" && fail "fsck --repair ran degraded unasked"
grep -q -- "--degraded" "$T/err" || fail "fsck --repair: $(cat "$T/err")"
"$PONY" fsck --repair --degraded "${all[@]}" > "$T/out" 2>&1 || fail "fsck --repair --degraded: $(cat "$T/out")"

# Too few: not "not a ponyfs", but how many raid6 needs.
"$PONY" mount --degraded "$T/d0.img" "$T/d1.img" "$T/d2.img" "$T/m" 2> "$T/err" &&
	fail "mounted three of six"
grep -q "3 of 6 members present, raid6 needs at least 4" "$T/err" || fail "too few: $(cat "$T/err")"
grep -q "not a ponyfs" "$T/err" && fail "too few called 'not a ponyfs': $(cat "$T/err")"
pass
