#!/usr/bin/env bash
# ponyfs_scrub.sh - the passive scrub and the bad-block map on a real mount
# over a RAID6 of six image files (metadata mirrored on all six), faults
# flipped straight into the member images while mounted: under a file,
# under the metadata mirror and under free space, each within redundancy,
# and one row beyond it (its data, P and Q) under a file with a hard link;
# then a two-way mirror, where only the checksums can tell the copies apart.
# `pony fs scrub start --wait` repairs every fault within redundancy (the
# member bytes come back as they were), loses exactly the one block beyond
# it and names exactly its file (both paths), never a clean one; `pony fs
# badblocks` and `pony fs resolve` say the same with member, sector and
# paths. Then: a read that meets a bad checksum is recorded once; a pass
# stopped, unmounted, or killed goes on from its saved position; errors;
# and on a raid10, every copy of a block resolves by MEMBER:SECTOR.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-scrub

volume_images raid6 6 64M
pony_mount --commit 200 "${imgs[@]}"

# Files of 64 blocks each, every block a unique marker then random bytes.
for f in a b c; do
	python3 - "$T/$f" "$f" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as out:
    for i in range(64):
        out.write((b"SCRUB-%s-%05d-" % (sys.argv[2].encode(), i)) + os.urandom(4096 - 14))
PY
	cp "$T/$f" "$T/m/$f" || fail "write $f"
done
mkdir "$T/m/dir" && ln "$T/m/b" "$T/m/dir/b-link" || fail "hard link"
"$PONY" sync "$T/m" || fail "pony sync"
for f in a b c; do "$PONY" fs layout --json "$T/m/$f" >"$T/$f.json" || fail "layout of $f"; done

# pieces FILE BLOCK: "DEVICE OFFSET" lines of the block's data piece, then its P and Q.
pieces() {
	python3 - "$T/$1.json" "$2" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
blk = int(sys.argv[2]) * l["file"][0]["block_size"]
for e in l["extents"]:
    ps = e.get("children", [])
    for i, p in enumerate(ps):
        if p["role"] == "data" and p["file_offset"] <= blk < p["file_offset"] + p["length"]:
            d = blk - p["file_offset"]
            for q in [p] + ps[i + 1:i + 3]:
                print(q["device"], q["member_offset"] + d)
            sys.exit(0)
sys.exit("block %s not found" % sys.argv[2])
PY
}
# flip DEVICE OFFSET: flips bits of 8 bytes there, a pattern of its own each
# time (the same error on data, P and Q would look like one bad Q to RAID6),
# keeping the good bytes in $T/good.N.
nflip=0
flip() {
	nflip=$((nflip + 1))
	dd if="$1" bs=1 skip=$(($2 + 100)) count=8 status=none >"$T/good.$nflip"
	python3 - "$1" $(($2 + 100)) "$nflip" <<'PY'
import sys
n = int(sys.argv[3])
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(8)
    f.seek(int(sys.argv[2])); f.write(bytes(x ^ (1 + (37 * n + 11 * i) % 255) for i, x in enumerate(b)))
PY
	echo "$1 $(($2 + 100)) $T/good.$nflip" >>"$T/flips"
}
# A volume offset's member device and offset, and what lives there.
where() {
	"$PONY" fs resolve --json "$T/m" "$1" | python3 -c '
import json, sys; r = json.load(sys.stdin)["address"][0]; print(r["device"], r["member_offset"], r["what"])'
}

: >"$T/flips"
# Within redundancy: one member of a row each.
read -r dev off < <(pieces a 3 | head -1) || fail "no piece for a/3"
flip "$dev" "$off"
region=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["volume"][0]["region_offset"])' "$T/a.json")
# The metadata mirror: a database page, on member 4's copy.
read -r dev off what < <(where $((region - 5 * 4096))) || fail "resolve in the metadata region"
[ "$what" = metadata ] || fail "the byte before the data region is $what, not metadata"
flip "${dev%?.img}4.img" "$off"
# Free space near the end of the data region.
read -r dev off what < <(where $((region + 14000 * 4096))) || fail "resolve in free space"
[ "$what" = free ] || fail "data block 14000 is $what, not free"
flip "$dev" "$off"
cp "$T/flips" "$T/repairable"
# Beyond redundancy: b's block 20 on its data member, P and Q.
while read -r dev off; do flip "$dev" "$off"; done < <(pieces b 20)
lostdev=$(pieces b 20 | head -1)

