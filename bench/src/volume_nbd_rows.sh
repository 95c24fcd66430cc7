# bench/src/volume_nbd_rows.sh - bench/volume-nbd's later rows, sourced by
# it after its sequential rows (its $build, $work, $quick, pids, port,
# now, rate and uris: the RAID6 of six nbdkit memory servers it wrote):
#  - RATIO nbd_randread_vs_local: 4 KiB random reads at depth 32 through
#    the volume (bench/src/volume_randread.c), on the NBD members against
#    the same volume on local image files (page cache warm), reads/s;
#  - scale-out by simulation: a ponyfs with its data striped (raid0) over
#    1, 2, 4 and 8 nbdkit memory servers, each behind nbdkit's rate filter
#    at 50 MB/s (rate=400M: the filter counts bits; a slow link, set through
#    rate-file once the file is written, so only the timed read is limited),
#    one large file
#    read whole by the direct reader (`pony fs cat --direct`, on the mount:
#    the layout's pieces straight from the servers, in parallel):
#    RESULT layout_read_mbs_N, RATIO scale_8_vs_1 (a 1 GiB file; --quick:
#    1 and 8 only, 128 MiB); the
#    floor in the same run, nbdcopy reading the same servers at once over
#    the same links (the data each holds; it skips holes), gives
#    RATIO nbdcopy_scale_8_vs_1 (what this machine's loopback can scale to)
#    and RATIO layout_read_8_vs_nbdcopy;
#  - resync after a server's absence (10 s; --quick 2 s) during a write
#    load: a ponyfs on a RAID5 of four nbdkit file servers mounted with
#    --auto-readd; the server is killed, restarted on its port, re-added by
#    the mount, which logs the resync's time: RESULT readd_resync_s; then,
#    unmounted, the same member rebuilt in full onto a fresh server (`pony
#    vol replace`): RATIO readd_vs_full_rebuild (full over resync).
# Rows that need FUSE (root) are printed as skipped without it.

# wait_up URI: until the server answers (5 s at most).
wait_up() {
	for _ in $(seq 1 100); do nbdcopy "$1" null: 2>/dev/null && return 0; sleep 0.05; done
	echo "bench/volume-nbd: no server at $1" >&2
	exit 1
}

# serve PORT ARGS...: nbdkit on 127.0.0.1:PORT (kept in pids).
serve() {
	local p=$1
	shift
	nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$p" "$@" &
	pids+=($!)
	wait_up "nbd://127.0.0.1:$p/"
}

# mount_at MNT ARGS...: a foreground pony mount (its pid in MPID).
mount_at() {
	local mnt=$1
	shift
	mkdir -p "$mnt"
	"$build/pony" mount --foreground "$@" "$mnt" 2>>"$work/mount.log" & MPID=$!
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; kill -0 $MPID || break; sleep 0.05; done
	echo "bench/volume-nbd: no mount at $mnt: $(cat "$work/mount.log")" >&2
	exit 1
}
umount_at() { fusermount3 -u "$1"; wait "$MPID" || true; }

# -- random reads ------------------------------------------------------------
secs=$([ $quick = 1 ] && echo 1 || echo 5)
nbd_iops=$("$build/bench/volume-randread" "$secs" 32 "${uris[@]}")
cat "$work"/m*.img >/dev/null
loc_iops=$("$build/bench/volume-randread" "$secs" 32 "$work"/m*.img)
printf 'RESULT nbd_randread_4k_qd32 %.0f reads/s\n' "$nbd_iops"
printf 'RESULT local_randread_4k_qd32 %.0f reads/s\n' "$loc_iops"
printf 'RATIO nbd_randread_vs_local %.3f\n' "$(awk -v a="$nbd_iops" -v b="$loc_iops" 'BEGIN {print a / b}')"

