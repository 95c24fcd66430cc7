#!/usr/bin/env bash
# vol_sbcrash.sh - a crash anywhere in `pony vol add`'s superblock writes
# leaves a volume that assembles with every member that was in sync. A
# RAID5 and a RAID6 of image files, a known pattern written, one member
# failed; `pony vol add` of a larger new member is killed (SIGKILL, by the
# crash point counter PONY_VOLUME_CRASH_AT, src/volume/sb.c) before its Nth
# superblock copy write, N walking the first commits one by one and the
# rebuild's checkpoints in strides. After each kill: status and detail show
# every in-sync member ok (never stale), the new member absent or
# rebuilding with a checkpoint, the volume reads back the pattern; a second
# add (or a rebuild, which resumes) completes, and the volume is clean,
# scrubs with 0 mismatches and reads the pattern. The same for an idle
# hot spare's add on a healthy volume.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-sbcrash
# Every commit flushes each member twice: on tmpfs where there is one, so
# the time is this test's, not the shared disk's queue.
if shm=$(mktemp -d /dev/shm/pony-sbcrash.XXXXXX 2>/dev/null); then
	rm -rf "$work"
	work=$shm
	cd "$work" || exit 1
fi
export PONY_DEVDB=$work/devdb.sqlite PONY_RUNDIR=$work/run

MiB=1048576
# jq -e passes an empty input: a command that printed nothing must fail.
jq_check() { [ -s "$1" ] && jq -e "$2" "$1" >/dev/null; }
has_sb() { [ "$(head -c 7 "$1" | tr -d '\0')" = PONYVOL ]; }

