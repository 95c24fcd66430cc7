#!/usr/bin/env bash
# ponyfs_layout.sh - `pony fs layout` on a real mount over image members,
# the worked example of docs/layout.md: a ponyfs on a RAID6 volume of six
# image files, a file written and synced, its layout asked with --json,
# and its bytes read by hand with dd from the member images the layout
# names: the first 4 KiB, then every data piece. Also: each data piece has
# a P and a Q on two other members, each member's UUID is the one devdb
# finds its image by, a sparse file's hole and fallocated range say
# "hole" and "unwritten", cached data shows as dirty, --range narrows the
# answer, and the errors say what is wrong (a directory, a file not on a
# pony mount, a bad --range).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-layout

raid6_mount

head -c $((300 * 1024 + 123)) /dev/urandom >"$T/orig"
cp "$T/orig" "$T/m/file" || fail "write"
"$PONY" sync "$T/m" || fail "pony sync"

"$PONY" fs layout --json "$T/m/file" >"$T/layout.json" || fail "pony fs layout --json"

# The worked example: the first 4 KiB, by hand, from the member the layout names.
read -r dev off < <(python3 - "$T/layout.json" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
e = l["extents"][0]
assert e["state"] == "data" and e["file_offset"] == 0, e
p = next(p for p in e["children"] if p["role"] == "data" and p["file_offset"] == 0)
print(p["device"], p["member_offset"])
PY
) || fail "no first data piece in: $(cat "$T/layout.json")"
case "$dev" in "$T"/m?.img) ;; *) fail "the first piece names '$dev', not a member image" ;; esac
dd if="$dev" bs=4096 skip=$((off / 4096)) count=1 status=none >"$T/first4k" || fail "dd"
cmp "$T/first4k" <(head -c 4096 "$T/orig") || fail "the first 4 KiB on $dev at $off are not the file's"

# Every data piece holds the file's bytes there, P and Q sit on other
# members, the volume and the checksums are as written.
python3 - "$T/layout.json" "$T/orig" <<'PY' || fail "layout check: $(cat "$T/layout.json")"
import json, sys, zlib
l = json.load(open(sys.argv[1]))
data = open(sys.argv[2], "rb").read()
f = l["file"][0]
assert f["size"] == len(data), f["size"]
assert not f["encrypted"]
v = l["volume"][0]
assert v["level"] == "raid6" and v["layout"] == "left-symmetric" and v["members"] == 6, v
# pony mkfs's chunk: a full stripe is the four data chunks; the data region
# starts past the metadata region, which is where the first piece sits on
# its member (past that member's data offset).
assert v["chunk"] == 65536 and v["full_stripe"] == 4 * 65536 and v["region_offset"] > 0, v
assert len(l["members"]) == 6 and all(m["uuid"] and m["state"] == "working" for m in l["members"])
assert len({m["uuid"] for m in l["members"]}) == 6
covered = 0
for e in l["extents"]:
    assert e["state"] == "data", e
    assert len(e["crc32c"]) == e["length"] // f["block_size"]
    pieces = e["children"]
    for i, p in enumerate(pieces):
        if p["role"] != "data":
            continue
        with open(p["device"], "rb") as f:
            f.seek(p["member_offset"])
            got = f.read(p["length"])
        want = data[p["file_offset"]:p["file_offset"] + p["length"]]
        assert got[:len(want)] == want, ("piece", p)
        assert p["length"] <= v["chunk"], ("a piece longer than a chunk", p)
        covered += len(want)
        par = pieces[i + 1:i + 3]
        assert [q["role"] for q in par] == ["P", "Q"], par
        assert len({p["member"], par[0]["member"], par[1]["member"]}) == 3, (p, par)
        assert all(q["member_offset"] == p["member_offset"] for q in par), (p, par)
assert covered == len(data), (covered, len(data))
PY

# Each member by its identity: devdb, scanning the images, finds each by
# the member UUID the layout names (as it would on any host that sees them).
export PONY_DEVDB=$T/devdb.sqlite
"$PONY" dev scan "${imgs[@]}" >"$T/scan.out" 2>&1 || fail "pony dev scan: $(cat "$T/scan.out")"
python3 -c '
import json, sys
for m in json.load(open(sys.argv[1]))["members"]:
    print(m["uuid"], m["device"])' "$T/layout.json" >"$T/members" || fail "members"
