#!/usr/bin/env bash
# fuse_uring_read.sh - reads of a union's lower file over FUSE over io_uring
# are answered by a pread straight into the ring's payload buffer (ops.c's
# read_into_ring; uring_direct_reads counts them): every READ of a cold
# lower file goes that way, and what comes back is the lower's data: the
# whole file (its size not a multiple of a page), reads at odd offsets and
# lengths, a read across the end of the file (short) and one past it
# (empty), and O_DIRECT reads (no page cache in the way, so each is a READ).
# The mount's readahead is raised to four READs' worth, about 4 MiB (mount.c:
# 4 x 1008 KiB where READs are capped for splicing), so the cold 5 MiB read
# takes a handful of READs, not one per 128-256 KiB.
# Over /dev/fuse the same reads splice (spliced_answers counts them: every
# READ of the cold file, since mount.c caps READs at what libfuse's splice
# pipe holds; 1 MiB READs fell back to a buffer mapped for each), the large
# ones on readpool.c's helper threads (pooled_reads), and the ring counter
# is not there.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/fuse/uring_lib.sh"
require_cmd cmp
head -c $((5 * 1024 * 1024 + 12345)) /dev/urandom > "$T/l/big"
sum_before=$(md5sum < "$T/l/big")

# The lower's pages out of the host's cache, so the reads go to its disk.
cold() { python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$T/l/big"; }

# preads.py FILE LOWER [direct]: reads FILE at odd offsets and lengths (with
# O_DIRECT: aligned ones) and compares each with LOWER's bytes there.
cat > "$T/preads.py" <<'PY'
import mmap, os, sys
path, lower = sys.argv[1:3]
direct = len(sys.argv) > 3
size = os.path.getsize(lower)
with open(lower, "rb") as f:
    want = f.read()
if direct:
    cases = [(0, 4096), (1 << 20, 1 << 20), (3 << 20, 65536), (size - size % 4096, 8192)]
else:
    cases = [(1, 1), (4095, 2), (1000003, 200001), (size - 100, 4096), (size + 10, 100),
             (2 << 20, 128 << 10)]
fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
buf = mmap.mmap(-1, 4 << 20)                 # page aligned, for O_DIRECT
for off, n in cases:
    if direct:
        got = buf[:os.preadv(fd, [memoryview(buf)[:n]], off)]
    else:
        got = os.pread(fd, n, off)
    exp = want[off:off + n]
    if got != exp:
        sys.exit("read of %d at %d: %d bytes, not the lower's %d" % (n, off, len(got), len(exp)))
PY

# Over the rings: the whole cold file, then odd reads, then O_DIRECT reads.
mount_union --io-uring
[ "$(counter uring_queues)" -gt 0 ] || fail "no rings: $(counters)"
cold
r0=$(counter fuse_read); d0=$(counter uring_direct_reads)
cmp -s "$T/m/big" "$T/l/big" || fail "the lower file reads differently over the rings"
r1=$(counter fuse_read); d1=$(counter uring_direct_reads)
[ $((r1 - r0)) -gt 0 ] || fail "reading 5 MiB made no READ: $(counters)"
[ $((d1 - d0)) = $((r1 - r0)) ] ||
	fail "$((r1 - r0)) READs, $((d1 - d0)) of them read into the ring: $(counters)"
ra=$(cat "/sys/class/bdi/$(mountpoint -d "$T/m")/read_ahead_kb")
[ "$ra" -ge 4000 ] && [ "$ra" -le 4096 ] || fail "the mount's readahead is $ra KiB, not four ~1 MiB READs"
[ $((r1 - r0)) -le 12 ] || fail "a 5 MiB read took $((r1 - r0)) READs (1 MiB READs: ~6)"
fuse_daemon_stop "$T/m" "$T/log"
# A new mount: none of the file in the FUSE page cache.
mount_union --io-uring
python3 "$T/preads.py" "$T/m/big" "$T/l/big" || fail "odd reads over the rings differ"
d2=$(counter uring_direct_reads)
[ "$d2" -gt 0 ] || fail "odd reads made no read into the ring: $(counters)"
python3 "$T/preads.py" "$T/m/big" "$T/l/big" direct || fail "O_DIRECT reads over the rings differ"
d3=$(counter uring_direct_reads)
[ $((d3 - d2)) -ge 4 ] || fail "4 O_DIRECT reads made $((d3 - d2)) reads into the ring: $(counters)"
fuse_daemon_stop "$T/m" "$T/log"

# Over /dev/fuse: the same answers, spliced.
mount_union
cold
r0=$(counter fuse_read); s0=$(counter spliced_answers)
cmp -s "$T/m/big" "$T/l/big" || fail "the lower file reads differently over /dev/fuse"
r1=$(counter fuse_read); s1=$(counter spliced_answers)
[ $((r1 - r0)) -gt 0 ] && [ $((r1 - r0)) -le 12 ] ||
	fail "a 5 MiB read took $((r1 - r0)) READs over /dev/fuse: $(counters)"
# All but the last (the file's tail, maybe under libfuse's two pages).
[ $((s1 - s0)) -ge $((r1 - r0 - 1)) ] ||
	fail "$((r1 - r0)) READs, $((s1 - s0)) of them spliced: $(counters)"
# All but readahead's first window, the file's tail (under 128 KiB) and the
# small READs of the window's ramp: cmp's small reads start it at 128 KiB
# and it doubles to the mount's four READs, and its 1 and 2 MiB steps are
# a few pages more than whole READs of 1008 KiB.
[ "$(counter pooled_reads)" -ge $((r1 - r0 - 4)) ] ||
	fail "$((r1 - r0)) READs, $(counter pooled_reads) of them answered by the read pool: $(counters)"
python3 "$T/preads.py" "$T/m/big" "$T/l/big" || fail "odd reads over /dev/fuse differ"
"$PONY" fs requests "$T/m" | grep -q '^uring_' && fail "ring counters without rings: $(counters)"
# Four cold readers at once: the helpers answer their READs side by side.
fuse_daemon_stop "$T/m" "$T/log"
mount_union
cold
pids=()
for i in 1 2 3 4; do cmp -s "$T/m/big" "$T/l/big" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent reader read differently over /dev/fuse"; done
# SIGTERM while the helpers answer a cold read: the daemon ends at once,
# cleanly, and the mount with it.
fuse_daemon_stop "$T/m" "$T/log"
mount_union
cold
cat "$T/m/big" > /dev/null 2>&1 &
reader=$!
sleep 0.1
kill -TERM "$PONY_PID"
for _ in $(seq 50); do kill -0 "$PONY_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PONY_PID" 2>/dev/null && fail "the daemon still runs 5 s after SIGTERM mid-read"
wait "$PONY_PID" || fail "the daemon exited $? on SIGTERM mid-read: $(cat "$T/log")"
PONY_PID=
wait "$reader" || true
mountpoint -q "$T/m" && fail "still mounted after SIGTERM"

[ "$(md5sum < "$T/l/big")" = "$sum_before" ] || fail "the lower changed"
pass
