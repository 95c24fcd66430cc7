#!/usr/bin/env bash
# cli_json_home.sh - src/cli builds no JSON by hand: every record, table
# and --json of a command goes through src/cli/table.c (libsmartcols), so
# columns line up and JSON is libsmartcols's. A grep of src/cli for the
# ways JSON was built by hand (util_json's writer, json_escape, a printf
# of a "key": pair or of a brace) must find nothing outside table.c.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

cd "$PONY_SRCDIR/src/cli" || fail "no src/cli under $PONY_SRCDIR"
pattern='util_json|json_escape|printf\(.*\\"[A-Za-z_]+\\": *[%\\"]|(printf|puts|putchar)\(.*"[[{]"'
found=$(grep -nE "$pattern" -- *.c *.h | grep -v '^table\.c:')
[ -z "$found" ] || fail "JSON built by hand outside table.c:
$(printf '%s\n' "$found" | head -20)"
pass
