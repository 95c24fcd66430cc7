# tests/ponyfs/mount_lib.sh - what the ponyfs tests that mount through FUSE
# share: a scratch directory $T (/tmp/pony-NAME.XXXXXX) with a mount point
# $T/m, unmounted and removed on exit, and pony_mount/pony_umount around the
# pony binary (the daemon's stderr goes to $T/pony.log), and a mount beside
# an ext4 oracle directory (ext4_oracle_and_mount). Source it after
# tests/lib.sh: `. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" NAME`.

T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
PONY_PID=
ponyfs_cleanup() {
	mountpoint -q "$T/m" 2>/dev/null && { fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"; }
	[ -n "$PONY_PID" ] && { kill "$PONY_PID" 2>/dev/null; wait "$PONY_PID" 2>/dev/null; }
	rm -rf "$T"
}
trap ponyfs_cleanup EXIT
mkdir -p "$T/m"

# pony_mount [OPTION...] IMG...: mounts at $T/m in the foreground, in the background.
pony_mount() { fuse_daemon_start "$T/m" "$T/pony.log" "pony mount $*" "$PONY" mount --foreground "$@" "$T/m"; }
pony_umount() { fuse_daemon_stop "$T/m" "$T/pony.log"; }
# requests_count KEY: the mount's `pony fs requests` figure KEY (0 when it
# has none); requests_all: all of them on one line, for a failure message.
requests_count() { "$PONY" fs requests "$T/m" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'; }
requests_all() { "$PONY" fs requests "$T/m" | tr '\n' ' '; }

# volume_images LEVEL N SIZE [MKFS_OPTION...]: N fresh image files
# $T/m0.img ... of SIZE (truncate's), made one ponyfs with a LEVEL data
# region (pony mkfs --data, with the options); their paths in the array imgs.
volume_images() {
	local i
	rm -f "$T"/m?.img
	imgs=()
	for ((i = 0; i < $2; i++)); do
		truncate -s "$3" "$T/m$i.img"
		imgs+=("$T/m$i.img")
	done
	"$PONY" mkfs --data "$1" "${@:4}" "${imgs[@]}" >/dev/null || fail "mkfs --data $1 of $2 images"
}

# readahead_require: what the read-ahead tests need: root, FUSE, fincore
# to see the host's cache, and O_DIRECT under $T (the images are dropped
# from the cache with it).
readahead_require() {
	require_root
	require_fuse
	require_cmd python3 fusermount3 fincore
	dd if=/dev/zero of="$T/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null ||
		skip "$T is on a file system without O_DIRECT"
}

# corrupt_file_block DATA IMG: flips 64 bytes inside file block 3072 (the
# 4 KiB at 12 MiB of DATA, a file written whole) where IMG holds it; fails
# when IMG holds no copy of that block.
corrupt_file_block() {
	python3 - "$1" "$2" <<'PY'
import mmap, sys
want = open(sys.argv[1], "rb").read()[12 << 20:(12 << 20) + 4096]
with open(sys.argv[2], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    at = m.find(want)
    if at < 0:
        sys.exit(1)
    m[at + 100:at + 164] = bytes(b ^ 0xff for b in m[at + 100:at + 164])
    m.flush()
PY
}

# bad_block_fails_stream: $T/data's file block 3072 (at 12 MiB) corrupted
# on $T/img (one image: no redundancy), which is dropped from the host's
# cache and mounted; a sequential read of $T/m/f must fail with an I/O
# error, the 12 MiB before the bad block exact, and the daemon must report
# the block. Leaves it unmounted.
bad_block_fails_stream() {
	corrupt_file_block "$T/data" "$T/img" || fail "no block of the file found on the image"
	images_uncache "$T/img"
	: >"$T/pony.log"
	pony_mount "$T/img"
	dd if="$T/m/f" of="$T/got" bs=1M status=none 2>"$T/dd.err" && fail "a corrupt block read as data"
	grep -q "Input/output error\|Bad message" "$T/dd.err" || fail "unclear error: $(cat "$T/dd.err")"
	cmp -n $((12 << 20)) "$T/data" "$T/got" || fail "the 12 MiB before the bad block differ"
	pony_umount
	grep -q "no redundancy" "$T/pony.log" || fail "the bad block was not reported: $(cat "$T/pony.log")"
}

# images_cached IMG...: bytes of the images in the host's page cache;
# images_uncache IMG...: dropped from it.
images_cached() {
	local sum=0 b img
	for img in "$@"; do
		b=$(fincore --bytes --noheadings --output RES "$img")
		sum=$((sum + b))
	done
	echo "$sum"
}
images_uncache() {
	local img
	for img in "$@"; do dd if="$img" iflag=nocache count=0 status=none; done
}

# readahead_probe MB MIN IMG...: $T/data written to $T/m/f on the ponyfs of
# IMG..., the images dropped from the host's cache and mounted again, the
# file's first MB MiB read: the images' cached bytes before that read in
# ra_before, half a second after it (hinted reads land) in ra_after.
# Tried up to three times until ra_after - ra_before reaches MIN: this
# host drops its whole page cache every 10-20 s, which can only make the
# count smaller (a drop inside a probe fails it; none makes one pass).
# The file is written once: a retry that rewrote it after O_TRUNC would
# need room for both versions until the new one commits (rule 2 of
# docs/ponyfs-format.md), more than a small volume has. Leaves it mounted.
readahead_probe() {
	local mb=$1 min=$2 try
	shift 2
	pony_mount "$@"
	dd if="$T/data" of="$T/m/f" bs=1M conv=fsync status=none || fail "write through the mount"
	pony_umount
	for try in 1 2 3; do
		images_uncache "$@"
		pony_mount "$@"
		ra_before=$(images_cached "$@")
		dd if="$T/m/f" of=/dev/null bs=1M count="$mb" status=none || fail "read of the first $mb MiB"
		sleep 0.5
		ra_after=$(images_cached "$@")
		[ $((ra_after - ra_before)) -ge "$min" ] || [ "$try" = 3 ] && return 0
		echo "# probe $try: $ra_before -> $ra_after B cached, short of $min: again"
		pony_umount
	done
}

# ext4_oracle_and_mount: $T/ref, a directory of the root filesystem (with
# ACLs) where a test repeats its steps as the oracle, and a fresh 256 MiB
# ponyfs mounted at $T/m; both reachable by other users (mode 755).
ext4_oracle_and_mount() {
	mkdir -p "$T/ref"
	chmod 755 "$T"
	setfacl -m u:nobody:r "$T/ref" 2>/dev/null || skip "the root filesystem has no ACLs"
	setfacl -b "$T/ref"
	truncate -s 256M "$T/img"
	"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
	pony_mount "$T/img"
	chmod 755 "$T/m"
}

# raid6_mount: six 64 MiB images $T/m0.img ... $T/m5.img (in imgs), a
# ponyfs with its data on RAID6 over them, mounted at $T/m with a long
# commit interval: cached data stays dirty until asked to sync.
raid6_mount() {
	volume_images raid6 6 64M
	pony_mount --commit 3600000 "${imgs[@]}"
}
