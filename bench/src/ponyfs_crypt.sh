# bench/src/ponyfs_crypt.sh - bench/ponyfs's crypt rows (issue 20), sourced
# by it after its other rows (or alone, for --only crypt) so they use its
# helpers, sizes and mounts: ponyfs's encrypted directories, one under
# AES-256-XTS (rows without a suffix) and one under AES-256-GCM (_gcm),
# against gocryptfs over bench/ponyfs's ext4 (AES-256-GCM, its default:
# the peer of both modes) and against a plain directory of the same pony
# mount. All four sit on the same backing disk; each row takes them in
# turn within a run, so all see the same machine. RATIO crypt_*_vs_gocryptfs
# over 1: encrypted ponyfs ahead; crypt_*_vs_plain: encrypted over plain
# ponyfs (1 is encryption for free). Where `pony crypt` is missing or
# fails, a SKIP line says why and only the peers' rows are printed.

if ! command -v gocryptfs >/dev/null; then
	echo "SKIP crypt rows: needs gocryptfs (scripts/install-deps.sh)"
	return 0
fi
# The ceiling first, while the machine runs nothing of ours.
if [ $QUICK = 1 ]; then bench/crypt --ceiling --quick; else bench/crypt --ceiling; fi
section_done crypt_ceiling

# -scryptn 10: the passphrase's scrypt cost is paid at mount, not timed.
mkdir "$W/em/gcipher"
gocryptfs -init -q -extpass 'echo pass' -scryptn 10 "$W/em/gcipher"
gocryptfs -fg -q -extpass 'echo pass' "$W/em/gcipher" "$W/gm" 2>>"$W/gocryptfs.log" & GPID=$!
wait_mount "$W/gm" "$GPID" "$W/gocryptfs.log" gocryptfs

# CRYPT_WHO: what is measured, each's directory, its rows' suffix and the
# filesystem for tree_times; the encrypted ones join once their policy is set.
CRYPT_WHO=(gocryptfs plain)
declare -A CRYPT_DIR=([gocryptfs]=$W/gm [plain]=$W/pm/plain [xts]=$W/pm/xts [gcm]=$W/pm/gcm)
declare -A CRYPT_FS=([gocryptfs]=gocryptfs [plain]=ponyfs [xts]=ponyfs [gcm]=ponyfs)
declare -A CRYPT_SUFFIX=([gocryptfs]=_gocryptfs [plain]=_plain [xts]='' [gcm]=_gcm)
mkdir "$W/pm/plain"
# crypt_dir MODE: makes MODE's directory, encrypted under the key $keyid
# with contents aes-256-MODE; else prints a SKIP line for MODE's rows.
crypt_dir() {
	local err
	mkdir "${CRYPT_DIR[$1]}"
	if err=$("$PONY" crypt set-policy --contents "aes-256-$1" "${CRYPT_DIR[$1]}" "$keyid" 2>&1); then
		CRYPT_WHO+=("$1")
	else
		echo "SKIP crypt rows${CRYPT_SUFFIX[$1]}: pony crypt set-policy --contents aes-256-$1: $err"
	fi
}
head -c 64 /dev/urandom >"$W/crypt.key"
if ! "$PONY" crypt --help >/dev/null 2>&1; then
	echo "SKIP crypt rows: this pony has no \`pony crypt\`"
elif ! keyid=$("$PONY" crypt add-key "$W/pm" <"$W/crypt.key" 2>"$W/crypt.err"); then
	echo "SKIP crypt rows: pony crypt add-key: $(cat "$W/crypt.err")"
else
	crypt_dir xts
	crypt_dir gcm
fi
# crypt_turn I: CRYPT_WHO rotated by I, so that no one is always first
# after a commit or last before the host drops its caches.
crypt_turn() { echo "${CRYPT_WHO[@]:$1}" "${CRYPT_WHO[@]:0:$1}"; }
# crypt_ratio ROW KIND PEER: RATIO crypt_ROW_vs_PEER (_gcm too) for each
# encrypted directory measured, over 1 when it is ahead: for KIND rate
# (GB/s, IOPS) its figure over PEER's, for time PEER's over its.
crypt_ratio() {
	local m s=${CRYPT_SUFFIX[$3]#_} v
	for m in xts gcm; do
		case " ${CRYPT_WHO[*]} " in *" $m "*) ;; *) continue ;; esac
		v=${CRYPT_FIG[$m.$1]}
		if [ "$2" = rate ]; then
			ratio "crypt_$1_vs_$s${CRYPT_SUFFIX[$m]}" "$v" "${CRYPT_FIG[$3.$1]}"
		else
			ratio "crypt_$1_vs_$s${CRYPT_SUFFIX[$m]}" "${CRYPT_FIG[$3.$1]}" "$v"
		fi
	done
}

