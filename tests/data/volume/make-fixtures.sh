#!/usr/bin/env bash
# make-fixtures.sh [BOOT...] - remake the md/dm fixtures with the real kernel,
# through ../../../../shared/tools/md-oracle (Debian's kernel under qemu).
# Each boot creates several arrays on 4 MiB image files, writes the pattern of
# make-pattern.py into each, and stops it; the member images the kernel wrote
# are kept xz-compressed as NAME-I.img.xz and the guest's log as BOOT.log.
# Needs: apt-get install qemu-system-x86 cpio (and md-oracle's setup).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
oracle=${MD_ORACLE:-$here/../../../../shared/tools/md-oracle/md-oracle.sh}
work=$(mktemp -d /tmp/pony-fixtures.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 "$here/make-pattern.py" 32 "$work/pattern.bin"

# name:level:layout:chunkKiB:ndisks:metadata[:sizes[:options]] (sizes: KiB per
# member, comma-separated, default 4 MiB each; options: more mdadm options,
# comma-separated)
boot1_sets="raid0:0:-:64:3:1.2 raid1:1:-:-:2:1.0 raid4:4:-:64:3:1.2
 raid5-ls:5:left-symmetric:64:3:1.2 raid5-la:5:left-asymmetric:64:4:1.1
 raid5-rs:5:right-symmetric:64:3:1.2 raid5-ra:5:right-asymmetric:64:4:1.2"
boot1_dm='dm-striped;2;0 16384 striped 2 128 $T0 0 $T1 0'
boot2_sets="raid6:6:left-symmetric:64:5:1.2 raid6-ra:6:right-asymmetric:64:5:1.2
 raid10-n2:10:n2:64:4:1.2 raid10-f2:10:f2:64:4:1.2 raid10-o2:10:o2:64:4:1.2"
boot2_dm=''
boot3_sets="raid5-p0:5:parity-first:64:4:1.2 raid6-n:6:parity-last:64:4:1.2"
boot3_dm='dm-raid6-zr;5;0 24576 raid raid6_zr 1 128 5 - $T0 - $T1 - $T2 - $T3 - $T4'
# raid0 over members of unequal size: md's zones, in both multi-zone layouts.
# The smallest member holds an odd number of chunks, so zone 1 starts at an
# odd chunk and the original layout's rotation of the zone's devices shows.
boot4_sets="raid0-zo:0:original:64:3:1.2:4160,6144,8192
 raid0-za:0:alternate:64:4:1.2:6144,4160,5184,4608"
boot4_dm=''
# dm-raid raid10 far and offset: md's far sets (layout bit 18), 5 members so
# the last set takes the odd one (sets {0,1} and {2,3,4}). This kernel's
# dm-raid runs raid10 only with metadata devices: members 5-9 are those
# (dm-raid's own superblocks; pony reads the data members 0-4 alone).
# md's internal write-intent bitmap (64K a bit), left clean by mdadm --stop:
# the tests mark it dirty themselves to check pony's resync decision.
boot6_sets="raid5-bm:5:left-symmetric:64:3:1.2::--bitmap=internal,--bitmap-chunk=64K"
boot6_dm=''
boot5_sets=""
boot5_dm='dm-raid10-far;10;0 20480 raid raid10 5 128 raid10_copies 2 raid10_format far 5 $T5 $T0 $T6 $T1 $T7 $T2 $T8 $T3 $T9 $T4|dm-raid10-offset;10;0 20480 raid raid10 5 128 raid10_copies 2 raid10_format offset 5 $T5 $T0 $T6 $T1 $T7 $T2 $T8 $T3 $T9 $T4'

run_boot() {
	local boot=$1 sets=$2 dm=$3 imgs=() names=() s name nd
	declare -A size=()
	for s in $sets; do
		IFS=: read -r name _ _ _ nd _ sizes _ <<<"$s"
		IFS=, read -ra kib <<<"${sizes:-}"
		for ((j = 0; j < nd; j++)); do
			names+=("$name-$j")
			size[$name-$j]=${kib[j]:-4096}K
		done
	done
	IFS='|' read -ra dms <<<"$dm"
	for s in "${dms[@]}"; do
		[ -n "$s" ] || continue
		name=${s%%;*}; nd=${s#*;}; nd=${nd%%;*}
		for ((j = 0; j < nd; j++)); do names+=("$name-$j"); done
	done
	for n in "${names[@]}"; do
		truncate -s "${size[$n]:-4M}" "$work/$n.img"
		imgs+=("$work/$n.img")
	done
	"$oracle" run -s "$here/oracle-job.sh" -P "$work/pattern.bin" \
		-e "SETS=$(echo $sets)" -e "DMSETS=$dm" -e "BADBLOCK=${BADBLOCK:-}" \
		"${imgs[@]}" | tee "$here/$boot.log"
	# A recorded bad block must really be bad for the test to prove anything:
	# scribble over it, so only a reader that honours the log gets the data.
	{ grep '^BADBLOCK' "$here/$boot.log" || true; } | while read -r _ set _ m _ sec _ cnt; do
		dd if=/dev/zero bs=512 seek="$sec" count="$cnt" conv=notrunc status=none \
			of="$work/$set-$m.img"
	done
	for n in "${names[@]}"; do
		xz -9 -T1 -c "$work/$n.img" > "$here/$n.img.xz"
	done
}

[ $# -gt 0 ] || set -- boot1 boot2 boot3 boot4 boot5 boot6
for boot in "$@"; do
	case $boot in
	boot1) BADBLOCK="raid5-ls 1 64 8" run_boot boot1 "$boot1_sets" "$boot1_dm";;
	boot2) run_boot boot2 "$boot2_sets" "$boot2_dm";;
	boot3) run_boot boot3 "$boot3_sets" "$boot3_dm";;
	boot4) run_boot boot4 "$boot4_sets" "$boot4_dm";;
	boot5) run_boot boot5 "$boot5_sets" "$boot5_dm";;
	boot6) run_boot boot6 "$boot6_sets" "$boot6_dm";;
	*) echo "unknown boot $boot" >&2; exit 2;;
	esac
done