"$PONY" fs scrub start --wait "$T/m" >"$T/scrub.out" || fail "scrub: $(cat "$T/scrub.out")"
out=$(record_field STATE <"$T/scrub.out"),$(record_field REPAIRED <"$T/scrub.out"),$(record_field LOST <"$T/scrub.out")
[ "$out" = done,3,1 ] && [ "$(record_field CHECKED <"$T/scrub.out")" -gt 0 ] ||
	fail "scrub counts: $(cat "$T/scrub.out"); log: $(cat "$T/pony.log")"
[ "$("$PONY" fs scrub status "$T/m" | record_field STATE)" = done ] || fail "status after the pass"
"$PONY" fs scrub status --json "$T/m" | python3 -c '
import json, sys
d = json.load(sys.stdin)["scrub"]
assert len(d) == 1 and d[0]["state"] == "done" and d[0]["percent"] == 100, d
assert d[0]["repaired"] == 3 and d[0]["lost"] == 1 and d[0]["eta"] is None, d' ||
	fail "status --json after the pass"

# Every fault within redundancy has its member bytes back.
while read -r dev off good; do
	cmp <(dd if="$dev" bs=1 skip="$off" count=8 status=none) "$good" ||
		fail "$dev at $off was not repaired"
done <"$T/repairable"

# Lost: exactly b (both its names), once; a and c are never named as lost.
grep "lost: file" "$T/pony.log" >"$T/lost.log"
[ "$(wc -l <"$T/lost.log")" = 1 ] || fail "lost lines: $(cat "$T/lost.log")"
grep -q "offset 81920: .*lost: file /b, /dir/b-link\|lost: file /dir/b-link, /b" "$T/lost.log" ||
	fail "the lost block is not b's: $(cat "$T/lost.log")"
grep -E "file /(a|c)[ ,]" "$T/pony.log" | grep -v "repaired\|rewritten" &&
	fail "a clean file was reported: $(cat "$T/pony.log")"
grep -q "file /c" "$T/pony.log" && fail "c was never hit, yet named: $(cat "$T/pony.log")"