if [ "$(id -u)" != 0 ] || ! [ -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "RESULT layout_read_mbs skipped: FUSE mounts need root and /dev/fuse"
	echo "RESULT readd_resync_s skipped: FUSE mounts need root and /dev/fuse"
	return 0
fi

# -- scale-out ---------------------------------------------------------------
# Large enough that the read, not connecting to the servers and starting
# the reader, is what is timed: at 8 x 50 MB/s a 128 MiB file takes 0.34 s.
file_mib=$([ $quick = 1 ] && echo 128 || echo 1024)
head -c $((file_mib << 20)) /dev/urandom > "$work/scale_src"
link=400M                               # 50 MB/s: the filter's rate is in bits
declare -A mbs floor_mbs
for n in $([ $quick = 1 ] && echo 1 8 || echo 1 2 4 8); do
	members=()
	for ((i = 0; i < n; i++)); do
		p=$(port)
		rm -f "$work/rate$n.$i"
		serve "$p" --filter=rate memory $((file_mib * 2))M rate-file="$work/rate$n.$i" burstiness=0.2
		members+=("nbd://127.0.0.1:$p/")
	done
	"$build/pony" mkfs --data striped --assume-clean "${members[@]}" >/dev/null
	mount_at "$work/sm$n" "${members[@]}"
	cp "$work/scale_src" "$work/sm$n/big"
	"$build/pony" sync "$work/sm$n"
	for ((i = 0; i < n; i++)); do echo $link >"$work/rate.new" && mv "$work/rate.new" "$work/rate$n.$i"; done
	sleep 1.5                       # the filter reads the file again within a second
	t0=$(now)
	"$build/pony" fs cat --direct "$work/sm$n/big" >/dev/null
	t1=$(now)
	mbs[$n]=$(awk -v a="$t0" -v b="$t1" -v m="$file_mib" 'BEGIN {print m * 1.048576 / (b - a)}')
	umount_at "$work/sm$n"
	# The floor: nbdcopy reading every server's written bytes at once
	# (it skips what the memory plugin reports as holes), same links.
	t0=$(now)
	for u in "${members[@]}"; do nbdcopy "$u" null: & done
	wait $(jobs -p | grep -v -x -F -f <(printf '%s\n' "${pids[@]}")) 2>/dev/null || true
	t1=$(now)
	floor_mbs[$n]=$(awk -v a="$t0" -v b="$t1" -v m="$file_mib" 'BEGIN {print m * 1.048576 / (b - a)}')
	printf 'RESULT layout_read_mbs_%d %.1f MB/s   (nbdcopy on the same servers: %.1f MB/s)\n' \
		"$n" "${mbs[$n]}" "${floor_mbs[$n]}"
done
printf 'RATIO scale_8_vs_1 %.2f\n' "$(awk -v a="${mbs[8]}" -v b="${mbs[1]}" 'BEGIN {print a / b}')"
printf 'RATIO nbdcopy_scale_8_vs_1 %.2f\n' "$(awk -v a="${floor_mbs[8]}" -v b="${floor_mbs[1]}" 'BEGIN {print a / b}')"
printf 'RATIO layout_read_8_vs_nbdcopy %.2f\n' "$(awk -v a="${mbs[8]}" -v b="${floor_mbs[8]}" 'BEGIN {print a / b}')"

# -- resync after an absence ---------------------------------------------------
away=$([ $quick = 1 ] && echo 2 || echo 10)
member_mib=$([ $quick = 1 ] && echo 64 || echo 1024)
rports=() ruris=() rpids=()
for i in 0 1 2 3; do
	truncate -s $(((member_mib + 64) << 20)) "$work/r$i.img"
	rports+=("$(port)")
	serve "${rports[$i]}" file "$work/r$i.img"
	rpids+=("${pids[-1]}")
	ruris+=("nbd://127.0.0.1:${rports[$i]}/")
done
"$build/pony" mkfs --data raid5 --assume-clean "${ruris[@]}" >/dev/null
mount_at "$work/rm" --auto-readd --member-timeout 2 "${ruris[@]}"
# The load: 1 MiB written and fsynced at a time, round a 64 MiB file.
( i=0; while [ ! -e "$work/stop" ]; do
	dd if="$work/src" of="$work/rm/load" bs=1M count=1 skip=$((i % 64)) seek=$((i % 64)) \
		conv=notrunc,fsync status=none 2>/dev/null || true
	i=$((i + 1))
done ) &
load=$!
sleep 1
kill -KILL "${rpids[1]}" 2>/dev/null || true
wait "${rpids[1]}" 2>/dev/null || true
sleep "$away"
serve "${rports[1]}" file "$work/r1.img"
for _ in $(seq 600); do grep -q "member 1 .* re-added" "$work/mount.log" && break; sleep 0.1; done
touch "$work/stop"
wait $load || true
resync=$(sed -n 's/.*member 1 .* re-added: \([0-9]*\) bytes resynced .* in \([0-9.]*\) s.*/\2 \1/p' "$work/mount.log" | tail -1)
umount_at "$work/rm"
[ -n "$resync" ] || { echo "bench/volume-nbd: member 1 was not re-added: $(cat "$work/mount.log")" >&2; exit 1; }
fp=$(port)
serve "$fp" memory $(((member_mib + 64) << 20))
t0=$(now)
"$build/pony" vol replace -m 1 -d "nbd://127.0.0.1:$fp/" "${ruris[@]}" >/dev/null 2>&1
t1=$(now)
full=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
set -- $resync
printf 'RESULT readd_resync_s %.3f s   (%s bytes resynced after %s s away)\n' "$1" "$2" "$away"
printf 'RESULT full_rebuild_nbd_s %.3f s\n' "$full"
printf 'RATIO readd_vs_full_rebuild %.2f\n' "$(awk -v r="$1" -v f="$full" 'BEGIN {print f / r}')"
