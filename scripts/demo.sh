#!/usr/bin/env bash
# demo.sh - pony's main job, shown on image files it creates under a
# temporary directory. Each component adds its act here as it lands.
#
#   scripts/demo.sh [--bench]     (make demo [DEMO_ARGS=--bench])
#
# --bench adds the acall and POSIX AIO benchmarks (a minute more, and
# figures that mean little on a loaded machine). The demo changes nothing
# outside its directory without asking: FUSE over io_uring needs the fuse
# module's enable_uring, a setting of the whole machine, so on a terminal
# it asks first, and otherwise leaves it alone (PONY_DEMO_URING=1 allows it).
set -euo pipefail
cd "$(dirname "$0")/.."
PONY=$PWD/build/pony
bench=false
for arg in "$@"; do
	case $arg in
	--bench) bench=true ;;
	-h|--help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown argument '$arg' (--bench, --help)" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d /tmp/pony-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== pony $("$PONY" --version | cut -d' ' -f2): the 2009 storage stack, in user space"
echo "   working in $work"

echo
echo "== acall: every blocking call, asynchronously (io_uring where it is fast, pony's workers where not)"
"$PONY" acall routes | awk 'NR <= 4 || /^(read|statx|getdents64|call) /'
if $bench; then
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
else
	echo "   (benchmarks: make demo DEMO_ARGS=--bench)"
fi

# ---- devdb: find devices by label from an index, never a scan ----------
echo
echo "== devdb: the device discovery database"
dd_dir=$work/devdb/images
mkdir -p "$dd_dir"
export PONY_DEVDB=$work/devdb/devdb.sqlite
for i in 1 2 3; do
	truncate -s 32M "$dd_dir/disk$i.img"
	mkfs.ext4 -q -L "data$i" "$dd_dir/disk$i.img"
done
truncate -s 16M "$dd_dir/boot.img" && mkfs.vfat -n BOOT "$dd_dir/boot.img" >/dev/null
truncate -s 16M "$dd_dir/swap.img" && mkswap -L swap0 "$dd_dir/swap.img" >/dev/null 2>&1
echo "-- pony dev probe (blkid -p's fields and values):"
"$PONY" dev probe "$dd_dir/disk1.img"
echo "-- pony dev scan $dd_dir:"
"$PONY" dev scan "$dd_dir"
"$PONY" dev list
echo "-- pony dev find LABEL=data2 (an index hit):"
"$PONY" dev find LABEL=data2
echo "-- the real findfs, with libpony-blkid.so preloaded, answers from the index too:"
LD_PRELOAD=$PWD/build/lib/libpony-blkid.so findfs LABEL=BOOT
echo "-- pony dev watch, then relabel disk3 with the formatting tool (mkfs.ext4 -L fresh):"
"$PONY" dev watch --timeout 20 "$dd_dir" 2>"$work/devdb/watch.log" &
dd_watch=$!
for _ in $(seq 50); do grep -q watching "$work/devdb/watch.log" && break; sleep 0.1; done
mkfs.ext4 -q -F -L fresh "$dd_dir/disk3.img"
t0=$(date +%s%N) tries=1
until out=$("$PONY" dev find LABEL=fresh 2>/dev/null); do
	[ $tries -lt 250 ] || { echo "   LABEL=fresh not found: the watch did not see the relabel" >&2; exit 1; }
	tries=$((tries + 1)); sleep 0.02
done
echo "   found LABEL=fresh at $out $(( ($(date +%s%N) - t0) / 1000000 )) ms after mkfs returned (find #$tries),"
echo "   without a rescan: watch saw inotify IN_CLOSE_WRITE on the image and re-probed it alone"
kill "$dd_watch" 2>/dev/null || true
wait "$dd_watch" 2>/dev/null || true
"$PONY" dev find LABEL=data3 || echo "   LABEL=data3 is gone (exit $?), as it should be"
unset PONY_DEVDB

