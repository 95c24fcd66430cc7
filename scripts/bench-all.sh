#!/usr/bin/env bash
# bench-all.sh [ARGS] - runs every executable bench/<component> in turn with
# ARGS (e.g. --quick). Each prints RESULT and RATIO lines.
set -u
cd "$(dirname "$0")/.."
status=0
for b in bench/*; do
	[ -f "$b" ] && [ -x "$b" ] || continue
	echo "== $b $*"
	"$b" "$@" || { echo "bench: $b failed" >&2; status=1; }
done
exit $status
