#!/usr/bin/env bash
# ponyfs_read_hints_worker.sh - a small READ that lands near the file's
# last one (within 16 MiB: readahead.c counts it a stream's, too small
# for a stream's buffers) has the next 32 MiB of the image hinted into the
# host's cache, and those hints go out from the hints' worker, not from
# the thread that serves the READ: fio's 4 KiB random reads waited ~0.8 ms
# per 2 MiB hinted before they were answered (BENCHMARKS.md, session 40).
# Under strace of the daemon, over 4 KiB reads of a cold 64 MiB file a few
# MiB apart, no thread that reads the image for a READ (pread64) makes a
# POSIX_FADV_WILLNEED, some other thread does (before: the READ's own),
# the daemon counts the rounds its worker sent (ra_rounds), every byte
# reads back exact, and the hints still land: the image ahead of the reads
# is in the host's cache after them (tried up to three times: this host
# drops its whole page cache every 10-20 s).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-read-hints-worker
readahead_require
require_cmd strace
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
head -c $((64 << 20)) /dev/urandom >"$T/data"
counter() { "$PONY" stat --counters "$T/m" | sed -n "s/^$1 //p"; }

pony_mount "$T/img"
dd if="$T/data" of="$T/m/f" bs=1M conv=fsync status=none || fail "write f"
pony_umount

# 4 KiB at 0, 3, 6, ... 30 MiB, as fio reads (POSIX_FADV_RANDOM: the
# mount's readahead does not grow them), each checked against the data.
small_reads() {
	python3 - "$T/m/f" "$T/data" <<'PY'
import os, sys
MiB = 1 << 20
fd, want = os.open(sys.argv[1], os.O_RDONLY), open(sys.argv[2], "rb").read()
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for off in range(0, 31 * MiB, 3 * MiB):
    if os.pread(fd, 4096, off) != want[off:off + 4096]:
        sys.exit("4 KiB at %d MiB read back different" % (off // MiB))
PY
}

for try in 1 2 3; do
	images_uncache "$T/img"
	pony_mount "$T/img"
	before=$(images_cached "$T/img")
	strace -f -qq -e trace=fadvise64,pread64 -o "$T/trace" -p "$PONY_PID" &
	tracer=$!
	sleep 1                         # strace attaches to every thread
	small_reads || fail "the small reads"
	sleep 0.5                       # the worker's hints land
	kill -INT "$tracer"
	wait "$tracer"
	after=$(images_cached "$T/img") rounds=$(counter ra_rounds)
	pony_umount
	# Threads (strace -f: the first field) that read the image and that hinted.
	readers=$(awk '/pread64\(/ { print $1 }' "$T/trace" | sort -u)
	hinters=$(awk '/POSIX_FADV_WILLNEED/ { print $1 }' "$T/trace" | sort -u)
	both=$(comm -12 <(echo "$readers") <(echo "$hinters"))
	echo "# try $try: image readers [$(echo $readers)], WILLNEED from [$(echo $hinters)]," \
		"$rounds rounds from the worker; image cached $before -> $after B"
	[ -n "$readers" ] || fail "no pread64 of the image seen: $(head -5 "$T/trace")"
	[ -n "$hinters" ] || fail "no WILLNEED hint seen: $(head -5 "$T/trace")"
	[ -z "$both" ] || fail "thread(s) $(echo $both) read the image for a READ and hinted too"
	[ "${rounds:-0}" -ge 1 ] || fail "the daemon counts no round of hints from its worker"
	[ $((after - before)) -ge $((24 << 20)) ] && break
	[ "$try" = 3 ] && fail "only $((after - before)) B of the image cached after the hints"
done
pass
