#!/usr/bin/env bash
# cli_tables.sh - commands that print records print a table (libsmartcols,
# src/cli/table.c) with a heading, whose columns line up whatever the
# data: a member on a long path does not push its neighbours' columns, and
# --json keeps the keys scripts read. One record (dev show, dev scan's and
# vol scrub's totals) is a FIELD VALUE table, and its --json libsmartcols's
# one-row table. No line of any table ends in a blank. Commands that find
# things exit 1 when nothing is found and 2 on bad usage. Every --json
# (vol status, acall routes, fs layout, fs resolve, fs badblocks) parses
# and says what the text says (json_vs_text.py), and src/cli prints JSON
# only through table.c (cli_json_home.sh).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
workdir tables

# aligned FILE HEADING COLUMN: every line from the one starting with HEADING
# on has the text of column COLUMN (1-based, of the heading) starting at
# the same character as the heading's (or ends before it: an empty last cell).
aligned() {
	awk -v head="$2" -v col="$3" '
		index($0, head) == 1 { on = 1; n = split($0, h, / +/)
			at = index($0, h[col]); rows = 0; next }
		on && NF { rows++
			if (length($0) >= at - 1 &&
			    (substr($0, at - 1, 1) != " " || substr($0, at, 1) == " ")) bad = bad NR ": " $0 "\n" }
		END { if (!on) { print "no heading " head; exit 1 }
		      if (!rows) { print "no rows under " head; exit 1 }
		      if (bad) { printf "column %d not aligned:\n%s", col, bad; exit 1 } }' "$1"
}

# A raid5 of three members, one on a long path, and a hot spare.
# (pony keeps a member device name of 63 bytes at most: the path stays under.)
long=$T/a-longer-directory-for-member-1
mkdir -p "$long"
truncate -s 32M "$T/m0.img" "$long/m1.img" "$T/m2.img" "$T/sp.img"
"$PONY" vol create -l raid5 --assume-clean "$T/m0.img" "$long/m1.img" "$T/m2.img" >/dev/null ||
	fail "vol create"
"$PONY" vol add -d "$T/sp.img" "$T/m0.img" "$long/m1.img" "$T/m2.img" >/dev/null || fail "vol add"
set -- "$T/m0.img" "$long/m1.img" "$T/m2.img" "$T/sp.img"
"$PONY" vol status "$@" >"$T/status" || fail "vol status exited $?: $(cat "$T/status")"
for col in 2 3; do
	aligned "$T/status" MEMBER "$col" || fail "vol status: $(cat "$T/status")"
done
grep -Eq "^1 +ok +$long/m1.img +0" "$T/status" || fail "member 1's row: $(cat "$T/status")"
grep -Eq "^spare0 +idle +$T/sp.img" "$T/status" || fail "the spare's row: $(cat "$T/status")"
# The same volume with member 2 left out: it is named missing with its UUID.
"$PONY" vol status "$T/m0.img" "$long/m1.img" >"$T/degraded" 2>/dev/null
grep -Eq "^2 +failed +- +0 +missing: uuid [0-9a-f-]{36}" "$T/degraded" ||
	fail "the missing member's row: $(cat "$T/degraded")"
aligned "$T/degraded" MEMBER 5 || fail "vol status degraded: $(cat "$T/degraded")"

"$PONY" vol badblocks --json "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d == {"badblocks": []}, d' || fail "vol badblocks --json"

"$PONY" acall routes >"$T/routes" || fail "acall routes"
aligned "$T/routes" OP 2 || fail "acall routes: $(cat "$T/routes")"
grep -Eq "^statx +(uring|workers)$" "$T/routes" || fail "statx's route: $(cat "$T/routes")"
"$PONY" acall routes --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["op"]: x["path"] for x in d["routes"]}
assert r["statx"] in ("uring", "workers") and isinstance(d["ring"][0]["io_uring"], bool), d' ||
	fail "acall routes --json"

# agree KIND NAME WORD1 WORD2 ARG...: `pony WORD1 WORD2 ARG...` and the same
# with --json exit alike, and the JSON (python's json module) says what the
# text says, record for record, row for row (tests/cli/json_vs_text.py).
agree() {
	local kind=$1 name=$2 w1=$3 w2=$4 rc rcj
	shift 4
	"$PONY" "$w1" "$w2" "$@" >"$T/$name.txt" 2>/dev/null; rc=$?
	"$PONY" "$w1" "$w2" --json "$@" >"$T/$name.json" 2>/dev/null; rcj=$?
	[ "$rc" = "$rcj" ] || fail "$w1 $w2 $*: exit $rc, with --json $rcj"
	python3 "$PONY_SRCDIR/tests/cli/json_vs_text.py" "$kind" "$T/$name.txt" "$T/$name.json" \
		>/dev/null || fail "$w1 $w2 $*: --json and text differ: $(cat "$T/$name.txt" "$T/$name.json")"
}
agree vol-status status vol status "$@"
agree vol-status degraded vol status "$T/m0.img" "$long/m1.img"
agree acall-routes routes acall routes