# --- volume: a RAID6 of image files loses two members and carries on ---
echo
echo "== volume: RAID6 over six image files, md's layout"
vd=$work/volume
mkdir -p "$vd"
for i in 0 1 2 3 4 5; do truncate -s 32M "$vd/d$i.img"; done
"$PONY" vol create -l raid6 -c 64K -N demo --assume-clean "$vd"/d*.img
head -c 20000000 /dev/urandom > "$vd/data"
echo "-- write 20 MB"
"$PONY" vol write -f "$vd/data" "$vd"/d*.img
echo "-- fail members 1 and 4"
"$PONY" vol fail -m 1 "$vd"/d*.img
"$PONY" vol fail -m 4 "$vd"/d*.img 2>/dev/null
{ "$PONY" vol status "$vd"/d*.img 2>/dev/null || true; } | grep -E '^state|^MEMBER|^[0-9]'   # exit 1: degraded
echo "-- read back with two members gone"
"$PONY" vol read -L 20000000 -f "$vd/back" "$vd"/d*.img 2>/dev/null
cmp "$vd/data" "$vd/back" && echo "   intact: $(sha256sum < "$vd/back" | cut -c1-16)"
echo "-- rebuild onto two new images"
truncate -s 32M "$vd/n1.img" "$vd/n4.img"
"$PONY" vol add -d "$vd/n1.img" "$vd"/d*.img 2>/dev/null
set -- "$vd/d0.img" "$vd/n1.img" "$vd/d2.img" "$vd/d3.img" "$vd/d5.img"
"$PONY" vol add -d "$vd/n4.img" "$@" 2>/dev/null
set -- "$vd/d0.img" "$vd/n1.img" "$vd/d2.img" "$vd/d3.img" "$vd/n4.img" "$vd/d5.img"
echo "-- scrub"
"$PONY" vol scrub "$@"
"$PONY" vol read -L 20000000 -f "$vd/back2" "$vd/n1.img" "$vd/n4.img" "$vd/d2.img" "$vd/d3.img"
cmp "$vd/data" "$vd/back2" && echo "   the rebuilt members alone (with two others) hold the data"
echo "-- member 5 leaves; 1 MB is written without it; it comes back (mdadm --re-add's habit)"
head -c 1000000 /dev/urandom > "$vd/more"
set -- "$vd/d0.img" "$vd/n1.img" "$vd/d2.img" "$vd/d3.img" "$vd/n4.img"
"$PONY" vol write --degraded -O 0 -f "$vd/more" "$@" 2>/dev/null
"$PONY" vol re-add "$@" "$vd/d5.img"
echo "   (the volume's write-intent bitmap, 64 MiB a bit, said what it missed: not a full rebuild)"
"$PONY" vol read -L 1000000 -f "$vd/back3" "$vd/d2.img" "$vd/d3.img" "$vd/n4.img" "$vd/d5.img" 2>/dev/null
cmp "$vd/more" "$vd/back3" && echo "   read back with members 0 and 1 gone: the re-added member holds the new bytes"

# -- union: a pony union mount whose upper the kernel's overlayfs reads back --
echo
echo "== union: read-only lower + writable upper, overlayfs's on-disk format"
u=$work/union
mkdir -p "$u"/{lower/etc,lower/docs,upper,work,pony,kernel}
echo "hostname=pony" > "$u/lower/etc/config"
echo "old notes" > "$u/lower/docs/notes"
echo "delete me" > "$u/lower/docs/tmp"
union_demo_cleanup() {
	for m in "$u/pony" "$u/kernel"; do
		mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	rm -rf "$work"
}
trap union_demo_cleanup EXIT
# uring_option: --io-uring when FUSE over io_uring may be used. Turning on
# enable_uring changes every FUSE mount of the machine: ask, or leave it.
uring_option() {
	local param=/sys/module/fuse/parameters/enable_uring answer=
	[ -r "$param" ] || return 0                     # kernel without it
	if [[ $(cat "$param") == [Y1]* || ${PONY_DEMO_URING:-} == 1 ]]; then
		echo --io-uring
	elif [ -t 0 ] && [ "$(id -u)" -eq 0 ]; then
		read -r -p "   FUSE over io_uring needs the fuse module's enable_uring, a setting for the
   whole machine (every FUSE mount). Turn it on? [y/N] " answer </dev/tty >&2
		[[ $answer == [yY]* ]] && echo --io-uring
	else
		echo "   (fuse's enable_uring is off: left alone, the union serves over /dev/fuse;" \
		     "PONY_DEMO_URING=1 lets the demo turn it on)" >&2
	fi
	return 0
}
# --io-uring: requests over per-CPU io_uring rings (kernel 6.14+), when the
# fuse module's enable_uring is on or the user lets the demo turn it on.
"$PONY" union mount $(uring_option) --lower "$u/lower" --upper "$u/upper" --work "$u/work" "$u/pony"
echo "   mounted: $(mount | grep "$u/pony" | cut -d' ' -f1,3,5)"
echo "hostname=changed" > "$u/pony/etc/config"       # copy-up of a file
rm "$u/pony/docs/tmp"                               # a whiteout
mv "$u/pony/docs" "$u/pony/papers"                  # a redirect
mkdir "$u/pony/new" && echo hello > "$u/pony/new/file"
tree_of() { (cd "$1" && find . -printf '%p %y %m %s\n' | sort && find . -type f -exec md5sum {} + | sort -k2); }
tree_of "$u/pony" > "$u/pony.tree"
echo "   the union through pony:"; (cd "$u/pony" && find . | sort | sed 's/^/     /')
echo "   FUSE transport: $("$PONY" fs requests "$u/pony" | awk '$1 == "uring_requests" { n = $2 }
	END { print n ? "io_uring rings, " n " requests over them" : "/dev/fuse" }')"
