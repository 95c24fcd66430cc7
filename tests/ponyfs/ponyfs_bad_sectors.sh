#!/usr/bin/env bash
# ponyfs_bad_sectors.sh - unreadable sectors and failed writes on a real
# mount (issue 21, "Bad blocks to files" and the scrub's fault tests): a
# ponyfs on a RAID6 of six images, member 3's image served by nbdkit's sh
# plugin as a disk with bad sectors (faulty_member.sh). An unreadable
# sector under a file: the passive scrub rebuilds it from parity and
# writes it back (the disk remaps it), counts it repaired and lists it in
# `pony fs badblocks` with member 3, its sector and the file; a clean file
# is never named. An unreadable sector under member 3's copy of a
# database page: rewritten from the mirror's other copies, listed as
# metadata with its SQLite page. A range of member 3 whose writes fail: a file written
# over it reads back whole, and `pony fs badblocks` lists the range from
# member 3's bad-block log with the file that lives there.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-bad-sectors
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

for i in 0 1 2 3 4 5; do truncate -s 64M "$T/m$i.img"; done
export IMG=$T/m3.img BADREAD=$T/badread BADWRITE=$T/badwrite
nbd_start s3 "" -- sh "$PONY_SRCDIR/tests/ponyfs/faulty_member.sh"
s3=$(nbd_uri s3)
members=("$T/m0.img" "$T/m1.img" "$T/m2.img" "$s3" "$T/m4.img" "$T/m5.img")
"$PONY" mkfs --data raid6 --assume-clean "${members[@]}" >/dev/null || fail "mkfs"
pony_mount --commit 200 "${members[@]}"

head -c 1M /dev/urandom >"$T/a"
head -c 1M /dev/urandom >"$T/c"
cp "$T/a" "$T/m/a" && cp "$T/c" "$T/m/c" && "$PONY" sync "$T/m" || fail "write a and c"

# on_member3 FILE: "FILE_OFFSET MEMBER_OFFSET" of FILE's first block whose data is on member 3.
on_member3() {
	"$PONY" fs layout --json "$T/m/$1" | python3 -c '
import json, sys
l = json.load(sys.stdin)
p = next(p for e in l["extents"] for p in e.get("children", [])
         if p["role"] == "data" and p["member"] == 3)
print(p["file_offset"], p["member_offset"])'
}
# badblocks_of FILE: pony fs badblocks --json's entries naming /FILE, one a line:
# "SOURCE REPAIRED MEMBER MEMBER_SECTOR FILE_OFFSET".
badblocks_of() {
	"$PONY" fs badblocks --json "$T/m" | python3 -c '
import json, sys
for b in json.load(sys.stdin)["badblocks"]:
    if b["what"] == "file" and "/" + sys.argv[1] in b["paths"]:
        print(b["source"].replace(" ", "_"), json.dumps(b["repaired"]), b["member"], b["member_sector"], b["file_offset"])' "$1"
}

# scrub_over_bad_sector OFFSET WHAT: member 3's 512 bytes at OFFSET fail to
# read; a scrub repairs them (written back: the disk remaps the sector) and loses nothing.
scrub_over_bad_sector() {
	echo "$1 512" >"$BADREAD"
	"$PONY" fs scrub start --wait "$T/m" >"$T/scrub.out" || fail "scrub: $(cat "$T/scrub.out")"
	[ "$(record_field STATE <"$T/scrub.out") $(record_field LOST <"$T/scrub.out")" = "done 0" ] &&
		[ "$(record_field REPAIRED <"$T/scrub.out")" -ge 1 ] ||
		fail "scrub over $2: $(cat "$T/scrub.out"); log: $(cat "$T/pony.log")"
	[ -e "$BADREAD" ] && fail "$2 was not written back"
}

# An unreadable sector under a's block on member 3: scrub rebuilds and rewrites it.
read -r foff moff < <(on_member3 a) || fail "no block of a on member 3"
scrub_over_bad_sector $((moff + 4096)) "an unreadable sector under a"
badblocks_of a >"$T/bad.a"
grep -qx "scrub true 3 $(((moff + 4096) / 512)) $((foff + 4096))" "$T/bad.a" ||
	fail "badblocks: the unreadable sector under a: $(cat "$T/bad.a"); all: $("$PONY" fs badblocks "$T/m")"
[ -z "$(badblocks_of c)" ] || fail "c, never hit, is listed: $(badblocks_of c)"
grep -q "file /c" "$T/pony.log" && fail "c, never hit, is named in the log: $(cat "$T/pony.log")"
cmp "$T/m/a" "$T/a" || fail "a after the scrub"

# An unreadable sector under member 3's copy of database page 2 (the
# metadata region is mirrored on all six): scrub rewrites it from the
# other copies, and `pony fs badblocks` names it as metadata with its page.
read -r mdoff mdwhat < <("$PONY" fs resolve --json "$T/m" 16384 | python3 -c '
import json, sys
a = json.load(sys.stdin)["address"][0]
print(a["member_offset"], a["what"] + "/" + a["part"] + "/" + str(a["page"]))') || fail "resolve 16384"
[ "$mdwhat" = metadata/database/2 ] || fail "volume byte 16384 holds $mdwhat, not database page 2"
scrub_over_bad_sector $((mdoff + 512)) "an unreadable sector under database page 2"
"$PONY" fs badblocks --json "$T/m" | python3 -c '
import json, sys
want = int(sys.argv[1]) // 512
bad = [b for b in json.load(sys.stdin)["badblocks"] if b["what"] == "metadata"]
# The 4 KiB block holding the sector, not the 1 MiB piece the scrub read.
hit = [b for b in bad if b["member"] == 3 and b["member_sector"] <= want < b["member_sector"] + 8
       and b["length"] == 4096]
assert hit, bad
assert hit[0]["part"] == "database" and hit[0]["page"] == 2 and hit[0]["repaired"], hit
assert hit[0]["source"].startswith("scrub"), hit' "$((mdoff + 512))" ||
	fail "badblocks: the unreadable metadata sector: $("$PONY" fs badblocks --json "$T/m")"
ls "$T/m" >/dev/null && cmp "$T/m/c" "$T/c" || fail "the mount after the metadata repair"

# Writes failing on a range of member 3 after everything written so far:
# the next file's stripes land there, the member keeps the range in its
# bad-block log, and the file is whole (rebuilt from parity).
read -r _ mlast < <("$PONY" fs layout --json "$T/m/c" | python3 -c '
import json, sys
l = json.load(sys.stdin)
print(0, max(p["member_offset"] + p["length"] for e in l["extents"] for p in e["children"]))')
echo "$mlast 4194304" >"$BADWRITE"
head -c 4M /dev/urandom >"$T/b"
cp "$T/b" "$T/m/b" && "$PONY" sync "$T/m" || fail "write b over failing writes"
rm -f "$BADWRITE"
pony_umount
pony_mount --commit 200 "${members[@]}"
cmp "$T/m/b" "$T/b" || fail "b, written over failing writes, does not read back"
badblocks_of b >"$T/bad.b"
grep -q "^member_bad-block_log false 3 " "$T/bad.b" ||
	fail "badblocks: member 3's bad-block log under b: $(cat "$T/bad.b"); all: $("$PONY" fs badblocks "$T/m")"
pony_umount
pass
