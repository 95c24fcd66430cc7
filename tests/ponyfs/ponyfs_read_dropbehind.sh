#!/usr/bin/env bash
# ponyfs_read_dropbehind.sh - a file read sequentially through the mount
# leaves none of its blocks in the host's cache of the image behind the
# reader (src/ponyfs/readahead.c drops them, BDEV_DONTNEED, once read and
# checked): of 32 sampled blocks of a streamed 32 MiB file, at most the
# first READ's (not yet known to be a stream) stay cached; without the drop
# all did. A file read in scattered pieces is no stream and keeps its
# blocks cached (every sampled one), which also shows the host did not drop
# its whole cache meanwhile (benchmarks do: then the probe is tried again,
# up to five times). What the drop must never do: bytes read after an overwrite behind
# the reader are the new ones, and a block corrupted behind and inside the
# window still fails the read (EBADMSG, one image) and is reported, the
# bytes before it exact.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-read-dropbehind
readahead_require
truncate -s 512M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
MIB=$((1 << 20))
head -c $((32 * MIB)) /dev/urandom >"$T/data"
head -c $((64 * MIB)) /dev/urandom >"$T/pieces"
PIECES="0 40 20 60"                     # MiB; never within 16 MiB of the last end

pony_mount "$T/img"
cp "$T/data" "$T/m/f" && cp "$T/pieces" "$T/m/g" && "$PONY" sync "$T/m" || fail "write f and g"
pony_umount

# where FILE IMG MIB...: the image offset of the first block of each MiB
# of FILE (its bytes are random: each is found once), one a line.
where() {
	python3 - "$@" <<'PY'
import mmap, sys
data, img = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb")
m = mmap.mmap(img.fileno(), 0, prot=mmap.PROT_READ)
for mib in sys.argv[3:]:
    at = m.find(data[int(mib) << 20:(int(mib) << 20) + 4096])
    if at < 0 or at % 4096:
        sys.exit("block at %s MiB of %s not found on the image" % (mib, sys.argv[1]))
    print(at)
PY
}
# cached IMG OFFSET...: how many of the image's 4 KiB blocks at OFFSET...
# the host's page cache holds (mincore(2) of a mapping: reads nothing).
cached() {
	python3 - "$@" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd, n = os.open(sys.argv[1], os.O_RDONLY), 0
for off in map(int, sys.argv[2:]):
    p = libc.mmap(None, 4096, 1, 1, fd, off)         # PROT_READ, MAP_SHARED
    vec = (ctypes.c_ubyte * 1)()
    if p in (None, ctypes.c_void_p(-1).value) or libc.mincore(ctypes.c_void_p(p), 4096, vec):
        sys.exit("mincore: %s" % os.strerror(ctypes.get_errno()))
    n += vec[0] & 1
    libc.munmap(ctypes.c_void_p(p), 4096)
print(n)
PY
}
# read_pieces FILE MIB...: 512 KiB of FILE at each MIB, with the kernel's
# readahead off (one READ each), in that order.
read_pieces() {
	python3 - "$@" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for mib in sys.argv[2:]:
    os.pread(fd, 512 << 10, int(mib) << 20)
PY
}

# 1. Streamed: its blocks dropped behind the reader. In pieces: kept.
f_at=$(where "$T/data" "$T/img" $(seq 0 31)) || fail "f's blocks not found"
g_at=$(where "$T/pieces" "$T/img" $PIECES) || fail "g's blocks not found"
for try in 1 2 3 4 5; do
	images_uncache "$T/img"
	pony_mount "$T/img"
	read_pieces "$T/m/g" $PIECES || fail "read g's pieces"
	cmp "$T/data" "$T/m/f" || fail "f reads back different"
	f_cached=$(cached "$T/img" $f_at) g_cached=$(cached "$T/img" $g_at) || fail "mincore"
	pony_umount
	echo "# try $try: $f_cached of f's 32 sampled blocks cached after a stream, $g_cached of g's 4 after pieces"
	[ "$g_cached" = 4 ] && break
	[ $try = 5 ] && fail "g's pieces were not kept cached (not a stream): $g_cached of 4"
done
[ "$f_cached" -le 2 ] || fail "$f_cached of 32 sampled blocks of a streamed file left in the image's cache"

# 2. Overwritten behind the reader (blocks dropped): read again, the new bytes.
pony_mount "$T/img"
python3 - "$T/m/f" "$T/data" <<'PY' || fail "stale data after an overwrite behind a stream"
import os, sys
MiB = 1 << 20
fd, want = os.open(sys.argv[1], os.O_RDWR), bytearray(open(sys.argv[2], "rb").read())
def stream():
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)     # the mount's own cache
    return b"".join(os.pread(fd, MiB, off) for off in range(0, len(want), MiB))
if stream() != want:
    sys.exit("first stream differs")
new = os.urandom(3 * MiB)
os.pwrite(fd, new, 8 * MiB)
os.fsync(fd)                                                # written back: blocks moved
want[8 * MiB:11 * MiB] = new
if stream() != want:
    sys.exit("the stream after the overwrite differs")
open(sys.argv[2], "wb").write(want)                         # what part 3 compares
PY
pony_umount

# 3. A block corrupted at 12 MiB, inside a stream: an error and a report.
bad_block_fails_stream
pass
