#!/usr/bin/env bash
# ponyfs_mount.sh - ponyfs through the pony binary and a real FUSE mount:
# mkfs, mount, ordinary tools (cp, mv over a file, ln, ln -s, mkdir, rm,
# truncate, dd past 4 GiB, chmod, touch -d), unmount, fsck clean, remount and
# find everything as it was; the same on a RAID6 pony volume of four images;
# and the CLI's errors for bad input.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-it

# Bad input first: these need no FUSE.
expect_usage_error "$PONY" mkfs
expect_usage_error "$PONY" mkfs --data raid99 "$T/x"
# fsck's usage error is fsck(8)'s 16, not 2 (2 means "fixed, reboot" to fsck).
"$PONY" fsck >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 16 ] && [ -s "$T/err" ] && [ ! -s "$T/out" ] || fail "fsck without an image: exit $rc"
expect_failure "$PONY" mkfs "$T/missing.img"
truncate -s 64M "$T/zero.img"
expect_failure "$PONY" fsck "$T/zero.img"
"$PONY" mkfs --help | grep -q Usage || fail "mkfs --help"
"$PONY" mount --help | grep -q Usage || fail "mount --help"
"$PONY" fsck --help | grep -q Usage || fail "fsck --help"

# A single image: mkfs, fsck clean.
truncate -s 256M "$T/one.img"
"$PONY" mkfs --label test "$T/one.img" || fail "mkfs"
"$PONY" fsck "$T/one.img" >/dev/null || fail "fsck of a new filesystem"
printf XXXXXXXX | dd of="$T/one.img" bs=1 seek=16 conv=notrunc status=none   # 8 bytes: one may match
expect_failure "$PONY" mount -f "$T/one.img" "$T/m"    # corrupt superblock: refused
"$PONY" mkfs "$T/one.img" || fail "mkfs again"

require_fuse
require_cmd fusermount3

tree_of() {
	(cd "$1" && find . -printf '%p %y %m %s %l %T@\n' | sort &&
	 find . -type f ! -name sparse -exec md5sum {} + | sort -k2 &&
	 dd if=sparse bs=4096 skip=$((5 * 262144 - 1)) status=none | md5sum)
}

exercise() {
	local m=$T/m
	head -c 3000000 /dev/urandom > "$T/src" || fail "urandom"
	cp "$T/src" "$m/big" || fail "cp"
	mkdir -p "$m/dir/sub" || fail "mkdir"
	echo old > "$m/dir/config" || fail "write"
	echo new > "$m/dir/config.tmp" && mv "$m/dir/config.tmp" "$m/dir/config" || fail "mv over"
	[ "$(cat "$m/dir/config")" = new ] || fail "rename over: $(cat "$m/dir/config")"
	ln "$m/big" "$m/dir/hard" || fail "ln"
	[ "$(stat -c %h "$m/big")" = 2 ] || fail "link count"
	ln -s ../big "$m/dir/sym" || fail "ln -s"
	cmp "$m/dir/sym" "$T/src" || fail "reading through the symlink"
	dd if=/dev/urandom of="$m/sparse" bs=4096 count=2 seek=$((5 * 262144)) status=none || fail "dd past 4 GiB"
	[ "$(stat -c %s "$m/sparse")" = $((5 * 1073741824 + 8192)) ] || fail "sparse size"
	truncate -s 1000 "$m/dir/hard" || fail "truncate"
	[ "$(stat -c %s "$m/big")" = 1000 ] || fail "truncate through a hard link"
	cp "$T/src" "$m/big2" && rm "$m/big2" || fail "rm"
	chmod 0600 "$m/dir/config" && touch -d '2001-02-03 04:05:06.123456789' "$m/dir/config" || fail "chmod/touch"
	printf 'a\n' >> "$m/log" && printf 'b\n' >> "$m/log" || fail "append"
	[ "$(cat "$m/log")" = "$(printf 'a\nb')" ] || fail "O_APPEND"
	df -B4096 "$m" | tail -1 | awk '{ exit !($2 > 0 && $4 > 0 && $4 <= $2) }' || fail "statfs"
	"$PONY" fs syncfs "$m" || fail "pony fs syncfs"
	rmdir "$m/dir" 2>/dev/null && fail "rmdir of a non-empty directory"
	tree_of "$m" > "$T/before"
}

pony_mount "$T/one.img"
exercise
pony_umount
"$PONY" fsck "$T/one.img" > "$T/fsck.out" || fail "fsck after use: $(cat "$T/fsck.out")"
pony_mount "$T/one.img"
tree_of "$T/m" > "$T/after"
diff "$T/before" "$T/after" || fail "the tree changed across a remount"
pony_umount

# A pony volume: four images, data RAID6, metadata mirrored on all four.
for i in 0 1 2 3; do truncate -s 96M "$T/r$i.img"; done
"$PONY" mkfs --data raid6 --metadata mirror --assume-clean "$T"/r{0,1,2,3}.img || fail "mkfs raid6"
pony_mount "$T"/r{3,1,0,2}.img                     # any order
exercise
pony_umount
"$PONY" fsck "$T"/r{0,1,2,3}.img > "$T/fsck.out" || fail "fsck of the volume: $(cat "$T/fsck.out")"
pony_mount "$T"/r{0,1,2,3}.img
tree_of "$T/m" > "$T/after"
diff "$T/before" "$T/after" || fail "the volume's tree changed across a remount"
pony_umount
pass
