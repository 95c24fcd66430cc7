#!/usr/bin/env bash
# vol_cli.sh - `pony vol` end to end on image files: every md fixture the
# kernel wrote assembles with --md and reads back its pattern; a pony RAID6
# is created, written, loses two members, reads back intact, refuses the
# stale members by name, gets a new member rebuilt and scrubs clean; an idle
# hot spare takes a failed member's place by itself; every command that
# prints takes --json; rebuild and scrub draw progress bars on a terminal;
# bad input gets clear errors and changes nothing.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
work=$(mktemp -d /tmp/pony-vol-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fixtures=$PONY_SRCDIR/tests/data/volume

for c in create assemble status detail monitor table fail add replace rebuild scrub badblocks expose stop read write; do
	"$PONY" vol $c --help >/dev/null || fail "vol $c --help"
done
expect_usage_error "$PONY" vol create d.img
expect_usage_error "$PONY" vol create -l raid7 d.img
"$PONY" vol create -l raid7 d.img 2>&1 | grep -q "bad level 'raid7'" ||
	fail "an invalid level is not named: $("$PONY" vol create -l raid7 d.img 2>&1)"
"$PONY" vol create d.img 2>&1 | grep -q -- "--level .* is required" || fail "no --level: no message"
expect_usage_error "$PONY" vol fail d.img
expect_usage_error "$PONY" vol frobnicate

# md fixtures: the kernel's arrays, read back through pony.
python3 "$fixtures/make-pattern.py" 16 pattern.bin
for set in raid0:3 raid0-zo:3 raid0-za:4 raid1:2 raid4:3 raid5-ls:3 raid5-bm:3 raid5-la:4 raid5-rs:3 raid5-ra:4 raid5-p0:4 \
	   raid6:5 raid6-ra:5 raid6-n:4 raid10-n2:4 raid10-f2:4 raid10-o2:4; do
	name=${set%:*} n=${set#*:} imgs=()
	for ((i = 0; i < n; i++)); do
		xz -dc "$fixtures/$name-$i.img.xz" > "$name-$i.img"
		imgs+=("$name-$i.img")
	done
	"$PONY" vol assemble --md -o "$name.out" "${imgs[@]}" > "$name.status" ||
		fail "$name: assemble --md failed"
	size=$(stat -c %s "$name.out")
	[ "$size" -gt 0 ] || fail "$name: empty"
	cmp -s -n "$size" "$name.out" pattern.bin || fail "$name: pattern differs"
	"$PONY" vol table --md "${imgs[@]}" | grep -q '^0 ' || fail "$name: no table"
	rm -f "$name-"*.img "$name.out"
done

# dm fixtures through their tables.
for i in 0 1; do xz -dc "$fixtures/dm-striped-$i.img.xz" > s$i.img; done
for i in 0 1 2 3 4; do xz -dc "$fixtures/dm-raid6-zr-$i.img.xz" > z$i.img; done
echo "0 16384 striped 2 128 s0.img 0 s1.img 0" > striped.table
echo "0 24576 raid raid6_zr 1 128 5 - z0.img - z1.img - z2.img - z3.img - z4.img" > zr.table
for t in striped zr; do
	"$PONY" vol assemble --table $t.table -o $t.out > /dev/null || fail "$t table"
	cmp -s -n "$(stat -c %s $t.out)" $t.out pattern.bin || fail "$t table: pattern differs"
done
"$PONY" vol assemble --table zr.table | grep -Eq "^4 +ok +.*z4.img" || fail "table status"
echo "0 99999999 linear z0.img 0" > big.table
"$PONY" vol assemble --table big.table 2>&1 | grep -q "big.table:1: the target does not fit" ||
	fail "no message for a table too big for its devices"
echo "0 100 frobnicate" > bad.table
expect_failure "$PONY" vol assemble --table bad.table
rm -f s?.img z?.img

# A pony RAID6 of six images.
for i in 0 1 2 3 4 5; do truncate -s 12M d$i.img; done
"$PONY" vol create -l raid6 -c 64K -N clitest d*.img > /dev/null || fail "create"
head -c 3000000 /dev/urandom > data
"$PONY" vol write -f data d*.img || fail "write"
"$PONY" vol fail -m 1 d*.img > /dev/null || fail "fail 1"
"$PONY" vol fail -m 4 d*.img > /dev/null 2>&1 || fail "fail 4"
"$PONY" vol read -L 3000000 -f out d*.img 2> err || fail "degraded read"
cmp -s out data || fail "degraded read differs"
grep -q "refusing stale member 1 (d1.img)" err || fail "no stale-member message: $(cat err)"
"$PONY" vol status --json d*.img 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
st = [m["state"] for m in s["members"]]
assert st == ["ok", "failed", "ok", "ok", "failed", "ok"], st
assert s["members"][1]["stale"] is True' || fail "status --json"
truncate -s 12M n1.img
"$PONY" vol add -d n1.img d0.img d2.img d3.img d4.img d5.img > /dev/null 2>&1 || fail "add"
"$PONY" vol scrub d0.img n1.img d2.img d3.img d5.img 2>/dev/null | record_field MISMATCHES | grep -qx 0 ||
	fail "scrub after rebuild"
# Only the rebuilt member and three others: n1 must hold real data.
"$PONY" vol read -L 3000000 -f out2 d0.img n1.img d3.img d5.img 2>/dev/null || fail "read"
cmp -s out2 data || fail "rebuilt member's data differs"

# Whole again, then corruption: scrub --repair finds and fixes it.
truncate -s 12M n4.img
"$PONY" vol add -d n4.img d0.img n1.img d2.img d3.img d5.img > /dev/null 2>&1 || fail "add 4"
set -- d0.img n1.img d2.img d3.img n4.img d5.img
printf 'JUNKJUNK' | dd of=d5.img bs=1 seek=$((1048576 + 70000)) conv=notrunc status=none
"$PONY" vol scrub --json "$@" 2>/dev/null |
	python3 -c 'import json,sys; s=json.load(sys.stdin); assert len(s["mismatches"]) >= 1, s' ||
	fail "scrub did not see the corruption"
"$PONY" vol scrub --repair "$@" >/dev/null 2>&1
[ $? = 1 ] || fail "scrub --repair: expected exit 1 (it found the corruption)"
"$PONY" vol scrub "$@" 2>/dev/null | record_field MISMATCHES | grep -qx 0 ||
	fail "scrub after repair"

# Two regions (raid10 metadata, raid6 data); their dm table assembles the same bytes.
for i in 0 1 2 3 4 5; do truncate -s 12M r$i.img; done
"$PONY" vol create -l raid6 -m 1M --assume-clean r*.img | grep -q "metadata region" ||
	fail "create with a metadata region"
"$PONY" vol write -f data r*.img || fail "write regions"
"$PONY" vol table r*.img > regions.table
[ "$(wc -l < regions.table)" = 2 ] || fail "two regions, two table lines: $(cat regions.table)"
"$PONY" vol assemble --table regions.table -o regions.out > /dev/null || fail "regions table"
cmp -s -n 3000000 regions.out data || fail "the table reads other bytes than the volume"

# Hot spares, --json everywhere, progress bars (a terminal through script(1)).
json() { python3 -c "import json,sys; s=json.load(sys.stdin); $1" || fail "json: $1"; }
for i in 0 1 2 3 4 5 6 7; do truncate -s 12M h$i.img; done
"$PONY" vol create --json -l raid6 -c 64K h0.img h1.img h2.img h3.img h4.img h5.img |
	json 'assert s["action"] == "create" and len(s["members"]) == 6 and s["spares"] == []'
"$PONY" vol write -f data h[0-5].img || fail "write h"
"$PONY" vol add --json -d h6.img h[0-5].img |
	json 'assert s["spares"] == ["h6.img"], s; assert all(m["state"] == "ok" for m in s["members"])'
"$PONY" vol status h[0-6].img | grep -Eq "^spare0 +idle +h6.img" || fail "spare not in status"
# Left out of a command's members, the spare misses that commit; added
# again it goes back into its own slot, never into a second one.
"$PONY" vol write -f data h[0-5].img || fail "write without the spare"
"$PONY" vol status h[0-6].img | grep -Eq "^spare0 +idle +- +missing" || fail "spare left out not missing"
"$PONY" vol add -d h6.img h[0-5].img > /dev/null || fail "spare added back"
"$PONY" vol status h[0-6].img > again.out
grep -Eq "^spare0 +idle +h6.img" again.out || fail "spare not back in its slot: $(cat again.out)"
grep -q "^spare1" again.out && fail "a spare added again took a second slot: $(cat again.out)"
# Idle: writes to the healthy volume leave the spare's data area untouched.
"$PONY" vol write -f data h[0-6].img || fail "write with a spare"
[ "$(dd if=h6.img bs=1M skip=1 count=10 status=none | tr -d '\0' | wc -c)" = 0 ] ||
	fail "an idle spare was written"
"$PONY" vol table --json h[0-6].img | json 'assert s["table"][0]["args"][:2] == ["raid", "raid6_ls"], s'
if command -v script > /dev/null; then
	script -qec "'$PONY' vol fail -m 3 h[0-6].img" /dev/null > tty.out || fail "fail with a spare"
	grep -q "rebuild onto spare \[" tty.out || fail "no progress bar for the spare's rebuild"
	grep -q "a hot spare took its place and was rebuilt" tty.out || fail "spare not taken"
else
	"$PONY" vol fail -m 3 h[0-6].img > /dev/null 2>&1 || fail "fail with a spare"
fi
"$PONY" vol status --json h[0-6].img 2>/dev/null |
	json 'assert s["members"][3]["device"] == "h6.img" and s["members"][3]["state"] == "ok" and s["spares"] == [], s'
# h6 holds member 3's data: read with two other members gone too.
"$PONY" vol read -L 3000000 -f out3 h0.img h2.img h6.img h5.img 2>/dev/null || fail "read via the spare"
cmp -s out3 data || fail "the spare's rebuilt data differs"
"$PONY" vol fail --json -m 1 h0.img h1.img h2.img h6.img h4.img h5.img |
	json 'assert s["action"] == "fail" and s["members"][1]["state"] == "failed", s'
if command -v script > /dev/null; then
	script -qec "'$PONY' vol replace -m 1 -d h7.img h0.img h2.img h6.img h4.img h5.img" /dev/null \
		> tty.out || fail "replace"
	grep -q "rebuild \[" tty.out || fail "no progress bar on rebuild"
	script -qec "'$PONY' vol scrub h0.img h7.img h2.img h6.img h4.img h5.img" /dev/null > tty.out ||
		fail "scrub"
	grep -q "scrub \[" tty.out || fail "no progress bar on scrub"
	grep -Eq "MISMATCHES +0\s*$" tty.out || fail "scrub after the spare's rebuild"
else
	"$PONY" vol replace -m 1 -d h7.img h0.img h2.img h6.img h4.img h5.img >/dev/null 2>&1 ||
		fail "replace"
fi
"$PONY" vol fail -m 0 h0.img h7.img h2.img h6.img h4.img h5.img > /dev/null || fail "fail 0"
"$PONY" vol replace --json -m 0 -d h0.img h7.img h2.img h6.img h4.img h5.img 2>/dev/null |
	json 'assert s["action"] == "replace" and s["member"] == 0 and s["members"][0]["state"] == "ok", s'
"$PONY" vol rebuild --json h0.img h7.img h2.img h6.img h4.img h5.img 2>/dev/null |
	json 'assert s["action"] == "rebuild", s'
"$PONY" vol badblocks --json h0.img h7.img h2.img h6.img h4.img h5.img |
	json 'assert s["badblocks"] == [], s'

# Bad input: clear errors, nothing written.
cp d0.img keep.img
expect_failure "$PONY" vol assemble d0.img data
expect_failure "$PONY" vol assemble d0.img raid-missing.img
truncate -s 2M tiny0.img tiny1.img tiny2.img tiny3.img
expect_failure "$PONY" vol create -l raid6 -c 1M tiny*.img
for i in 0 1 2 3; do truncate -s 12M o$i.img; done
"$PONY" vol create -l raid5 --assume-clean o*.img > /dev/null || fail "create other"
expect_failure "$PONY" vol assemble d0.img n1.img d2.img o3.img
"$PONY" vol assemble d0.img n1.img d2.img o3.img 2>&1 | grep -q "member of another pony volume" ||
	fail "no message for a foreign member"
cmp -s d0.img keep.img || fail "a refused assembly wrote to a member"
printf X | dd of=o2.img bs=1 seek=100 conv=notrunc status=none
printf X | dd of=o2.img bs=1 seek=$((12 * 1048576 - 4096 + 100)) conv=notrunc status=none
"$PONY" vol assemble o*.img 2>&1 | grep -q "o2.img: both superblocks are corrupt" ||
	fail "no message for corrupt superblocks"
dd if=/dev/zero of=o2.img bs=4096 count=1 conv=notrunc status=none
dd if=/dev/zero of=o2.img bs=4096 count=1 seek=$((12 * 256 - 1)) conv=notrunc status=none
"$PONY" vol assemble o*.img 2>&1 | grep -q "o2.img: not a pony volume member" ||
	fail "no message for a member without superblock"
pass
