#!/usr/bin/env bash
# ponyfs_read_random.sh - small reads at random offsets of a file (fio's
# 4 KiB random reads) take from the image what they ask and no more, and
# keep none of it in the host's cache: they are no sequential reader,
# however near each other they land, so readahead.c hints nothing ahead of
# them and starts no stream, and read.c reads their blocks around the
# host's page cache (the mount's own cache keeps them). 512 cold 4 KiB
# O_DIRECT reads (each one a READ of the daemon) of a 64 MiB file, every
# offset within 16 MiB of the last read's end (RA_SLACK: "near"), grow the
# image's cached bytes by at most 8 MiB (when each near read hinted the
# next 32 MiB, the whole file came into the host's cache), and of 16 of the
# blocks read at most 2 stay in the host's cache (read through it: all
# 16). The bytes read are the file's.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-read-random
readahead_require
truncate -s 512M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
head -c $((64 << 20)) /dev/urandom >"$T/data"
pony_mount "$T/img"
cp "$T/data" "$T/m/f" && "$PONY" sync "$T/m" || fail "write f"
pony_umount

# The blocks to read, one a line: a walk within 16 MiB (4096 blocks) either
# side of the last end, never at it (an exactly contiguous read is a
# sequential reader's); every 32nd the first block of its MiB, sampled.
python3 - >"$T/plan" <<'PY'
import random
rnd, at = random.Random(40), 0
for i in range(512):
    step = rnd.randrange(-4000, 4000)
    at = min(max(at + (2 if step == 1 else step), 0), 16383)
    if i % 32 == 31 and at // 256 * 256 != at:
        at = at // 256 * 256
    print(at)
PY
sampled=$(awk 'NR % 32 == 0 { print $1 / 256 }' "$T/plan")
at=$(image_offsets "$T/data" "$T/img" $sampled) || fail "the sampled blocks not found"
images_uncache "$T/img"
pony_mount "$T/img"
before=$(images_cached "$T/img")
python3 - "$T/m/f" "$T/data" "$T/plan" <<'PY' || fail "random reads returned other bytes than the file's"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], "rb").read()
buf = mmap.mmap(-1, 4096)                   # aligned, for O_DIRECT
for at in map(int, open(sys.argv[3])):
    if os.preadv(fd, [buf], at * 4096) != 4096 or buf[:] != want[at * 4096:(at + 1) * 4096]:
        sys.exit("block %d reads back different" % at)
PY
after=$(images_cached "$T/img")
kept=$(image_blocks_cached "$T/img" $at) || fail "mincore"
pony_umount
echo "# 512 random 4 KiB reads: image cached $before -> $after B; $kept of 16 sampled blocks kept"
[ $((after - before)) -le $((8 << 20)) ] ||
	fail "512 random 4 KiB reads brought $((after - before)) B of the image into the host's cache"
[ "$kept" -le 2 ] || fail "$kept of 16 blocks read at random were kept in the host's cache"
pass
