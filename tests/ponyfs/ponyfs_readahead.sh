#!/usr/bin/env bash
# ponyfs_readahead.sh - a plain file read sequentially through the mount
# has its next blocks read ahead of its READs, around the host's cache,
# into the stream's own buffers (stream.c): over a cold 96 MiB read most
# blocks are answered from them (stream_hits), most straight from there,
# without a copy into the answer (stream_refs), the image stays out of the
# host's cache, and the buffers' memory stays within its bound, also with
# more streams at once than the bound allows (64 MiB: the rest read with
# the hints, readahead.c) and is given back when the files are closed.
# The buffers never serve a stale byte: in one open file, data read, then
# overwritten, truncated and extended, punched, or rewritten onto blocks
# freed since the buffers were filled, reads back as the new content; a
# block corrupted inside the window still fails the read (EBADMSG: one
# image, no redundancy to repair from) and the daemon reports it, rather
# than arriving as data.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-readahead
readahead_require
truncate -s 512M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
counter() { "$PONY" stat --counters "$T/m" | sed -n "s/^$1 //p"; }

# 1. A cold sequential read: answered from the stream's buffers.
head -c $((96 << 20)) /dev/urandom >"$T/data"
pony_mount "$T/img"
cp "$T/data" "$T/m/f" && "$PONY" sync "$T/m" || fail "write f"
pony_umount
images_uncache "$T/img"
pony_mount "$T/img"
before=$(images_cached "$T/img")
cmp "$T/data" "$T/m/f" || fail "the file reads back different"
hits=$(counter stream_hits) peak=$(counter stream_bytes_peak) now=$(counter stream_bytes)
refs=$(counter stream_refs)
after=$(images_cached "$T/img")
echo "# stream: $hits of 24576 blocks from its buffers ($refs answered from there without a copy), buffers at most $peak B, $now B after the close; image cached $before -> $after B"
[ "$hits" -ge 12288 ] || fail "only $hits of 24576 blocks answered from the stream's buffers"
[ "$refs" -ge $((hits / 2)) ] || fail "only $refs of the $hits blocks from the buffers answered without a copy"
[ "$peak" -le $((8 << 20)) ] && [ "$peak" -gt 0 ] || fail "one stream's buffers took $peak B"
[ "$now" = 0 ] || fail "$now B of buffers kept after the file was closed"
[ $((after - before)) -le $((8 << 20)) ] || fail "$((after - before)) B of the image cached by a stream"

# 2. In one open: read ahead, then overwrite, truncate + extend and punch
# inside the hinted window; each read after (the mount's own page cache of
# the file dropped, so it comes from the daemon) returns the new bytes.
python3 - "$T/m/f" <<'PY' || fail "stale data after a change inside the read-ahead window"
import os, sys
MiB = 1 << 20
fd = os.open(sys.argv[1], os.O_RDWR)
def fresh(off, n):
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return os.pread(fd, n, off)
def check(what, got, want):
    if got != want:
        sys.exit("%s: read %r..., want %r..." % (what, got[:16], want[:16]))
for off in range(0, 8 * MiB, MiB):          # a sequential reader: hints go out
    fresh(off, MiB)
new = os.urandom(2 * MiB)
os.pwrite(fd, new, 16 * MiB)                # cached in the daemon, then written back
check("overwrite, cached", fresh(16 * MiB, 2 * MiB), new)
os.fsync(fd)                                # the blocks moved (copy-on-write)
check("overwrite, written back", fresh(16 * MiB, 2 * MiB), new)
# Rewrite after free: the buffers hold 40-48 MiB's blocks; moved twice
# (the second move may reuse the blocks the first freed, a commit apart).
for off in range(32 * MiB, 40 * MiB, MiB):
    fresh(off, MiB)
for i in range(2):
    new = os.urandom(8 * MiB)
    os.pwrite(fd, new, 40 * MiB)
    os.fsync(fd)
for off in range(40 * MiB, 48 * MiB, MiB):
    check("rewritten after a free at %d" % off, fresh(off, MiB), new[off - 40 * MiB:][:MiB])
os.ftruncate(fd, 24 * MiB)
os.ftruncate(fd, 96 * MiB)
os.fsync(fd)
check("truncate and extend", fresh(30 * MiB, MiB), bytes(MiB))
PY
fallocate -p -o $((20 << 20)) -l $((1 << 20)) "$T/m/f" || fail "punch"
python3 - "$T/m/f" <<'PY' || fail "stale data after a punch inside the read-ahead window"
import os, sys
MiB = 1 << 20
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
for off in range(0, 20 * MiB, MiB):
    os.pread(fd, MiB, off)
if os.pread(fd, MiB, 20 * MiB) != bytes(MiB):
    sys.exit("the punched MiB reads back as data")
PY
pony_umount

# 3. Twelve streams at once: the buffers within PONYFS_STREAM_BYTES_MAX.
pony_mount "$T/img"
for i in $(seq 12); do head -c $((24 << 20)) /dev/urandom >"$T/m/p$i"; done
"$PONY" sync "$T/m" || fail "sync"
pony_umount
pony_mount "$T/img"
for i in $(seq 12); do md5sum <"$T/m/p$i" >"$T/p$i.sum"; done
pony_umount
images_uncache "$T/img"
pony_mount "$T/img"
pids=()
for i in $(seq 12); do (md5sum <"$T/m/p$i" >"$T/p$i.got") & pids+=($!); done
wait "${pids[@]}"               # not the daemon
for i in $(seq 12); do cmp -s "$T/p$i.sum" "$T/p$i.got" || fail "p$i read back different in parallel"; done
peak=$(counter stream_bytes_peak) now=$(counter stream_bytes)
echo "# 12 streams: buffers at most $peak B, $now B after"
[ "$peak" -le $((64 << 20)) ] || fail "the streams' buffers took $peak B, over 64 MiB"
[ "$now" = 0 ] || fail "$now B of buffers kept after the files were closed"
pony_umount

# 4. A block corrupted inside the window: an error and a report, never its bytes.
bad_block_fails_stream
pass
