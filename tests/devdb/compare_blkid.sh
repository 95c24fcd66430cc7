#!/usr/bin/env bash
# compare_blkid.sh - pony's probers against the installed libblkid on images
# made here by the real mkfs tools with random labels and UUIDs: every field
# `blkid -p -o export` prints must come out of `pony dev probe -o export`
# with the same value. Also: a device holding two signatures is reported
# as ambivalent by both (exit 8, the same ID_FS_AMBIVALENT udev line), not
# silently taken for one of them.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_cmd blkid
dir=$(mktemp -d /tmp/pony-cmpblkid.XXXXXX)
trap 'rm -rf "$dir"' EXIT

rand_label() { tr -dc 'a-z0-9' </dev/urandom | head -c "$1"; }
uuid() { cat /proc/sys/kernel/random/uuid; }
made=0

mk() { # mk NAME SIZE CMD... (the image path is appended)
	local name=$1 size=$2; shift 2
	truncate -s "$size" "$dir/$name.img"
	if "$@" "$dir/$name.img" >/dev/null 2>&1; then
		made=$((made + 1))
	else
		rm -f "$dir/$name.img"
		echo "note: $1 unavailable or failed, $name not compared" >&2
	fi
}

mk ext4 64M mkfs.ext4 -q -F -L "e$(rand_label 10)" -U "$(uuid)"
mk ext2 16M mkfs.ext2 -q -F -L "e2$(rand_label 8)" -U "$(uuid)"
mk ext3 32M mkfs.ext3 -q -F -L "e3$(rand_label 8)" -U "$(uuid)"
mk xfs 320M mkfs.xfs -q -f -L "x$(rand_label 10)" -m uuid="$(uuid)"
mk btrfs 128M mkfs.btrfs -q -f -L "b$(rand_label 12)" -U "$(uuid)"
mk vfat 64M mkfs.vfat -n "V$(rand_label 9 | tr a-z A-Z)" -i "$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
mk fat12 1M mkfs.vfat -F 12 -n "T$(rand_label 5 | tr a-z A-Z)"
mk fat32 300M mkfs.vfat -F 32 -n "F$(rand_label 9 | tr a-z A-Z)"
mk exfat 64M mkfs.exfat -L "x$(rand_label 10)"
mk swap 16M mkswap -L "s$(rand_label 10)" -U "$(uuid)"
[ "$made" -ge 6 ] || skip "too few mkfs tools (made $made images)"

fields=0
for img in "$dir"/*.img; do
	# libblkid 2.38 also takes an exFAT boot sector for a DOS table; 2.39 and
	# later (and the conformance data) refuse it, as pony does.
	blkid -p -o export "$img" | grep -v '^DEVNAME=' |
		if [ "${img##*/}" = exfat.img ]; then grep -v '^PT'; else cat; fi >"$dir/want" ||
		fail "blkid found nothing on $img"
	"$PONY" dev probe -o export "$img" | grep -v '^DEVNAME=' >"$dir/got" ||
		fail "pony found nothing on $img"
	while IFS= read -r line; do
		grep -qxF -- "$line" "$dir/got" || fail "$(basename "$img"): blkid says '$line', pony: $(tr '\n' ' ' <"$dir/got")"
		fields=$((fields + 1))
	done <"$dir/want"
done

# Two filesystems at once: btrfs (at 64 KiB) with an ext4 superblock copied in.
if [ -f "$dir/btrfs.img" ] && [ -f "$dir/ext2.img" ]; then
	dd if="$dir/ext2.img" of="$dir/btrfs.img" bs=1024 skip=1 seek=1 count=1 conv=notrunc status=none
	blkid -p "$dir/btrfs.img" >/dev/null 2>&1; want=$?
	"$PONY" dev probe "$dir/btrfs.img" >/dev/null 2>"$dir/err"; got=$?
	[ "$want" -eq 8 ] || fail "blkid did not call btrfs+ext2 ambivalent (exit $want)"
	[ "$got" -eq 8 ] || fail "pony did not call btrfs+ext2 ambivalent (exit $got)"
	grep -q ambivalent "$dir/err" || fail "pony printed no ambivalence message"
	"$PONY" dev probe -o udev "$dir/btrfs.img" | grep -q '^ID_FS_AMBIVALENT=.*btrfs' ||
		fail "no ID_FS_AMBIVALENT in udev output"
	# the index keeps it, with no tags, marked ambivalent
	PONY_DEVDB=$dir/devdb.sqlite "$PONY" dev scan "$dir/btrfs.img" >/dev/null || fail "scan"
	PONY_DEVDB=$dir/devdb.sqlite "$PONY" dev list | grep btrfs.img | grep -q ambivalent ||
		fail "ambivalent device not listed as such"
	PONY_DEVDB=$dir/devdb.sqlite "$PONY" dev find TYPE=btrfs >/dev/null && fail "ambivalent device found by TYPE"
fi
# Ambivalence as libblkid encodes it: the same exit code and the same
# udev output (ID_FS_AMBIVALENT=usage:type[:version] ..., in probe order)
# for each pair of signatures: a stale superblock copied under a new one.
amb=0
ambivalent_pair() { # ambivalent_pair TARGET SOURCE OFFSET_KIB COUNT_KIB
	local t=$dir/amb-$1-$2.img want got
	[ -f "$dir/$1.img" ] && [ -f "$dir/$2.img" ] || return 0
	cp --sparse=always "$dir/$1.img" "$t"
	dd if="$dir/$2.img" of="$t" bs=1024 skip="$3" seek="$3" count="$4" conv=notrunc status=none
	want=$(blkid -p -o udev "$t" 2>&1; echo "exit $?")
	got=$("$PONY" dev probe -o udev "$t" 2>&1; echo "exit $?")
	[ "$want" = "$got" ] || fail "$1 with $2's superblock: blkid says '$want', pony '$got'"
	case $want in *ID_FS_AMBIVALENT=*) ;; *) fail "blkid did not call $1+$2 ambivalent: $want";; esac
	echo "$1 + $2: $(echo "$want" | head -1)"
	amb=$((amb + 1))
	rm -f "$t"
}
ambivalent_pair xfs ext4 1 1            # ext4's superblock at 1 KiB, under XFS's at 0
ambivalent_pair btrfs ext3 1 1           # under btrfs's at 64 KiB
[ "$amb" -ge 1 ] || fail "no ambivalent pair could be made"
echo "compared $made images, $fields fields equal to libblkid $(blkid --version | awk '{print $4}')"
pass
