#!/usr/bin/env bash
# demo.sh - pony's main job, shown on image files it creates under a
# temporary directory. Each component adds its act here as it lands.
set -euo pipefail
cd "$(dirname "$0")/.."
PONY=$PWD/build/pony
work=$(mktemp -d /tmp/pony-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== pony $("$PONY" --version | cut -d' ' -f2): the 2009 storage stack, in user space"
echo "   working in $work"

echo
echo "== acall: every blocking call, asynchronously (io_uring where it is fast, pony's workers where not)"
"$PONY" acall routes | awk 'NR == 1 || /read |statx|getdents64|call/'
"$PONY" acall mkfiles --count 20000 "$work/acall-tree"
"$PONY" acall bench --op statx --depth 64 --seconds 1 "$work/acall-tree"
head -c 64M /dev/urandom >"$work/acall.img"
"$PONY" acall bench --op randread --depth 32 --seconds 1 "$work/acall.img"
"$PONY" acall bench --op mixed --depth 32 --seconds 1 "$work/acall.img"
python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$work/acall.img"
echo "   page cache before a no-cache run: $(fincore --noheadings --output RES "$work/acall.img")"
"$PONY" acall bench --op randread --depth 32 --seconds 1 --nocache "$work/acall.img"
echo "   page cache after it:              $(fincore --noheadings --output RES "$work/acall.img")"
