# tests/volume/vol_lib.sh - what the `pony vol` shell tests share: a scratch
# directory (/tmp/pony-NAME.XXXXXX, removed on exit) they run in, and json
# CHECK, which asserts a Python expression over the JSON on stdin (as s).
# Source it after tests/lib.sh: `. "$PONY_SRCDIR/tests/volume/vol_lib.sh" NAME`.
work=$(mktemp -d "/tmp/pony-$1.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
json() { python3 -c "import json,sys; s=json.load(sys.stdin); $1" || fail "json: $1"; }
