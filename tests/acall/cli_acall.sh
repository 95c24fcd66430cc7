#!/usr/bin/env bash
# cli_acall.sh - `pony acall` from the outside: help on every level, bad
# input is a usage error (exit 2) or a failure with a message, and real runs
# (routes, mkfiles, bench) print what they did.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
work=$(mktemp -d /tmp/pony-cli-acall.XXXXXX)
trap 'rm -rf "$work"' EXIT

for sub in "" bench routes mkfiles; do
	"$PONY" acall $sub --help | grep -q Usage || fail "pony acall $sub --help"
done
"$PONY" acall --help | grep -q bench || fail "pony acall --help does not list bench"

expect_usage_error "$PONY" acall nonsense
expect_usage_error "$PONY" acall bench
expect_usage_error "$PONY" acall bench --op nonsense "$work"
expect_usage_error "$PONY" acall bench --depth 0 "$work"
expect_usage_error "$PONY" acall bench --depth many "$work"
expect_usage_error "$PONY" acall bench --seconds -1 "$work"
expect_usage_error "$PONY" acall bench --path sideways "$work"
expect_usage_error "$PONY" acall mkfiles --count 0 "$work/t"
expect_usage_error "$PONY" acall routes extra
expect_failure "$PONY" acall bench --seconds 0.1 "$work/missing"
expect_failure "$PONY" acall bench --op statx --seconds 0.1 "$work/missing"

# routes: statx goes to workers, read to io_uring (when the kernel has it).
"$PONY" acall routes --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["op"]: x["path"] for x in d["routes"]}
assert r["statx"] == "workers", d
assert r["getdents64"] == "workers", d
assert r["read"] == ("uring" if d["ring"][0]["io_uring"] else "workers"), d
' || fail "routes --json"
"$PONY" acall routes --path workers | grep -q "read *workers" || fail "routes --path workers"
PONY_ACALL_PATH=workers "$PONY" acall routes | grep -q "read *workers" ||
	fail "PONY_ACALL_PATH=workers does not move reads to workers"
if "$PONY" acall routes | record_field IO_URING | grep -qx true; then
	PONY_ACALL_PATH=uring "$PONY" acall routes | grep -q "statx *uring" ||
		fail "PONY_ACALL_PATH=uring does not move statx to io_uring"
fi

# mkfiles makes exactly the files asked for.
"$PONY" acall mkfiles --count 2500 "$work/tree" >/dev/null || fail "mkfiles"
n=$(find "$work/tree" -type f | wc -l)
[ "$n" -eq 2500 ] || fail "mkfiles made $n files, not 2500"

# bench: every mix runs, on both paths, with no errors.
head -c 8M /dev/urandom >"$work/file"
for path in uring workers; do
	for op in randread randwrite mixed; do
		"$PONY" acall bench --op $op --depth 8 --seconds 0.2 --path $path --json "$work/file" |
			python3 -c 'import json,sys; d=json.load(sys.stdin)["bench"][0]; assert d["errors"] == 0 and d["ops"] > 0, d' ||
			fail "bench --op $op --path $path"
	done
	"$PONY" acall bench --op statx --depth 16 --seconds 0.2 --path $path --json "$work/tree" |
		python3 -c 'import json,sys; d=json.load(sys.stdin)["bench"][0]; assert d["errors"] == 0 and d["ops"] > 0, d' ||
		fail "bench --op statx --path $path"
done
out=$("$PONY" acall bench --op randread --depth 4 --threads 2 --seconds 0.2 --nocache "$work/file") ||
	fail "bench --nocache"
[ "$(record_field OP <<<"$out")" = randread ] && record_field OPS_PER_SEC <<<"$out" | grep -qx '[0-9]\+' &&
	[ "$(record_field NOCACHE <<<"$out")" = true ] || fail "bench printed '$out'"
pass
