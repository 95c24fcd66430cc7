# bench/src/ponyfs_scrub.sh - bench/ponyfs's scrub rows (issue 21, docs/
# scrub.md), sourced by it after its other rows (or alone, for --only
# scrub) so they use its helpers and sizes: a ponyfs on a RAID6 of six
# image files (SCRUB_MB each) holding one file of SCRUB_FILE_MB, on the
# same backing disk as the other rows.
#  - RESULT scrub_gbs: the member bytes one whole pass covers (every byte
#    of both regions on all six members) over its time, caches dropped;
#  - RATIO scrub_vs_member_read: that rate over reading the six member
#    images sequentially at once (dd, caches dropped): what the pass costs
#    beyond the reads it cannot avoid (goal 0.8);
#  - RATIO scrub_foreground_p99_inv: p99 of 4 KiB random O_DIRECT reads of
#    the file through the mount (fio, psync, one job), idle, over the same
#    while passes run back to back without a rate limit (goal 0.77: scrub
#    adds at most 30% to the foreground's p99). One window's p99 swung from
#    0.32 to 0.97 between runs on the shared machine (another engineer's
#    burst landing in one of the two windows), so it is measured in
#    SCRUB_FIO_WINDOWS pairs of windows, idle then scrubbing, taken in turns
#    so a burst of load falls on both sides alike; each side's p99 is the
#    median of its windows' (all printed on a '# scrub p99' line).

if [ $QUICK = 1 ]; then SCRUB_MB=128 SCRUB_FILE_MB=192 SCRUB_FIO_S=2 SCRUB_FIO_WINDOWS=5
else SCRUB_MB=512 SCRUB_FILE_MB=1024 SCRUB_FIO_S=6 SCRUB_FIO_WINDOWS=7; fi
mkdir -p "$W/rm"
scrub_imgs=()
for i in 0 1 2 3 4 5; do
	truncate -s "${SCRUB_MB}M" "$W/r$i.img"
	scrub_imgs+=("$W/r$i.img")
done
"$PONY" mkfs --data raid6 "${scrub_imgs[@]}" >/dev/null
"$PONY" mount --foreground "${scrub_imgs[@]}" "$W/rm" 2>>"$W/pony.log" & RPID=$!
wait_mount "$W/rm" "$RPID" "$W/pony.log" "pony mount (raid6)"
dd if=/dev/urandom of="$W/rm/file" bs=1M count="$SCRUB_FILE_MB" status=none
"$PONY" sync "$W/rm"
member_bytes=$((6 * SCRUB_MB * 1048576))

# Every member at once, sequentially, from a cold cache.
member_read_s() {
	local s pids=()
	sync; echo 3 >/proc/sys/vm/drop_caches
	s=$EPOCHREALTIME
	for img in "${scrub_imgs[@]}"; do dd if="$img" of=/dev/null bs=1M status=none & pids+=($!); done
	wait "${pids[@]}"
	calc "$EPOCHREALTIME - $s"
}
# One whole pass, from a cold cache.
scrub_s() {
	local s
	sync; echo 3 >/proc/sys/vm/drop_caches
	s=$EPOCHREALTIME
	"$PONY" fs scrub start --wait "$W/rm" >"$W/scrub.out"
	calc "$EPOCHREALTIME - $s"
}
# p99 (us) of SCRUB_FIO_S seconds of 4 KiB random direct reads of the file.
fg_p99() {
	fio --name=fg --filename="$W/rm/file" --ioengine=psync --rw=randread --bs=4k --direct=1 \
		--time_based --runtime="$SCRUB_FIO_S" --randrepeat=1 --output-format=json |
		python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]["clat_ns"]["percentile"]
print("%.1f" % (j["99.000000"] / 1000))'
}
ms=() ss=()
for _ in $(seq $RUNS); do ms+=("$(member_read_s)"); ss+=("$(scrub_s)"); done
m=$(med "${ms[@]}") s=$(med "${ss[@]}")
echo "# scrub: $(tr -s ' ' <"$W/scrub.out" | tr '\n' ' ')"
echo "RESULT member_read_gbs $(calc "$member_bytes / $m / 1e9") GB/s"
echo "RESULT scrub_gbs $(calc "$member_bytes / $s / 1e9") GB/s"
ratio scrub_vs_member_read "$m" "$s"
section_done scrub_rate

# One window with passes running back to back, from the first to the last of fio.
fg_p99_scrubbing() {
	local loop p
	touch "$W/scrub.loop"
	( while [ -e "$W/scrub.loop" ]; do "$PONY" fs scrub start --wait "$W/rm" >/dev/null || break; done ) &
	loop=$!
	p=$(fg_p99)
	rm -f "$W/scrub.loop"
	"$PONY" fs scrub stop "$W/rm" >/dev/null || true
	wait "$loop" || true
	echo "$p"
}
idles=() busys=()
for _ in $(seq $SCRUB_FIO_WINDOWS); do idles+=("$(fg_p99)"); busys+=("$(fg_p99_scrubbing)"); done
idle=$(med "${idles[@]}") busy=$(med "${busys[@]}")
echo "# scrub p99 (us) of $SCRUB_FIO_WINDOWS windows of ${SCRUB_FIO_S} s: idle ${idles[*]}; scrubbing ${busys[*]}"
echo "RESULT scrub_fg_randread_p99_idle $idle us"
echo "RESULT scrub_fg_randread_p99_scrubbing $busy us"
ratio scrub_foreground_p99_inv "$idle" "$busy"
umount "$W/rm"; wait "$RPID" || true; RPID=''
section_done scrub_foreground