# badblocks: the same, with members, sectors and paths.
"$PONY" fs badblocks --json "$T/m" >"$T/bad.json" || fail "badblocks --json"
python3 - "$T/bad.json" "$lostdev" <<'PY' || fail "badblocks: $(cat "$T/bad.json")"
import json, sys
bad = json.load(open(sys.argv[1]))["badblocks"]
dev, off = sys.argv[2].split()
files = [b for b in bad if b["what"] == "file"]
assert all(b["source"].startswith("scrub") for b in bad), bad
assert all(b["device"] and "member_sector" in b for b in bad if b["what"] != "parity"), bad
# The row beyond redundancy: no member to blame, listed as the row.
assert any(b["what"] == "parity" and not b["repaired"] and b["row_length"] for b in bad), bad
assert not any("/c" in b["paths"] for b in files), "a clean file listed"
lost = [b for b in files if not b["repaired"]]
assert len(lost) == 1 and sorted(lost[0]["paths"]) == ["/b", "/dir/b-link"], lost
assert lost[0]["file_offset"] == 20 * 4096 and lost[0]["device"] == dev, lost
assert any(b["repaired"] and b["paths"] == ["/a"] and b["file_offset"] // 4096 == 3 for b in files), files
assert any(b["what"] == "metadata" and b["repaired"] for b in bad), bad
assert any(b["what"] == "free" and b["repaired"] for b in bad), bad
PY
"$PONY" fs badblocks "$T/m" | grep -Eq "^scrub checksum +false +.* file offset 81920 of inode [0-9]+: (/b /dir/b-link|/dir/b-link /b)$" ||
	fail "badblocks text: $("$PONY" fs badblocks "$T/m")"

# resolve by MEMBER:SECTOR, the member by device and by index.
read -r dev off <<<"$lostdev"
"$PONY" fs resolve "$T/m" "$dev:$((off / 512))" | grep -q "file offset 81920 of inode .*/b" ||
	fail "resolve $dev:$((off / 512)): $("$PONY" fs resolve "$T/m" "$dev:$((off / 512))")"
idx=${dev##*/m}; idx=${idx%.img}
"$PONY" fs resolve --json "$T/m" "$idx:$((off / 512))" |
	python3 -c 'import json, sys; assert json.load(sys.stdin)["address"][0]["paths"][0].startswith("/")' ||
	fail "resolve by index"

# Through a fresh mount (no page cache): a and c read back whole, b fails
# where it was lost, each time, and that read error is logged once; a
# checksum error a read meets in c is repaired and logged once, naming c.
pony_umount
read -r dev off < <(pieces c 7 | head -1)
flip "$dev" "$off"
pony_mount --commit 200 "${imgs[@]}"
cmp "$T/a" "$T/m/a" || fail "a differs after the scrub"
cmp "$T/c" "$T/m/c" || fail "c differs: the read did not repair it"
cmp "$T/c" "$T/m/c" || fail "c differs on the second read"
for _ in 1 2; do
	cat "$T/m/b" >/dev/null 2>&1 && fail "b's lost block was read back"
done
dd if="$T/m/b" bs=4096 count=20 status=none | cmp - <(head -c 81920 "$T/b") ||
	fail "b's blocks before the lost one"
[ "$(grep -c "offset 28672: .*repaired member .* (read); file /c$" "$T/pony.log")" = 1 ] ||
	fail "the read's repair of c is not logged once: $(cat "$T/pony.log")"
[ "$(grep -c "offset 81920: .*(read); lost: file " "$T/pony.log")" = 1 ] ||
	fail "b's read error is not logged once: $(cat "$T/pony.log")"
"$PONY" fs badblocks "$T/m" >"$T/bad.txt"
grep -Eq "^read +true +.* file offset 28672 of inode [0-9]+: /c$" "$T/bad.txt" ||
	fail "badblocks misses the read's repair: $(cat "$T/bad.txt")"
grep -Eq "^read +false +.* file offset 81920 of inode [0-9]+: " "$T/bad.txt" ||
	fail "badblocks misses the read error: $(cat "$T/bad.txt")"

# Stopped, unmounted, remounted: the pass goes on from where it was.
[ "$("$PONY" fs scrub start --rate 20 "$T/m" | record_field STATE)" = running ] || fail "start --rate"
sleep 1.5
"$PONY" fs scrub status "$T/m" >"$T/status.out"
[ "$(record_field STATE <"$T/status.out")" = running ] &&
	[[ $(record_field PERCENT <"$T/status.out") =~ ^[0-9]+$ ]] &&
	[[ $(record_field ETA <"$T/status.out") =~ ^[0-9]+$ ]] || fail "status while running: $(cat "$T/status.out")"
# --rate 20 holds: no more than 20 MB a second of ELAPSED (whole seconds,
# so one more) went by, and the step (1 MiB) handed out at the start.
pos=$(record_field POSITION <"$T/status.out")
[ "$pos" -le $((20000000 * ($(record_field ELAPSED <"$T/status.out") + 1) + 1048576)) ] ||
	fail "--rate 20 passed: $(cat "$T/status.out")"
"$PONY" fs scrub start "$T/m" 2>&1 | grep -q "already running" || fail "a second start"
"$PONY" fs scrub stop "$T/m" >"$T/stop.out" || fail "stop"
[ "$(record_field STATE <"$T/stop.out")" = stopped ] || fail "stop: $(cat "$T/stop.out")"
pony_umount
pony_mount --commit 200 "${imgs[@]}"
stopped_at_least_1() {
	local out
	out=$("$PONY" fs scrub status "$T/m")
	[ "$(record_field STATE <<<"$out")" = stopped ] && [ "$(record_field PERCENT <<<"$out")" -ge 1 ] ||
		fail "status $1: $out"
}
stopped_at_least_1 "after remount"
[ "$("$PONY" fs scrub start --wait "$T/m" | record_field STATE)" = done ] || fail "the resumed pass"
grep -Eq "scrub started at volume byte [1-9][0-9]* " "$T/pony.log" || fail "did not resume: $(cat "$T/pony.log")"

# Killed mid-pass: the position last committed survives.
"$PONY" fs scrub start --rate 30 "$T/m" >/dev/null || fail "start before the kill"
sleep 3.5
kill -9 "$PONY_PID"; wait "$PONY_PID" 2>/dev/null; PONY_PID=
fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"
pony_mount "${imgs[@]}"
stopped_at_least_1 "after a crash"

# Errors that say what is wrong.
expect_usage_error "$PONY" fs scrub frob "$T/m"
expect_usage_error "$PONY" fs scrub status "$T/m" --rate 5
expect_usage_error "$PONY" fs scrub start --rate 0 "$T/m"
expect_usage_error "$PONY" fs resolve "$T/m" abc
expect_usage_error "$PONY" fs resolve "$T/m" 9:0
out=$("$PONY" fs resolve "$T/m" $((1 << 40)) 2>&1) && fail "resolve past the volume"
echo "$out" | grep -q "outside the volume" || fail "past the volume: $out"
out=$("$PONY" fs scrub status "$T" 2>&1) && fail "scrub of a plain directory"
echo "$out" | grep -q "not a pony mount" || fail "plain directory: $out"
"$PONY" fs scrub --help | grep -q "Usage: pony fs scrub" || fail "--help"
pony_umount

# A two-way mirror: the volume cannot tell which copy is wrong, the
# checksum can: one copy flipped is repaired, both flipped is lost.
rm -f "$T/flips"
volume_images mirror 2 64M
pony_mount --commit 200 "${imgs[@]}"
cp "$T/a" "$T/m/a" && cp "$T/c" "$T/m/c" && "$PONY" sync "$T/m" || fail "write on the mirror"
for f in a c; do "$PONY" fs layout --json "$T/m/$f" >"$T/$f.json" || fail "layout of $f"; done
read -r dev off < <(pieces a 9 | tail -1)       # the second copy
flip "$dev" "$off"
while read -r dev off; do flip "$dev" "$off"; done < <(pieces c 30)   # both copies
"$PONY" fs scrub start --wait "$T/m" >"$T/scrub.out" || fail "mirror scrub"
[ "$(record_field STATE <"$T/scrub.out"),$(record_field REPAIRED <"$T/scrub.out"),$(record_field LOST <"$T/scrub.out")" = done,1,1 ] || fail "mirror counts: $(cat "$T/scrub.out"); log: $(cat "$T/pony.log")"
read -r dev off good < <(head -1 "$T/flips")
cmp <(dd if="$dev" bs=1 skip="$off" count=8 status=none) "$good" || fail "mirror copy not repaired"
grep -q "offset 36864: .*repaired member 1 .*(scrub); file /a$" "$T/pony.log" ||
	fail "mirror repair of a: $(cat "$T/pony.log")"
grep -q "offset 122880: .*lost: file /c$" "$T/pony.log" || fail "mirror loss of c: $(cat "$T/pony.log")"
# Each copy bad in a different block of the same unit: repairing one from
# the other copy must not carry the other copy's bad block over.
read -r dev off < <(pieces a 2 | head -1)       # the first copy
flip "$dev" "$off"
read -r dev off < <(pieces a 50 | tail -1)      # the second copy
flip "$dev" "$off"
pony_umount
pony_mount --commit 200 "${imgs[@]}"
cmp "$T/a" "$T/m/a" || fail "a bad block on each copy: a read back wrong: $(cat "$T/pony.log")"
pony_umount
pony_mount --commit 200 "${imgs[@]}"
cmp "$T/a" "$T/m/a" || fail "a bad block on each copy: the repair spread one: $(cat "$T/pony.log")"
pony_umount

# raid10 (near copies on 5 members, so a chunk's copies wrap to the next
# row): each copy of a block resolves by MEMBER:SECTOR to the file and the
# block's offset in it.
volume_images raid10 5 64M
pony_mount --commit 200 "${imgs[@]}"
cp "$T/a" "$T/m/a" && "$PONY" sync "$T/m" || fail "write on raid10"
"$PONY" fs layout --json "$T/m/a" >"$T/a.json" || fail "layout of a on raid10"
for blk in 0 17 63; do
	n=0
	while read -r dev off; do
		out=$("$PONY" fs resolve "$T/m" "$dev:$((off / 512))" 2>&1)
		echo "$out" | grep -q "file offset $((blk * 4096)) of inode .*/a" ||
			fail "raid10 resolve of block $blk at $dev:$((off / 512)): $out"
		n=$((n + 1))
	done < <(pieces a "$blk" | head -2)
	[ "$n" = 2 ] || fail "raid10 block $blk: $n copies in the layout"
done
pony_umount
pass