# json FILE PYTHON [ARG...]: FILE parses as JSON (d), and PYTHON's asserts
# hold (the ARGs are sys.argv[2:]).
json() {
	local f=$1 code=$2
	shift 2
	python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
$code" "$f" "$@" || fail "$f: $(cat "$f")"
}

# Records: one device, a scan's totals.
export PONY_DEVDB=$T/devdb.sqlite
mkdir "$T/imgs"
truncate -s 16M "$T/imgs/e.img" "$T/imgs/blank.img"
mkfs.ext4 -q -F -L tablelabel "$T/imgs/e.img" || fail "mkfs.ext4"
# a hard link: a second path of the same device (each path is probed)
ln "$T/imgs/e.img" "$T/imgs/e-link.img"
"$PONY" dev scan "$T/imgs" >"$T/scan" || fail "dev scan: $(cat "$T/scan")"
aligned "$T/scan" FIELD 2 || fail "dev scan: $(cat "$T/scan")"
[ "$(record_field PROBED <"$T/scan")" = 3 ] && [ "$(record_field FOUND <"$T/scan")" = 2 ] ||
	fail "dev scan's totals: $(cat "$T/scan")"
"$PONY" dev scan --json --force "$T/imgs" >"$T/scan.json" || fail "dev scan --json"
json "$T/scan.json" '
s = d["scan"]
assert len(s) == 1 and s[0]["probed"] == 3 and s[0]["found"] == 2, d
assert isinstance(s[0]["bytes_read"], int) and isinstance(s[0]["seconds"], float), d'
"$PONY" dev show LABEL=tablelabel >"$T/show" || fail "dev show: $(cat "$T/show")"
aligned "$T/show" FIELD 2 || fail "dev show: $(cat "$T/show")"
uuid=$(record_field UUID <"$T/show")
[ "$(record_field TYPE <"$T/show")" = ext4 ] && [ "$(record_field STATE <"$T/show")" = present ] &&
	[ "$uuid" = "$(blkid -o value -s UUID "$T/imgs/e.img")" ] ||
	fail "dev show's fields: $(cat "$T/show")"
[ "$(record_field PATH <"$T/show" | sort | tr '\n' ' ')" = "$T/imgs/e-link.img $T/imgs/e.img " ] ||
	fail "dev show: a PATH line for each path: $(cat "$T/show")"
"$PONY" dev show --json "$T/imgs/e.img" >"$T/show.json" || fail "dev show --json"
json "$T/show.json" '
r = d["device"]
assert len(r) == 1, d
r = r[0]
assert r["label"] == "tablelabel" and r["type"] == "ext4" and r["uuid"] == sys.argv[2], r
assert r["state"] == "present" and r["size"] == 16 << 20 and r["connect"] is None, r
assert sorted(r["path"]) == [sys.argv[3] + "/e-link.img", sys.argv[3] + "/e.img"], r' \
	"$uuid" "$T/imgs"
"$PONY" dev list >"$T/list" || fail "dev list"
aligned "$T/list" PATH 3 || fail "dev list: $(cat "$T/list")"
"$PONY" dev list --json >"$T/list.json" || fail "dev list --json"
"$PONY" dev find --json LABEL=tablelabel >"$T/find.json" || fail "dev find --json"
for f in "$T/list.json" "$T/find.json"; do
	json "$f" '
e = [x for x in d["devices"] if x["label"] == "tablelabel"]
assert len(e) == 1 and e[0]["type"] == "ext4" and e[0]["present"] is True, d
assert e[0]["kind"] == "file" and e[0]["size"] == 16 << 20 and e[0]["connect"] is None, d'
done

# A scrub's totals, and its findings in JSON.
"$PONY" vol scrub "$@" >"$T/scrub" 2>/dev/null || fail "vol scrub: $(cat "$T/scrub")"
aligned "$T/scrub" FIELD 2 || fail "vol scrub: $(cat "$T/scrub")"
[ "$(record_field MISMATCHES <"$T/scrub")" = 0 ] && [ "$(record_field UNLOCATABLE <"$T/scrub")" = 0 ] ||
	fail "vol scrub's totals: $(cat "$T/scrub")"
"$PONY" vol scrub --json "$@" >"$T/scrub.json" 2>/dev/null || fail "vol scrub --json"
json "$T/scrub.json" 'assert d == {"mismatches": []}, d'
# raid5's one parity cannot say which member is wrong: unlocatable.
printf 'JUNKJUNK' | dd of="$T/m2.img" bs=1 seek=$((1048576 + 70000)) conv=notrunc status=none
"$PONY" vol scrub "$@" >"$T/scrub1" 2>/dev/null && fail "a scrub of a corrupt raid5 exited 0"
[ "$(record_field MISMATCHES <"$T/scrub1")" = 1 ] && [ "$(record_field UNLOCATABLE <"$T/scrub1")" = 1 ] ||
	fail "vol scrub's totals of a finding: $(cat "$T/scrub1")"