"$PONY" union umount "$u/pony"
echo "   upper on disk: $(cd "$u/upper" && find . -mindepth 1 -printf '%p(%y)\n' | sort | tr '\n' ' ')"
if mount -t overlay overlay -o "lowerdir=$u/lower,upperdir=$u/upper,workdir=$u/work,redirect_dir=on" \
	"$u/kernel" 2>/dev/null; then
	tree_of "$u/kernel" > "$u/kernel.tree"
	umount "$u/kernel"
	if cmp -s "$u/pony.tree" "$u/kernel.tree"; then
		echo "   kernel overlayfs on pony's upper shows the same tree (names, types, modes, sizes, data)"
	else
		echo "   kernel overlayfs shows a different tree:"; diff "$u/pony.tree" "$u/kernel.tree"; exit 1
	fi
else
	echo "   (kernel overlayfs not available here: skipped the kernel's view)"
fi
echo "   the lower is untouched: $(cat "$u/lower/etc/config"), docs/tmp still there: $(cat "$u/lower/docs/tmp")"

# --- aio: an unmodified POSIX AIO program (fio's posixaio engine), glibc's
# AIO and then pony's through LD_PRELOAD, 4 KiB random O_DIRECT reads, depth 32.
if $bench && command -v fio >/dev/null && [ -f build/lib/libpony-aio.so ]; then
	echo "== aio: fio posixaio, 4 KiB random O_DIRECT reads at depth 32, glibc then pony"
	fio --name=fill --filename="$work/aio.img" --size=256M --rw=write --bs=1M \
	    --ioengine=psync >/dev/null
	for who in glibc pony; do
		pre=
		[ "$who" = pony ] && pre=$PWD/build/lib/libpony-aio.so
		iops=$(LD_PRELOAD=$pre fio --name=r --filename="$work/aio.img" --rw=randread \
			--bs=4k --ioengine=posixaio --iodepth=32 --direct=1 --runtime=2 \
			--time_based --output-format=json |
			python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))')
		echo "   $who: $iops IOPS"
	done
fi

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

# -- encryption: a directory under a key, in ponyfs's own I/O path ----------
echo
echo "== ponyfs encryption: fscrypt's key model (policy v2) inside the filesystem"
"$PONY" mount --commit 200 "$work"/cut{0,1,2,3}.img "$work/pfs-mnt"
head -c 64 /dev/urandom > "$work/demo.key"
keyid=$("$PONY" crypt add-key "$work/pfs-mnt" < "$work/demo.key")
echo "   key added, identifier $keyid (the one Linux's ext4 would give this key)"
mkdir "$work/pfs-mnt/secret"
"$PONY" crypt set-policy "$work/pfs-mnt/secret" "$keyid"
echo "PONY-DEMO-SECRET: the launch code" > "$work/pfs-mnt/secret/launch-codes.txt"
echo "   with the key: $(ls "$work/pfs-mnt/secret"): $(cat "$work/pfs-mnt/secret/launch-codes.txt")"
"$PONY" crypt remove-key "$work/pfs-mnt" "$keyid" >/dev/null
echo "   key removed: status $("$PONY" crypt status "$work/pfs-mnt" "$keyid" | awk '$1 == "STATUS" { sub(/^STATUS +/, ""); print }'), the directory lists $(ls "$work/pfs-mnt/secret")"
nokey=$(ls "$work/pfs-mnt/secret")
echo "   cat of it: $(cat "$work/pfs-mnt/secret/$nokey" 2>&1 | sed 's/.*: //')"
fusermount3 -u "$work/pfs-mnt"
if grep -qa -e PONY-DEMO-SECRET -e launch-codes "$work"/cut{0,1,2,3}.img; then
	echo "   the secret is on a member image in clear"; exit 1
fi
echo "   grep of the four member images for the secret or its name: nothing (contents, names, the WAL: ciphertext)"
