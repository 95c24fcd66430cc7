#!/usr/bin/env bash
# cli_errors.sh - every error names the object and the cause (issue 18,
# point 7): each bad input below must exit as documented (2 usage, 1
# failure) and print a message holding the value or path it is about and
# why, never a bare errno, and change no byte of any image.
set -u
. "$(dirname "$0")/../lib.sh"
PONY=${PONY:?}
T=$(mktemp -d /tmp/pony-cli-errors.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || fail "cd $T"

# expect RC 'TEXT1' 'TEXT2'... -- CMD...: exit code RC, stderr holds each TEXT.
expect() {
	local rc=$1 want=() got err
	shift
	while [ "$1" != -- ]; do want+=("$1"); shift; done
	shift
	err=$("$@" 2>&1 >/dev/null); got=$?
	[ "$got" -eq "$rc" ] || fail "'$*' exited $got, expected $rc: $err"
	for w in "${want[@]}"; do
		grep -qF -- "$w" <<<"$err" || fail "'$*' said '$err', which lacks '$w'"
	done
}

truncate -s 64M a.img
"$PONY" mkfs a.img >/dev/null 2>&1 || fail "mkfs a.img"
mkdir l u w m
touch regular
sum_before=$(md5sum a.img)

# Numbers: the option and the value, never a silent 0 or a wrap.
expect 2 "--commit" "'abc'" "not a number" -- "$PONY" mount --commit abc a.img m
expect 2 "--commit" "'-5'" "not a number" -- "$PONY" mount --commit -5 a.img m
expect 2 "--commit" "out of range" -- "$PONY" mount --commit 99999999999999999999 a.img m
expect 2 "--commit" "'10x'" -- "$PONY" mount --commit 10x a.img m
expect 2 "-o commit" "'soon'" -- "$PONY" mount -o commit=soon a.img m
expect 2 "--threads" "'0'" "out of range (1 to 64)" -- "$PONY" union mount --threads 0 \
	--lower l --upper u --work w m
expect 2 "--timeout" "'x'" -- "$PONY" union mount --timeout x --lower l --upper u --work w m
expect 2 "--chunk" "'5000'" "multiple of 4096" -- "$PONY" mkfs --chunk 5000 a.img
expect 2 "--chunk" "'12Q'" "not a size" -- "$PONY" vol create -l raid1 --chunk 12Q a.img
expect 2 "--member" "'64'" -- "$PONY" vol fail -m 64 a.img
expect 2 "--rate" "'fast'" -- "$PONY" vol scrub --rate fast a.img
expect 2 "--count" "'0'" -- "$PONY" acall mkfiles --count 0 .
expect 2 "--mask" "'0xg'" -- "$PONY" fs statx --mask 0xg .

# Paths: the one that is wrong, and why.
expect 1 "/nonexistent/x.img" "No such file or directory" -- "$PONY" mkfs /nonexistent/x.img
expect 1 "--lower /nonexistent" "No such file or directory" -- "$PONY" union mount \
	--lower /nonexistent --upper u --work w m
expect 1 "--upper $T/nope" "No such file or directory" -- "$PONY" union mount \
	--lower l --upper "$T/nope" --work w m
expect 1 "--work regular" "not a directory" -- "$PONY" union mount --lower l --upper u \
	--work regular m
expect 1 "mount point" "regular" "not a directory" -- "$PONY" mount a.img regular
expect 1 "a.img" "./a.img" "the same file" -- "$PONY" mount a.img ./a.img m
expect 8 "a.img" "the same file" -- "$PONY" fsck -n a.img "$T/a.img"
expect 1 "/nonexistent.img" "No such file or directory" -- "$PONY" mount /nonexistent.img m
PONY_DEVDB=$T/db.sqlite expect 1 "LABEL=nosuchlabel" -- "$PONY" mount LABEL=nosuchlabel m
PONY_DEVDB=$T/db.sqlite expect 1 "UUID=0123" -- "$PONY" mount UUID=0123 m
expect 1 "--log /nonexistent/x.log" "No such file or directory" -- "$PONY" mount \
	--log /nonexistent/x.log a.img m

[ "$(md5sum a.img)" = "$sum_before" ] || fail "a bad command changed a.img"
mountpoint -q m && fail "a failed mount left m mounted"
pass
