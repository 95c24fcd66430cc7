#!/usr/bin/env bash
# ponyfs_readahead.sh - a file read sequentially through the mount has the
# image read ahead of it (readahead.c): after the first 4 MiB of a 96 MiB
# file whose blocks were not in the host's cache, 28 MiB or more of the
# image are (without the hints the host's own readahead brought ~14 MiB).
# The hints never serve a byte themselves: in one open file, data read,
# then overwritten, truncated and extended, or punched inside the window
# reads back as the new content; a block corrupted inside the window still
# fails the read (EBADMSG: one image, no redundancy to repair from) and the
# daemon reports it, rather than arriving as data.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-readahead
readahead_require
truncate -s 512M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"

# 1. The hints reach the host's cache ahead of the reader.
head -c $((96 << 20)) /dev/urandom >"$T/data"
readahead_probe 4 $((28 << 20)) "$T/img"
before=$ra_before after=$ra_after
echo "# image cached: $before B after mounting, $after B after reading 4 MiB"
[ $((after - before)) -ge $((28 << 20)) ] ||
	fail "only $((after - before)) B more of the image cached after a 4 MiB sequential read"
cmp "$T/data" "$T/m/f" || fail "the file reads back different"

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

# 3. A block corrupted inside the window: an error and a report, never its bytes.
bad_block_fails_stream
pass
