#!/usr/bin/env bash
# cli_tables.sh - commands that print records print a table (libsmartcols,
# src/cli/table.c) with a heading, whose columns line up whatever the
# data: a member on a long path does not push its neighbours' columns, and
# --json keeps the keys scripts read.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
workdir tables

# aligned FILE HEADING COLUMN: every line from the one starting with HEADING
# on has the text of column COLUMN (1-based, of the heading) starting at
# the same character as the heading's.
aligned() {
	awk -v head="$2" -v col="$3" '
		index($0, head) == 1 { on = 1; n = split($0, h, / +/)
			at = index($0, h[col]); rows = 0; next }
		on && NF { rows++
			if (substr($0, at - 1, 1) != " " || substr($0, at, 1) == " ") bad = bad NR ": " $0 "\n" }
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
assert d["routes"]["statx"] in ("uring", "workers") and isinstance(d["io_uring"], bool), d' ||
	fail "acall routes --json"
pass