[ "$(wc -l <"$T/members")" = 6 ] || fail "not six members: $(cat "$T/members")"
while read -r uuid image; do
	[ "$("$PONY" dev find "UUID_SUB=$uuid")" = "$image" ] ||
		fail "devdb does not find member $uuid at $image: $("$PONY" dev find "UUID_SUB=$uuid" 2>&1)"
done <"$T/members"

# Holes and unwritten ranges: their states, no checksums, no place to read.
truncate -s 1M "$T/m/sparse"
head -c 8192 /dev/urandom | dd of="$T/m/sparse" bs=4096 seek=16 conv=notrunc status=none
fallocate -o 262144 -l 131072 "$T/m/sparse" || fail "fallocate"
"$PONY" sync "$T/m" || fail "pony sync"
"$PONY" fs layout --json "$T/m/sparse" >"$T/sparse.json" || fail "layout of a sparse file"
python3 - "$T/sparse.json" <<'PY' || fail "sparse answer: $(cat "$T/sparse.json")"
import json, sys
e = [(x["file_offset"], x["length"], x["state"]) for x in json.load(open(sys.argv[1]))["extents"]]
assert e[:4] == [(0, 65536, "hole"), (65536, 8192, "data"), (73728, 188416, "hole"),
                 (262144, 131072, "unwritten")], e
assert e[4][0] == 393216 and e[4][2] == "hole", e
for x in json.load(open(sys.argv[1]))["extents"]:
    # No checksums but a written block's (an empty array: libsmartcols 2.38 prints [null]).
    assert x["state"] == "data" or x["crc32c"] in ([], [None]), x
    # A hole has no place; an unwritten range has one (a write in place would go there).
    assert (x["state"] == "hole") == (x["volume_offset"] is None), x
    assert (x["state"] == "hole") == (not x.get("children")), x
PY

# People's lines name the same member and offset.
"$PONY" fs layout "$T/m/file" >"$T/layout.txt" || fail "pony fs layout"
[ "$(record_field LEVEL <"$T/layout.txt") $(record_field LAYOUT <"$T/layout.txt")" = "raid6 left-symmetric" ] ||
	fail "no volume record: $(cat "$T/layout.txt")"
# (a table: each extent, its pieces below it: FILE_OFFSET LENGTH ROLE WHERE)
grep -Eq "(^|[^0-9])0 +[0-9]+ +data +member [0-9] $dev uuid [0-9a-f-]+ at $off *$" "$T/layout.txt" ||
	fail "no first piece line: $(cat "$T/layout.txt")"

# --range: only the extents it touches.
"$PONY" fs layout --json --range 0:4096 "$T/m/file" >"$T/range.json" || fail "--range"
python3 - "$T/range.json" <<'PY' || fail "--range answer: $(cat "$T/range.json")"
import json, sys
l = json.load(open(sys.argv[1]))
assert len(l["extents"]) == 1 and l["extents"][0]["file_offset"] == 0
PY

# Written but not synced: the daemon holds it; no place on the volume yet.
exec 3>"$T/m/fresh"
printf 'not yet on disk' >&3
"$PONY" fs layout --json "$T/m/fresh" >"$T/fresh.json" || fail "layout of a dirty file"
exec 3>&-
python3 - "$T/fresh.json" <<'PY' || fail "dirty answer: $(cat "$T/fresh.json")"
import json, sys
l = json.load(open(sys.argv[1]))
e = l["extents"]
assert len(e) == 1 and e[0]["state"] == "dirty" and e[0]["volume_offset"] is None and not e[0].get("children"), e
PY

# Errors people can act on.
mkdir "$T/m/dir"
out=$("$PONY" fs layout "$T/m/dir" 2>&1) && fail "a directory has a layout"
echo "$out" | grep -q "is a directory" || fail "directory: $out"
out=$("$PONY" fs layout "$T/orig" 2>&1) && fail "a file off the mount has a layout"
echo "$out" | grep -q "not on a pony mount" || fail "off the mount: $out"
expect_usage_error "$PONY" fs layout --range 12 "$T/m/file"
"$PONY" fs layout --help | grep -q "Usage: pony fs layout" || fail "--help"

pony_umount
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" || fail "fsck: $(cat "$T/fsck.out")"
pass