"$PONY" vol scrub --json "$@" >"$T/scrub1.json" 2>/dev/null
json "$T/scrub1.json" '
m = d["mismatches"]
assert len(m) == 1 and m[0]["located"] is False and m[0]["repaired"] is False, d
assert m[0]["member"] is None and isinstance(m[0]["region_offset"], int), d'
"$PONY" vol detail "$@" >"$T/detail" || fail "vol detail"

# A ponyfs on a raid5 of four images, mounted: fs layout, fs resolve and
# (after a flipped block is read and repaired) fs badblocks, each --json
# against its text.
if [ -c /dev/fuse ]; then
	fs=()
	for i in 0 1 2 3; do truncate -s 64M "$T/f$i.img"; fs+=("$T/f$i.img"); done
	"$PONY" mkfs --data raid5 "${fs[@]}" >/dev/null || fail "mkfs --data raid5"
	mkdir "$T/m"
	fuse_daemon_start "$T/m" "$T/pony.log" "pony mount" "$PONY" mount --foreground "${fs[@]}" "$T/m"
	head -c $((300 * 1024 + 5)) /dev/urandom >"$T/orig"
	cp "$T/orig" "$T/m/file" && ln "$T/m/file" "$T/m/link" && "$PONY" sync "$T/m" || fail "write"
	agree fs-layout layout fs layout "$T/m/file"
	read -r dev off < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = next(p for e in d["extents"] for p in e.get("children", []) if p["role"] == "data")
print(p["device"], p["member_offset"] + 8192)' "$T/layout.json") || fail "no data piece: $(cat "$T/layout.json")"
	agree fs-resolve resolve fs resolve "$T/m" "$dev:$((off / 512))"
	record_field PATHS <"$T/resolve.txt" | sort | tr '\n' ' ' | grep -qx "/file /link " ||
		fail "resolve: $(cat "$T/resolve.txt")"
	agree fs-resolve resolve0 fs resolve "$T/m" 0
	agree fs-badblocks clean fs badblocks "$T/m"
	grep -qx "no bad blocks known" "$T/clean.txt" && grep -q '"badblocks": \[' "$T/clean.json" ||
		fail "badblocks of a clean mount: $(cat "$T/clean.txt" "$T/clean.json")"
	# A block flipped under the mount, read through a fresh one: repaired, listed.
	fuse_daemon_stop "$T/m" "$T/pony.log"
	printf 'JUNKJUNK' | dd of="$dev" bs=1 seek=$((off + 100)) conv=notrunc status=none
	fuse_daemon_start "$T/m" "$T/pony.log" "pony mount" "$PONY" mount --foreground "${fs[@]}" "$T/m"
	cmp "$T/m/file" "$T/orig" || fail "the flipped block was not repaired"
	agree fs-badblocks badblocks fs badblocks "$T/m"
	grep -Eq "^read +true .*file offset" "$T/badblocks.txt" || fail "badblocks: $(cat "$T/badblocks.txt")"
	fuse_daemon_stop "$T/m" "$T/pony.log"
fi

# No table's line ends in a blank (libsmartcols writes one before an empty
# last cell: vol status's NOTE, vol detail's UUID of a spare).
for f in status degraded routes scan show list scrub scrub1 detail status.txt routes.txt \
	layout.txt resolve.txt badblocks.txt; do
	[ -e "$T/$f" ] || continue
	if grep -n ' $' "$T/$f" >"$T/blanks"; then
		fail "$f: lines end in a blank: $(cat "$T/blanks")"
	fi
done

# Exit codes: 0 found, 1 not found, 2 usage, as the man pages say.
# code WANT CMD...: CMD exits WANT.
code() {
	local want=$1 rc
	shift
	"$@" >/dev/null 2>&1; rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want"
}
code 0 "$PONY" dev show LABEL=tablelabel
code 1 "$PONY" dev show LABEL=nosuchlabel
code 1 "$PONY" dev show "$T/imgs/blank-never-there.img"
code 2 "$PONY" dev show
code 2 "$PONY" dev show --no-such-option LABEL=tablelabel
code 0 "$PONY" dev find LABEL=tablelabel
code 1 "$PONY" dev find LABEL=nosuchlabel
code 1 "$PONY" dev find --json LABEL=nosuchlabel
code 2 "$PONY" dev find
code 1 "$PONY" vol detail "$T/imgs/blank.img"
code 1 "$PONY" vol detail nosuchvolume
code 2 "$PONY" vol detail
code 2 "$PONY" vol detail --no-such-option "$@"
code 1 "$PONY" fs layout "$T/no-such-file"
code 2 "$PONY" fs layout
code 2 "$PONY" crypt status
code 2 "$PONY" crypt status "$T" not-a-key-id
code 2 "$PONY" crypt get-policy
pass
