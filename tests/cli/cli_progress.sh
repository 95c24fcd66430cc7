#!/usr/bin/env bash
# cli_progress.sh - long work tells its progress off a terminal as lines on
# stderr (percent, total, rate, time left), the way a service's log keeps
# it: mkfs's and vol create's initial parity sync, and fsck's check of every
# file block against its checksum. $PONY_PROGRESS_QUIET_MS=0 lifts the
# first second's quiet, so work this small leaves its lines too (the rest
# of the rule, a line per 10 %, holds as for a long run). Stdout keeps only
# the command's own output.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" progress
export PONY_PROGRESS_QUIET_MS=0

# lines FILE WHAT: FILE holds progress lines of WHAT, percents rising to 100,
# each with its total, and its rate and time left once half a second has
# given a rate.
lines() {
	python3 - "$1" "$2" <<'PY' || fail "$2: progress lines: $(cat "$1")"
import re, sys
text, what = open(sys.argv[1]).read(), sys.argv[2]
got = re.findall(r"^pony: %s: (\d+)%% of [0-9.]+[KMGT]?(?:, [0-9.]+[KMGT]?/s, \d+ s left)?$"
                 % re.escape(what), text, re.M)
pct = [int(p) for p in got]
assert len(pct) >= 5, "fewer than five lines: %r" % pct
assert pct == sorted(pct) and pct[-1] == 100, "not rising to 100: %r" % pct
PY
}

for i in 0 1 2 3 4 5; do truncate -s 96M "$T/m$i.img"; done
imgs=("$T"/m?.img)
"$PONY" mkfs --data raid6 "${imgs[@]}" >"$T/mkfs.out" 2>"$T/mkfs.err" || fail "mkfs: $(cat "$T/mkfs.err")"
lines "$T/mkfs.err" "initial sync"
grep -q "initial sync" "$T/mkfs.out" && fail "progress on stdout: $(cat "$T/mkfs.out")"

# --assume-clean: no sync, no lines.
"$PONY" mkfs -f --assume-clean --data raid6 "${imgs[@]}" >/dev/null 2>"$T/clean.err" || fail "mkfs --assume-clean"
grep -q "initial sync" "$T/clean.err" && fail "a sync said with --assume-clean: $(cat "$T/clean.err")"

truncate -s 64M "$T/r0.img" "$T/r1.img" "$T/r2.img"
"$PONY" vol create -l raid5 "$T"/r?.img >/dev/null 2>"$T/create.err" || fail "vol create: $(cat "$T/create.err")"
lines "$T/create.err" "initial sync"

pony_mount "${imgs[@]}"
head -c 48M /dev/urandom >"$T/m/file"
pony_umount
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" 2>"$T/fsck.err" || fail "fsck: $(cat "$T/fsck.out" "$T/fsck.err")"
lines "$T/fsck.err" "checking file data"
grep -q ": clean$" "$T/fsck.out" || fail "fsck's own line: $(cat "$T/fsck.out")"
# --no-data skips the file data: nothing long to tell.
"$PONY" fsck --no-data "${imgs[@]}" >/dev/null 2>"$T/fsckD.err" || fail "fsck --no-data"
grep -q "checking file data" "$T/fsckD.err" && fail "data progress with --no-data: $(cat "$T/fsckD.err")"
pass