# --- sequential write (with its fsync) and cold read, SEQ_MB ---
declare -A CRYPT_SEQ CRYPT_FIG
for i in $(seq 0 $((RUNS - 1))); do
	for who in $(crypt_turn $((i % ${#CRYPT_WHO[@]}))); do
		read -r a b _ < <(seq_gbs "${CRYPT_DIR[$who]}/big")
		CRYPT_SEQ[$who.w]+="$a " CRYPT_SEQ[$who.r]+="$b "
	done
done
for who in "${CRYPT_WHO[@]}"; do
	echo "# crypt_seq $who runs: write ${CRYPT_SEQ[$who.w]}GB/s, read ${CRYPT_SEQ[$who.r]}GB/s" >&2
	# shellcheck disable=SC2086
	CRYPT_FIG[$who.seq_write]=$(med ${CRYPT_SEQ[$who.w]}) CRYPT_FIG[$who.seq_read]=$(med ${CRYPT_SEQ[$who.r]})
	echo "RESULT crypt_seq_write_gbs${CRYPT_SUFFIX[$who]} ${CRYPT_FIG[$who.seq_write]} GB/s"
	echo "RESULT crypt_seq_read_gbs${CRYPT_SUFFIX[$who]} ${CRYPT_FIG[$who.seq_read]} GB/s"
done
for row in seq_write seq_read; do
	crypt_ratio $row rate gocryptfs
	crypt_ratio $row rate plain
done
section_done crypt_seq

# --- untar of the tree + find/stat of it (bench/ponyfs's untar rows) ---
[ -f "$W/tree.tar" ] || make_tree "$W/tree.tar" "$N_UNTAR"
declare -A CRYPT_U CRYPT_F
for i in $(seq 0 $((RUNS - 1))); do
	for who in $(crypt_turn $((i % ${#CRYPT_WHO[@]}))); do
		read -r a b _ < <(tree_times "${CRYPT_FS[$who]}" "${CRYPT_DIR[$who]}")
		CRYPT_U[$who]+="$a " CRYPT_F[$who]+="$b "
	done
done
for who in "${CRYPT_WHO[@]}"; do
	echo "# crypt_untar $who runs: untar ${CRYPT_U[$who]}s, find_stat ${CRYPT_F[$who]}s" >&2
	# shellcheck disable=SC2086
	u=$(med ${CRYPT_U[$who]}) f=$(med ${CRYPT_F[$who]})
	echo "RESULT crypt_untar_${N_UNTAR}${CRYPT_SUFFIX[$who]} $u s"
	echo "RESULT crypt_find_stat_${N_UNTAR}${CRYPT_SUFFIX[$who]} $f s"
	CRYPT_FIG[$who.untar]=$(calc "$u + $f")
done
crypt_ratio untar time gocryptfs
crypt_ratio untar time plain
section_done crypt_untar

# --- 4 KiB random reads at depth 32, buffered, cold cache ---
for who in "${CRYPT_WHO[@]}"; do
	f=${CRYPT_DIR[$who]}/rr v=()
	dd if=/dev/urandom of="$f" bs=1M count="$FIO_MB" conv=fsync status=none
	for _ in $(seq $PAR_RUNS); do v+=("$(randread_iops "$f" 0)"); done
	rm -f "$f"
	CRYPT_FIG[$who.randread]=$(med "${v[@]}")
	echo "RESULT crypt_randread_iops${CRYPT_SUFFIX[$who]} ${CRYPT_FIG[$who.randread]} IOPS"
done
crypt_ratio randread rate gocryptfs
crypt_ratio randread rate plain
section_done crypt_randread
