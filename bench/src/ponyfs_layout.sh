# bench/src/ponyfs_layout.sh - bench/ponyfs's layout rows (issue 21),
# sourced by it after its other rows (or alone, for --only layout) so they
# use its helpers and scratch directory: a ponyfs on a RAID6 of six image
# files in $W, one LAYOUT_MB file (1 GiB; --quick 256 MiB) written and
# synced, then read whole to /dev/null by `pony fs cat --direct`
# (libpony-layout: straight from the member images, every block's CRC32C
# checked) and by dd through the mount (bs=1M), each read on a fresh
# mount so that the file was never read through it:
#  - hot: the member images in the page cache (read once just before);
#  - cold: every cache dropped;
#  - degraded: mounted --degraded without member 2, hot; the direct
#    reader rebuilds that member's blocks (the volume library, read-only).
# RATIO layout_read_*_vs_mount: the mount's time over the direct read's
# (over 1: the direct reader ahead). Medians of RUNS, the two readers in
# turns within a run. Then the write row (below): layout_write_vs_mount.

LAYOUT_MB=1024
[ $QUICK = 1 ] && LAYOUT_MB=256
mkdir -p "$W/lm"
LIMGS=()
for i in 0 1 2 3 4 5; do
	# Half the file per member (4 data of 6: room for two), plus the metadata region.
	truncate -s $((LAYOUT_MB / 2 + 192))M "$W/l$i.img"
	LIMGS+=("$W/l$i.img")
done
LDEGRADED=("$W/l0.img" "$W/l1.img" "$W/l3.img" "$W/l4.img" "$W/l5.img")
"$PONY" mkfs --data raid6 --assume-clean "${LIMGS[@]}" >/dev/null
LPID=''
# layout_mount [--degraded] IMG...: a fresh mount at $W/lm.
layout_mount() {
	if [ -n "$LPID" ]; then
		fusermount3 -u "$W/lm"
		wait "$LPID" || true
	fi
	"$PONY" mount --foreground "$@" "$W/lm" >/dev/null 2>>"$W/layout.log" & LPID=$!
	wait_mount "$W/lm" "$LPID" "$W/layout.log" "pony mount (layout rows)"
}
layout_mount "${LIMGS[@]}"
dd if=/dev/urandom of="$W/lm/big" bs=1M count="$LAYOUT_MB" status=none
"$PONY" sync "$W/lm"

# layout_time HOW CACHE IMG...: LT, the seconds of one read of the file by
# HOW (direct or mount) on a fresh mount of IMG..., with the member images
# hot (read just before) or cold (every cache dropped). Not in a $(...):
# the mount's daemon is this shell's child.
layout_time() {
	local how=$1 cache=$2 s
	shift 2
	layout_mount "$@"
	if [ "$cache" = hot ]; then
		for i in "$@"; do [ "$i" = --degraded ] || cat "$i" >/dev/null; done
	else
		sync; echo 3 >/proc/sys/vm/drop_caches
	fi
	s=$EPOCHREALTIME
	if [ "$how" = direct ]; then
		"$PONY" fs cat --direct "$W/lm/big" >/dev/null
	else
		dd if="$W/lm/big" of=/dev/null bs=1M status=none
	fi
	LT=$(calc "$EPOCHREALTIME - $s")
}
# layout_row NAME CACHE IMG...: RESULT rows of both readers' GB/s and the RATIO.
layout_row() {
	local name=$1 cache=$2 d=() m=() td tm
	shift 2
	for i in $(seq 0 $((RUNS - 1))); do
		if [ $((i % 2)) = 0 ]; then
			layout_time direct "$cache" "$@"; d+=("$LT")
			layout_time mount "$cache" "$@"; m+=("$LT")
		else
			layout_time mount "$cache" "$@"; m+=("$LT")
			layout_time direct "$cache" "$@"; d+=("$LT")
		fi
	done
	echo "# layout_read_$name runs: direct ${d[*]} s, mount ${m[*]} s" >&2
	td=$(med "${d[@]}") tm=$(med "${m[@]}")
	echo "RESULT layout_read_${name}_gbs $(calc "$LAYOUT_MB * 1048576 / $td / 1e9") GB/s"
	echo "RESULT layout_read_${name}_mount_gbs $(calc "$LAYOUT_MB * 1048576 / $tm / 1e9") GB/s"
	ratio "layout_read_${name}_vs_mount" "$tm" "$td"
}
layout_row hot hot "${LIMGS[@]}"
layout_row cold cold "${LIMGS[@]}"

# Direct writes: a LAYOUT_MB file (in the page cache) put by `pony fs put
# --direct` (fresh stripes, data and parity written by the client, the
# members flushed, one commit) against `pony fs put` through the mount
# (written, then fsync'd), each into a file removed and synced away first
# (the images hold the read rows' file and this one). Before the degraded
# row, which leaves member 2 stale. RATIO layout_write_vs_mount: the
# mount's time over the direct write's.
layout_mount "${LIMGS[@]}"
head -c $((LAYOUT_MB * 1048576)) /dev/urandom >"$W/lsrc"
# layout_put HOW: LT, the seconds of one put of $W/lsrc by HOW (direct or mount).
layout_put() {
	rm -f "$W/lm/w"
	"$PONY" sync "$W/lm"
	local s=$EPOCHREALTIME
	if [ "$1" = direct ]; then
		"$PONY" fs put --direct "$W/lsrc" "$W/lm/w"
	else
		"$PONY" fs put "$W/lsrc" "$W/lm/w"
	fi
	LT=$(calc "$EPOCHREALTIME - $s")
}
lw_d=() lw_m=()
for i in $(seq 0 $((RUNS - 1))); do
	if [ $((i % 2)) = 0 ]; then
		layout_put direct; lw_d+=("$LT"); layout_put mount; lw_m+=("$LT")
	else
		layout_put mount; lw_m+=("$LT"); layout_put direct; lw_d+=("$LT")
	fi
done
cmp "$W/lm/w" "$W/lsrc" || echo "# layout_write: the file put last differs from its source" >&2
echo "# layout_write runs: direct ${lw_d[*]} s, mount ${lw_m[*]} s" >&2
lw_td=$(med "${lw_d[@]}") lw_tm=$(med "${lw_m[@]}")
echo "RESULT layout_write_gbs $(calc "$LAYOUT_MB * 1048576 / $lw_td / 1e9") GB/s"
echo "RESULT layout_write_mount_gbs $(calc "$LAYOUT_MB * 1048576 / $lw_tm / 1e9") GB/s"
ratio layout_write_vs_mount "$lw_tm" "$lw_td"
rm -f "$W/lsrc" "$W/lm/w"
"$PONY" sync "$W/lm"
layout_row degraded hot --degraded "${LDEGRADED[@]}"
fusermount3 -u "$W/lm"
wait "$LPID" || true
LPID=''
rm -f "$W"/l?.img
section_done layout
