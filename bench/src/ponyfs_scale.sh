# bench/src/ponyfs_scale.sh - bench/ponyfs's scale rows (issue 19), sourced
# by it after the data rows (or alone, for --only scale) so they use its
# mounts, helpers and sizes: a second ponyfs filled in-process with N_PRE
# files (build/bench/ponyfs_populate, no FUSE), the daemon's VmRSS growth
# per file over a find + stat of them all (RESULT
# daemon_rss_bytes_per_inode), then the untar of the N_UNTAR-file tree into
# it and into the near-empty first ponyfs, in turns (RATIO
# untar_full_vs_empty: the full one's rate over the empty one's).

[ -f "$W/tree.tar" ] || make_tree "$W/tree.tar" "$N_UNTAR"
# --- scale: the untar with N_PRE files already there ---
"$PONY" mkfs "$W/scale.img" >/dev/null
"$POPULATE" "$W/scale.img" "$N_PRE"
pony_mount "$W/scale.img" "$W/sm"; SPID=$MOUNTED_PID
drop_dentries
r0=$(rss_bytes "$SPID")
n=$(find "$W/sm/pre" -type f -printf '%s %m %T@\n' | wc -l)
[ "$n" = "$N_PRE" ] || { echo "bench/ponyfs: $W/sm/pre holds $n files, not $N_PRE" >&2; exit 1; }
r1=$(rss_bytes "$SPID")
echo "# scale: daemon VmRSS $r0 B after mounting, $r1 B after find + stat of $N_PRE files"
echo "RESULT daemon_rss_bytes_per_inode $(calc "($r1 - $r0) / $N_PRE") B"
# Alternating with the near-empty ponyfs, so both see the same machine.
empty=() full=()
for _ in $(seq $RUNS); do
	for m in pm sm; do
		s=$EPOCHREALTIME; tar -xf "$W/tree.tar" -C "$W/$m"; t=$(calc "$EPOCHREALTIME - $s")
		if [ $m = pm ]; then empty+=("$t"); else full+=("$t"); fi
		rm -rf "$W/$m/src"
	done
done
ue=$(med "${empty[@]}") uf=$(med "${full[@]}")
echo "RESULT untar_${N_UNTAR}_ponyfs_near_empty $ue s"
echo "RESULT untar_${N_UNTAR}_ponyfs_with_${N_PRE}_files $uf s"
ratio untar_full_vs_empty "$ue" "$uf"
section_done scale
