#!/usr/bin/env bash
# ponyfs_read_window.sh - the kernel's readahead window of a pony mount
# (src/fuse/mount.c raise_readahead): the mount's bdi read_ahead_kb is four
# READs' worth (4 x max_read), so a cold sequential read has several READs
# in flight at once rather than one (`pony fs requests`: pooled_reads_peak,
# the most READs the read helpers held at once, is 3 or more; one READ's
# worth never gets past 2), for plain and encrypted files alike; a window
# is a whole number of READs (no small tail READ: the READ count is the
# file over max_read, rounded up); and both files read back exactly, the
# encrypted one decrypted (its GCM tags checked) with the window open.
# The same over /dev/fuse (--no-io-uring) and over FUSE-over-io_uring
# rings, where the helpers answer into the ring entry a READ came in
# (src/fuse/uring.c ponyfuse_uring_defer): answered on its ring's thread,
# a sequential reader's READs, all on its CPU's one queue, were served one
# at a time (a peak of 0 here).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-read-window
require_root
require_fuse
[ -d /sys/class/bdi ] || skip "no /sys/class/bdi"
M=$T/m
MIB=24
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
head -c 64 /dev/urandom >"$T/key"
head -c $((MIB << 20)) /dev/urandom >"$T/data"


pony_mount "$T/img"
id=$("$PONY" crypt add-key "$M" <"$T/key") || fail "add-key"
mkdir "$M/plain" "$M/gcm" || fail "mkdir"
"$PONY" crypt set-policy --contents aes-256-gcm "$M/gcm" "$id" || fail "set-policy"
cp "$T/data" "$M/plain/f" && cp "$T/data" "$M/gcm/f" || fail "write the files"

# The window, against the READ size the mount was given (max_read= in its
# superblock options; none: the kernel's 1 MiB).
max_read=$(awk -v m="$M" '$5 == m { for (i = 7; $i != "-"; i++) ;
	n = split($(i + 3), o, ","); for (k = 1; k <= n; k++) if (o[k] ~ /^max_read=/) v = substr(o[k], 10) }
	END { print v + 0 }' /proc/self/mountinfo)
[ "$max_read" -gt 0 ] || max_read=$((1 << 20))
ra=$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb") || fail "no bdi for the mount"
echo "# max_read $max_read B, read_ahead_kb $ra"
[ "$ra" -eq $((4 * max_read / 1024)) ] ||
	fail "the mount's read_ahead_kb is $ra, not four READs of $max_read B ($((4 * max_read / 1024)))"
pony_umount

# Each file cold (a fresh mount: nothing of it in the kernel's page cache),
# read sequentially as dd and cp do.
reads=$(((MIB * 1048576 + max_read - 1) / max_read))
for how in dev ring; do
	for d in plain gcm; do
		# --no-io-uring, or fstab's -o no_io_uring: /dev/fuse alone.
		if [ $how$d = devplain ]; then pony_mount --no-io-uring "$T/img"
		elif [ $how = dev ]; then pony_mount -o no_io_uring "$T/img"
		else pony_mount "$T/img"; fi
		[ $how = ring ] || [ "$(requests_count uring_queues)" = 0 ] ||
			fail "$d: a mount without rings serves over them: $(requests_all)"
		[ $d = plain ] || "$PONY" crypt add-key "$M" <"$T/key" >/dev/null || fail "add-key"
		# pony mount serves over the rings by default where the kernel has them.
		[ $how = dev ] || [ ! -e /sys/module/fuse/parameters/enable_uring ] ||
			[ "$(requests_count uring_queues)" -ge 1 ] || fail "a default mount serves over /dev/fuse: $(requests_all)"
		r0=$(requests_count fuse_read)
		dd if="$M/$d/f" of="$T/got" bs=1M status=none || fail "$how $d: the cold read failed"
		r1=$(requests_count fuse_read) peak=$(requests_count pooled_reads_peak)
		echo "# $how $d: $((r1 - r0)) READs, at most $peak at once in the read helpers"
		cmp -s "$T/data" "$T/got" || fail "$how $d: the file reads back different"
		[ "$peak" -ge 3 ] ||
			fail "$how $d: at most $peak READs at once over a cold $MIB MiB read: $(requests_all)"
		[ $((r1 - r0)) -le "$reads" ] ||
			fail "$how $d: $((r1 - r0)) READs for $MIB MiB, not $reads of $max_read B: $(requests_all)"
		pony_umount
	done
done
pass
