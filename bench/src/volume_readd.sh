#!/usr/bin/env bash
# volume_readd.sh [--quick] - bench/volume's re-add rows: a RAID6 of six
# image files loses member 5 while the volume is written (sequential
# writes into a few 64 MiB bitmap regions, as a server's absence under a
# write load leaves them), then the member comes back: `pony vol re-add`
# resyncs what the write-intent bitmap marks, timed, against a full rebuild
# of the same member onto a fresh file (`pony vol replace`), timed, in the
# same run. Medians of the repetitions.
#   RESULT readd_local_resync_s, RESULT full_rebuild_local_s, RATIO readd_local_vs_full_rebuild
set -euo pipefail
cd "$(dirname "$0")/../.."
quick=0
[ "${1:-}" = --quick ] && quick=1
build=${BUILD:-build}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/pony-bench-readd.XXXXXX")
trap 'rm -rf "$work"' EXIT
member_mib=$([ $quick = 1 ] && echo 256 || echo 1024)
write_mib=$([ $quick = 1 ] && echo 32 || echo 128)
reps=$([ $quick = 1 ] && echo 1 || echo 3)
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
now() { date +%s.%N; }
head -c $((member_mib << 20)) /dev/urandom >"$work/fill"
head -c $((write_mib << 20)) /dev/urandom >"$work/w"
readd=() full=()
for ((i = 0; i < reps; i++)); do
	rm -f "$work"/m*.img "$work/fresh.img"
	for d in 0 1 2 3 4 5; do truncate -s $(((member_mib + 2) << 20)) "$work/m$d.img"; done
	all=("$work"/m{0,1,2,3,4,5}.img)
	five=("$work"/m{0,1,2,3,4}.img)
	"$build/pony" vol create -l raid6 -c 64K --assume-clean "${all[@]}" >/dev/null
	# Real data everywhere: a rebuild reads and writes every byte.
	for ((k = 0; k < 4; k++)); do
		"$build/pony" vol write -O $((k * member_mib << 20)) -f "$work/fill" "${all[@]}"
	done
	# Member 5 away; writes land in two places of the volume.
	"$build/pony" vol write --degraded -O $((member_mib << 20)) -f "$work/w" "${five[@]}" 2>/dev/null
	"$build/pony" vol write --degraded -O $((3 * member_mib << 20)) -f "$work/w" "${five[@]}" 2>/dev/null
	sync
	t0=$(now)
	"$build/pony" vol re-add "${all[@]}" >"$work/readd.out"
	t1=$(now)
	readd+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
	truncate -s $(((member_mib + 2) << 20)) "$work/fresh.img"
	sync
	t0=$(now)
	"$build/pony" vol replace -m 5 -d "$work/fresh.img" "${all[@]}" >/dev/null 2>&1
	t1=$(now)
	full+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
done
r=$(printf '%s\n' "${readd[@]}" | median)
f=$(printf '%s\n' "${full[@]}" | median)
printf 'RESULT readd_local_resync_s %.3f s   (%s)\n' "$r" "$(cat "$work/readd.out")"
printf 'RESULT full_rebuild_local_s %.3f s\n' "$f"
printf 'RATIO readd_local_vs_full_rebuild %.2f\n' "$(awk -v r="$r" -v f="$f" 'BEGIN {print f / r}')"