# The member images as the test left them before an add: g/.
save() { mkdir -p g && rm -f g/* && cp --sparse=always "$@" g/; }
restore() { rm -f new.img && cp --sparse=always g/* . && truncate -s 10M new.img; }

# Status and detail after a kill, then the read: members other than $failed
# in sync; member $failed failed (not new.img), new.img rebuilding with a
# checkpoint, or (killed after the rebuild's end) new.img ok and the volume
# clean. Sets $state to member $failed's state.
check_after_kill() {
	local what=$1 failed=$2
	shift 2
	# (status and detail exit 1 on a degraded volume: their JSON says how)
	"$PONY" vol status --json "$@" 2>err >st.json
	[ -s st.json ] || fail "$what: the volume does not assemble: $(cat err)"
	[ -s st.json ] && jq -e --argjson f "$failed" '
		([.members[] | select(.member != $f) | .state == "ok" and (.stale | not)] | all) and
		.volume[0].state != "failed" and
		(.members[$f] as $m |
		 if $m.state == "rebuilding" then ($m.device // "" | endswith("new.img")) and (.volume[0] | has("rebuild_checkpoint"))
		 elif $m.state == "ok" then ($m.device // "" | endswith("new.img")) and .volume[0].state == "clean"
		 else $m.state == "failed" and ($m.device // "" | endswith("new.img") | not) end)' \
		st.json >/dev/null || fail "$what: status: $(cat st.json) $(cat err)"
	state=$(jq -r ".members[$failed].state" st.json)
	"$PONY" vol detail --json "$@" 2>err >dt.json
	[ -s dt.json ] && jq -e --argjson f "$failed" '[.volumes[0].children[] | select(.name != ($f | tostring) and
		(.name | startswith("spare") | not)) | .state == "ok"] | all' dt.json >/dev/null ||
		fail "$what: detail: $(cat dt.json) $(cat err)"
	"$PONY" vol read -L "$len" -f back "$@" 2>err || fail "$what: read: $(cat err)"
	cmp -s back pattern || fail "$what: read back other than the pattern"
}

# The end state: every member ok, clean, 0 mismatches, the pattern.
check_whole() {
	local what=$1
	shift
	"$PONY" vol status --json "$@" 2>err >st.json
	jq_check st.json '.volume[0].state == "clean" and ([.members[].state == "ok"] | all)' ||
		fail "$what: not clean: $(cat st.json err)"
	"$PONY" vol scrub "$@" >out 2>&1 || fail "$what: scrub: $(cat out)"
	record_field MISMATCHES <out | grep -qx 0 || fail "$what: scrub: $(cat out)"
	"$PONY" vol read -L "$len" -f back "$@" 2>err || fail "$what: read: $(cat err)"
	cmp -s back pattern || fail "$what: the pattern differs after the resume"
}

# olds: N members of 8 MiB in a volume of LEVEL, the pattern written over it.
make_volume() {
	local level=$1 n=$2 name=$3
	rm -f d*.img
	olds=()
	for ((i = 0; i < n; i++)); do truncate -s 8M d$i.img; olds+=(d$i.img); done
	"$PONY" vol create -l "$level" -c 64K -N "$name" "${olds[@]}" >/dev/null || fail "$name: create"
	len=$("$PONY" vol status --json "${olds[@]}" | jq .volume[0].size)
	head -c "$len" /dev/urandom >pattern
	"$PONY" vol write -f pattern "${olds[@]}" || fail "$name: write"
}

# `vol add -d new.img` from the saved images, killed at crash point $2:
# 1 if it ran to its end first; else devs: olds, and new.img if it has a superblock.
add_killed() {
	local what=$1 point=$2 rc
	restore
	PONY_VOLUME_CRASH_AT=$point "$PONY" vol add -d new.img "${olds[@]}" >/dev/null 2>err
	rc=$?
	[ $rc = 0 ] && return 1
	[ $rc = 137 ] || fail "$what: add at crash point $point exited $rc: $(cat err)"
	devs=("${olds[@]}")
	has_sb new.img && devs+=(new.img)
	return 0
}

# One level: N members of 8 MiB, member $failed failed, `vol add` killed at
# points 1, 1 + STRIDE, ... until an add runs to its end; each point is a
# run of its own from the same images (g/). A stride prime to a commit's
# writes (2 copies a member) hits every place in a commit over the
# commits; PONY_SBCRASH_STRIDE=1 walks every point (minutes).
crash_add() {
	local level=$1 n=$2 failed=$3 stride=${PONY_SBCRASH_STRIDE:-$4}
	local point=$((1 - stride)) resume
	make_volume "$level" "$n" "sb$level"
	"$PONY" vol fail -m "$failed" "${olds[@]}" >/dev/null || fail "$level: fail $failed"
	save "${olds[@]}"
	while :; do
		point=$((point + stride))
		((point < 2000)) || fail "$level: the add never ran to its end"
		add_killed "$level" "$point" || break
		check_after_kill "$level, crash point $point" "$failed" "${devs[@]}"
		# Resume: the rebuild from its checkpoint, or the add again.
		case $state in
		rebuilding) resume=(rebuild) ;;
		ok) resume=() ;;
		*) resume=(add -d new.img); devs=("${olds[@]}") ;;
		esac
		if [ ${#resume[@]} -gt 0 ]; then
			"$PONY" vol "${resume[@]}" "${devs[@]}" >/dev/null 2>err ||
				fail "$level, crash point $point: ${resume[*]} after the kill: $(cat err)"
		fi
		devs=("${olds[@]}")
		devs[$failed]=new.img
		check_whole "$level, crash point $point, ${resume[*]:-none}" "${devs[@]}"
	done
	((point > 100)) || fail "$level: the add ended at crash point $point: too few superblock writes"
	devs=("${olds[@]}")
	devs[$failed]=new.img
	check_whole "$level, no crash" "${devs[@]}"
}

crash_add raid5 4 1 29
crash_add raid6 5 3 37

# An idle hot spare's add on a healthy volume: its open, add and close
# commits, every fifth point (each member's copies, the spare's first).
make_volume raid5 4 sbspare
save "${olds[@]}"
for point in $(seq 1 "${PONY_SBCRASH_STRIDE:-5}" 60); do
	add_killed spare "$point" || break
	"$PONY" vol status --json "${devs[@]}" 2>err >st.json
	jq_check st.json '.volume[0].state == "clean" and ([.members[] | .state == "ok" and (.stale | not)] |
		all) and (.spares | length) <= 1' ||
		fail "spare, crash point $point: $(cat st.json err)"
	# The add again, unless the spare made it.
	if ! jq_check st.json '[.spares[].device | strings | endswith("new.img")] | any'; then
		"$PONY" vol add -d new.img "${olds[@]}" >/dev/null 2>err ||
			fail "spare, crash point $point: add again: $(cat err)"
	fi
	"$PONY" vol status --json "${olds[@]}" new.img 2>err >st.json
	jq_check st.json '[.spares[].device // "" | endswith("new.img")] == [true]' ||
		fail "spare, crash point $point: no spare after the second add: $(cat st.json err)"
	check_whole "spare, crash point $point" "${olds[@]}" new.img
done
((point > 8)) || fail "spare: the add ended after $point points"
pass
