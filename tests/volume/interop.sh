#!/usr/bin/env bash
# interop.sh - the other direction of tests/data/volume: arrays that pony
# creates (`pony vol create --md`) and fills (`pony vol write --md`) are
# assembled by the real Linux md (mdadm, under md-oracle's qemu), whose
# "check" pass must find 0 mismatches and whose contents must be what pony
# wrote. Slow (a VM boot under emulation): `make interop`, not `make check`.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
PONY=${PONY:-$src/build/pony}
oracle=${MD_ORACLE:-$src/../shared/tools/md-oracle/md-oracle.sh}
# From a worktree (/work/wt/NAME) the shared tools are one level further up.
[ -n "${MD_ORACLE:-}" ] || [ -x "$oracle" ] || oracle=$src/../../shared/tools/md-oracle/md-oracle.sh
command -v qemu-system-x86_64 >/dev/null || { echo "interop: needs qemu-system-x86 and cpio" >&2; exit 77; }
[ -x "$oracle" ] || { echo "interop: no md-oracle at $oracle (set MD_ORACLE)" >&2; exit 77; }
work=$(mktemp -d /tmp/pony-interop.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 "$src/tests/data/volume/make-pattern.py" 32 "$work/pattern.bin"

# name:level:layout:ndisks; a boot takes about 22 disks, so two groups.
group1="raid0:0:-:3 raid1:1:-:2 raid4:4:-:3 raid5-ls:5:left-symmetric:3
 raid5-la:5:left-asymmetric:3 raid5-rs:5:right-symmetric:3 raid5-ra:5:right-asymmetric:3"
group2="raid6:6:left-symmetric:4 raid6-ra:6:right-asymmetric:4 raid10-n2:10:n2:4
 raid10-f2:10:f2:4 raid10-o2:10:o2:4"
sets="$group1 $group2"
declare -A size
run_group() {
local imgs=() jobsets=() s name level layout nd members lay out
for s in $1; do
	IFS=: read -r name level layout nd <<<"$s"
	members=()
	for ((i = 0; i < nd; i++)); do
		truncate -s 8M "$work/$name-$i.img"
		members+=("$work/$name-$i.img")
	done
	lay=(); [ "$layout" != - ] && lay=(-p "$layout")
	out=$("$PONY" vol create --md -l "$level" -c 64K "${lay[@]}" "${members[@]}")
	size[$name]=$(echo "$out" | awk '{print $(NF-1)}')
	"$PONY" vol write --md -L "${size[$name]}" -f "$work/pattern.bin" "${members[@]}"
	imgs+=("${members[@]}")
	jobsets+=("$name:$nd")
done
"$oracle" run -s "$src/tests/volume/interop-job.sh" -e "SETS=${jobsets[*]}" "${imgs[@]}" \
	>> "$work/log" || { cat "$work/log"; echo "interop: the oracle failed" >&2; exit 1; }
}
run_group "$group1"
run_group "$group2"
status=0
for s in $sets; do
	name=${s%%:*}
	want=$(head -c "${size[$name]}" "$work/pattern.bin" | md5sum | cut -d' ' -f1)
	got=$(awk -v n="$name" '$1 == n && $2 == "MD5" {print $4}' "$work/log")
	mm=$(awk -v n="$name" '$1 == n && $2 == "MISMATCH_CNT" {print $4}' "$work/log")
	if [ "$got" = "$want" ] && { [ -z "$mm" ] || [ "$mm" = 0 ]; }; then
		echo "interop: $name: md assembled it, contents match, mismatch_cnt ${mm:-n/a}"
	else
		echo "interop: $name: FAILED (md5 $got want $want, mismatch_cnt ${mm:-?})"
		status=1
	fi
done
[ $status = 0 ] || grep -E "^SET|mdadm:" "$work/log" >&2
exit $status
