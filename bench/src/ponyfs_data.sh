# bench/src/ponyfs_data.sh - bench/ponyfs's data rows (issue 19), sourced
# by it after the metadata rows (or alone, for --only data) so they use its
# mounts, helpers and sizes: a sequential write with its final fsync and a
# cold read of one SEQ_MB file, ponyfs against ext4 on the same backing
# disk (RATIO seq_write_vs_ext4, seq_read_vs_ext4, and the MiB each cold
# read took from the disk) and the FUSE floor's cold read of a file of
# that size (RATIO seq_read_vs_fuse_floor: ponyfs over the floor), then
# 4 KiB random reads at depth 32 of an FIO_MB file, buffered with a cold
# cache and O_DIRECT (RATIO
# randread_buffered_vs_ext4, randread_direct_vs_ext4, and their geometric
# mean randread_vs_ext4).

# --- sequential write (with fsync) and cold read of one big file ---
pw=() prd=() pd=() ew=() erd=() ed=() frd=()
for _ in $(seq $SEQ_RUNS); do
	read -r a b c < <(seq_gbs "$W/pm/big"); pw+=("$a"); prd+=("$b"); pd+=("$c")
	read -r a b c < <(seq_gbs "$W/em/big"); ew+=("$a"); erd+=("$b"); ed+=("$c")
	frd+=("$(floor_read_gbs "$W/fm/big")")
done
sw=$(med "${pw[@]}"); sr=$(med "${prd[@]}"); esw=$(med "${ew[@]}"); esr=$(med "${erd[@]}")
echo "RESULT seq_write_gbs $sw GB/s"; echo "RESULT seq_read_gbs $sr GB/s"
echo "RESULT seq_write_gbs_ext4 $esw GB/s"; echo "RESULT seq_read_gbs_ext4 $esr GB/s"
# Both reads cold: what each read from the disk, against the file's SEQ_MB.
echo "RESULT seq_read_disk_mib $(med "${pd[@]}") MiB"
echo "RESULT seq_read_disk_mib_ext4 $(med "${ed[@]}") MiB"
ratio seq_write_vs_ext4 "$sw" "$esw"
ratio seq_read_vs_ext4 "$sr" "$esr"
fsr=$(med "${frd[@]}")
echo "RESULT seq_read_gbs_fuse_floor $fsr GB/s"
ratio seq_read_vs_fuse_floor "$sr" "$fsr"
section_done seq

# --- 4 KiB random reads at depth 32, buffered (cold) then O_DIRECT ---
declare -A IOPS
for fs in ponyfs ext4; do
	f=$([ $fs = ponyfs ] && echo "$W/pm/rr" || echo "$W/em/rr")
	dd if=/dev/urandom of="$f" bs=1M count="$FIO_MB" conv=fsync status=none
	for direct in 0 1; do
		v=()
		for _ in $(seq $PAR_RUNS); do v+=("$(randread_iops "$f" $direct)"); done
		IOPS[$fs.$direct]=$(med "${v[@]}")
	done
	rm -f "$f"
done
for d in 0:buffered 1:direct; do
	IFS=: read -r direct kind <<<"$d"
	echo "RESULT randread_${kind}_iops_ponyfs ${IOPS[ponyfs.$direct]} IOPS"
	echo "RESULT randread_${kind}_iops_ext4 ${IOPS[ext4.$direct]} IOPS"
	ratio "randread_${kind}_vs_ext4" "${IOPS[ponyfs.$direct]}" "${IOPS[ext4.$direct]}"
done
ratio randread_vs_ext4 "$(calc "sqrt(${IOPS[ponyfs.0]} * ${IOPS[ponyfs.1]})")" \
	"$(calc "sqrt(${IOPS[ext4.0]} * ${IOPS[ext4.1]})")"
section_done randread
