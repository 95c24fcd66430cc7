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

# -- ponyfs: replace a file by rename without fsync, cut the power, remount --
echo
echo "== ponyfs: a RAID6 of four images, a file replaced by rename with no fsync, power cut"
for i in 0 1 2 3; do truncate -s 96M "$work/pfs$i.img"; done
"$PONY" mkfs --data raid6 --metadata mirror --assume-clean "$work"/pfs{0,1,2,3}.img
mkdir -p "$work/pfs-mnt"
"$PONY" mount --commit 200 "$work"/pfs{0,1,2,3}.img "$work/pfs-mnt"
seq 1 20000 > "$work/pfs-mnt/config"
"$PONY" fs syncfs "$work/pfs-mnt"
seq 1 30000 | sed 's/^/new /' > "$work/pfs-mnt/config.tmp"
mv "$work/pfs-mnt/config.tmp" "$work/pfs-mnt/config"    # no fsync
sleep 1                                                     # the commit timer runs
# The power cut: copy the images while the daemon still runs, as a crash leaves them.
for i in 0 1 2 3; do cp "$work/pfs$i.img" "$work/cut$i.img"; done
fusermount3 -u "$work/pfs-mnt"
"$PONY" fsck "$work"/cut{0,1,2,3}.img
"$PONY" mount --foreground "$work"/cut{0,1,2,3}.img "$work/pfs-mnt" & pfs_pid=$!
for _ in $(seq 100); do mountpoint -q "$work/pfs-mnt" && break; sleep 0.05; done
echo "   after the power cut config has $(wc -l < "$work/pfs-mnt/config") lines," \
     "first: '$(head -1 "$work/pfs-mnt/config")', last: '$(tail -1 "$work/pfs-mnt/config")'"
fusermount3 -u "$work/pfs-mnt"; wait "$pfs_pid"
