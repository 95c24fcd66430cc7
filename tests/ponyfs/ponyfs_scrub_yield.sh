#!/usr/bin/env bash
# ponyfs_scrub_yield.sh - the passive scrub yields to the mount's reads
# (issue 21, "rate-limited and yielding to foreground I/O"): on a real
# mount, a pass run while a reader keeps O_DIRECT reads going through the
# mount reports time spent waiting for them (`pony fs scrub status`'s
# YIELDED_MS), still finishes (the first thread's wait is bounded), and
# an idle pass reports none.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-scrub-yield

volume_images mirror 2 192M --assume-clean
pony_mount --commit 200 "${imgs[@]}"
head -c 16M /dev/urandom >"$T/f"
cp "$T/f" "$T/m/f" && "$PONY" sync "$T/m" || fail "write f"

# field NAME: its value in the scrub record on stdin.
field() { awk -v k="$1" '$1 == k { print $2 }'; }

# An idle pass: nothing to yield to.
"$PONY" fs scrub start --wait "$T/m" >"$T/idle.out" || fail "idle scrub: $(cat "$T/idle.out")"
[ "$(field STATE <"$T/idle.out")" = done ] || fail "idle scrub: $(cat "$T/idle.out")"
[ "$(field YIELDED_MS <"$T/idle.out")" = 0 ] || fail "an idle pass yielded: $(cat "$T/idle.out")"

# A reader of 4 KiB O_DIRECT reads through the mount (each a READ the daemon
# serves: no page cache between), until the file $T/stop appears. It makes
# $T/reading after its first read: on a loaded machine python's start
# alone can take longer than a fixed sleep, and the pass must start beside
# reads already going.
python3 - "$T/m/f" "$T/stop" "$T/reads" "$T/reading" <<'PY' &
import mmap, os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
n = 0
while n == 0 or not os.path.exists(sys.argv[2]):
    os.preadv(fd, [buf], random.randrange(4096) * 4096)
    n += 1
    if n == 1:
        open(sys.argv[4], "w").close()
open(sys.argv[3], "w").write(str(n))
PY
reader=$!
for ((i = 0; i < 300; i++)); do
	[ -e "$T/reading" ] && break
	kill -0 "$reader" 2>/dev/null || fail "the reader ended before its first read"
	sleep 0.1
done
[ -e "$T/reading" ] || fail "the reader made no read in 30 s"
# A pass paced to take about two seconds on its own, a second of it beside the reader.
"$PONY" fs scrub start --rate 100 "$T/m" >/dev/null || fail "scrub start"
sleep 1
touch "$T/stop"
wait "$reader" || fail "the reader failed"
[ "$(cat "$T/reads")" -gt 10 ] || fail "the reader made $(cat "$T/reads") reads"
for ((i = 0; i < 600; i++)); do
	"$PONY" fs scrub status "$T/m" >"$T/busy.out" || fail "scrub status"
	[ "$(field STATE <"$T/busy.out")" = running ] || break
	sleep 0.1
done
[ "$(field STATE <"$T/busy.out") $(field LOST <"$T/busy.out")" = "done 0" ] ||
	fail "the pass beside the reader: $(cat "$T/busy.out")"
[ "$(field YIELDED_MS <"$T/busy.out")" -gt 0 ] ||
	fail "the pass did not yield to $(cat "$T/reads") reads: $(cat "$T/busy.out")"
echo "reads $(cat "$T/reads"), pass: $(tr "\n" " " <"$T/busy.out")"
cmp "$T/m/f" "$T/f" || fail "f after the scrubs"
pass
