#!/usr/bin/env bash
# layout_lease.sh - layout leases on a real mount over image members
# (issue 21, "Leases and recall"): a ponyfs on a RAID6 of six images. A
# leased layout's data blocks are read straight from the member images
# (layout_lease_check); then the file is overwritten in place, truncated,
# punched or unlinked through the mount: each recalls the lease, and while
# it is held, other files written over the freed space never land on its
# blocks (copy-on-write: the holder still reads the old bytes). Once it is
# returned, or has expired, the same writes do reuse them: the control
# that shows the blocks would have changed. Writes to other files recall
# nothing; `pony fsck -y` cannot repair under a mount (the leases live in
# its daemon); the lease lasts 30 s unless `--layout-lease SECONDS` says,
# and a bad SECONDS is a usage error.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
CHECK=${1:?usage: layout_lease.sh LAYOUT_LEASE_CHECK}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-lease

M=$T/m
volume_images raid6 6 32M

# lease_state NAME: the state of the lease got for NAME ("held", "recalled", "expired").
lease_state() { "$CHECK" status "$M/anchor" "$T/$1.st" || fail "lease status of $1"; }
# leased NAME: NAME, 1 MiB of fresh bytes, synced, and a lease on its layout;
# LEASE_MS is what the daemon said the lease lasts.
leased() {
	head -c 1048576 /dev/urandom >"$M/$1" && "$PONY" sync "$M" || fail "write $1"
	"$CHECK" get "$M/$1" "$T/$1.st" >"$T/get.out" 2>&1 || fail "layout of $1: $(cat "$T/get.out")"
	LEASE_MS=$(awk '{print $4}' "$T/get.out")
	[ "$(lease_state "$1")" = held ] || fail "$1: a fresh lease is not held"
}
# churn: 3 MiB of another file written and synced, then removed: the
# allocator takes the lowest free blocks, which a freed file's are.
churn() {
	head -c 3M /dev/urandom >"$M/churn" && "$PONY" sync "$M" && rm "$M/churn" &&
		"$PONY" sync "$M" || fail "churn"
}
# held NAME: the blocks NAME's lease named hold the bytes they held when it was got.
held() { "$CHECK" same "$M/anchor" "$T/$1.st" >"$T/same.out" 2>&1; }

# The default lease: 30 s.
pony_mount --commit 50 "${imgs[@]}"
echo anchor >"$M/anchor"
leased f
[ "$LEASE_MS" -gt 25000 ] && [ "$LEASE_MS" -le 30000 ] || fail "default lease of $LEASE_MS ms, not 30 s"
[ "$("$CHECK" return "$M/anchor" "$T/f.st")" = held ] || fail "return of a fresh lease"
rm "$M/f"
pony_umount

# Long leases (a loaded machine takes its time), so none expires before its return.
pony_mount --commit 50 --layout-lease 600 "${imgs[@]}"
leased f
# Writes to other files recall nothing and never land on its blocks.
churn
[ "$(lease_state f)" = held ] || fail "another file's writes recalled the lease"
held f || fail "another file's writes changed a leased block: $(cat "$T/same.out")"
[ "$("$CHECK" return "$M/anchor" "$T/f.st")" = held ] || fail "return of an untouched lease"
rm "$M/f"

# Each change through the mount that frees the file's blocks recalls the
# lease; the holder's blocks keep their bytes until it returns the lease.
for how in overwrite truncate punch unlink; do
	leased f
	case $how in
	overwrite) dd if=/dev/urandom of="$M/f" bs=64K count=16 conv=notrunc status=none ;;
	truncate) truncate -s 4096 "$M/f" ;;
	punch) fallocate -p -o 65536 -l 524288 "$M/f" ;;
	unlink) rm "$M/f" ;;
	esac || fail "$how"
	"$PONY" sync "$M" || fail "sync after $how"
	[ "$(lease_state f)" = recalled ] || fail "$how did not recall the lease"
	churn
	held f || fail "$how: a block of a held lease was reused: $(cat "$T/same.out")"
	if [ "$how" = overwrite ]; then
		# No repair reaches the blocks under a mount: fsck refuses the images.
		expect_failure "$PONY" fsck -y "${imgs[@]}"
		"$PONY" fsck -y "${imgs[@]}" 2>&1 | grep -q "in use" || fail "fsck under the mount: not 'in use'"
		held f || fail "fsck under the mount changed a held block: $(cat "$T/same.out")"
	fi
	[ "$("$CHECK" return "$M/anchor" "$T/f.st")" = recalled ] || fail "$how: return"
	[ "$(lease_state f)" = expired ] || fail "$how: a returned lease is not gone"
	churn
	held f && fail "$how: returned, yet its blocks were not reused: nothing was tested"
	rm -f "$M/f"
done
pony_umount

# --layout-lease 2: the lease says so, and once expired its blocks go back to use.
pony_mount --commit 50 --layout-lease 2 "${imgs[@]}"
leased f
[ "$LEASE_MS" -gt 1000 ] && [ "$LEASE_MS" -le 2000 ] || fail "--layout-lease 2: a lease of $LEASE_MS ms"
dd if=/dev/urandom of="$M/f" bs=64K count=16 conv=notrunc status=none && "$PONY" sync "$M" ||
	fail "overwrite"
# (Recalled meanwhile, unless the overwrite took 2 s: a sanitizer build's may.)
sleep 2.2
[ "$(lease_state f)" = expired ] || fail "a 2 s lease still $(lease_state f) after 2.2 s"
churn
held f && fail "expired, yet its blocks were not reused"
pony_umount

expect_usage_error "$PONY" mount --layout-lease 0 "${imgs[@]}" "$M"
expect_usage_error "$PONY" mount --layout-lease soon "${imgs[@]}" "$M"
"$PONY" fsck "${imgs[@]}" >"$T/fsck.out" 2>&1 || fail "fsck after the leases: $(cat "$T/fsck.out")"
pass
