#!/usr/bin/env bash
# partitions.sh - GPT and DOS tables made by sfdisk: each partition is a
# device of its own (IMG:pN) with PARTUUID, PARTLABEL and PART_ENTRY_* equal
# to what sfdisk wrote and (through a loop device, when available) to what
# libblkid reports for the kernel's partition device (PART_ENTRY_* from the
# parent's table, compared with blkid -p on /dev/loopNpM); a GPT whose primary
# header is destroyed is read from its backup; a filesystem inside a
# partition is found by label from the index.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_cmd sfdisk
dir=$(mktemp -d /tmp/pony-parts.XXXXXX)
loop=
trap '[ -n "$loop" ] && losetup -d "$loop"; rm -rf "$dir"' EXIT
export PONY_DEVDB=$dir/devdb.sqlite
gpt=$dir/gpt.img dos=$dir/dos.img

truncate -s 64M "$gpt"
sfdisk -q "$gpt" <<'TBL' || fail "sfdisk gpt"
label: gpt
start=2048, size=16384, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name="pony data"
start=18432, size=8192, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="esp"
TBL
mkfs.ext4 -q -L inpart -E offset=$((2048 * 512)) "$gpt" 8M || fail "mkfs.ext4 in a partition"
probe() { "$PONY" dev probe -o export "$1" | awk -v d="$2" '/^DEVNAME=/{on=($0=="DEVNAME=" d)} on'; }
tag() { probe "$1" "$2" | sed -n "s/^$3=//p"; }

[ "$(tag "$gpt" "$gpt" PTTYPE)" = gpt ] || fail "PTTYPE of the GPT image"
[ "$(tag "$gpt" "$gpt" PTUUID)" = "$(sfdisk --disk-id "$gpt" | tr A-Z a-z)" ] || fail "PTUUID"
for n in 1 2; do
	[ "$(tag "$gpt" "$gpt:p$n" PARTUUID)" = "$(sfdisk --part-uuid "$gpt" $n | tr A-Z a-z)" ] ||
		fail "PARTUUID of p$n"
	[ "$(tag "$gpt" "$gpt:p$n" PART_ENTRY_TYPE)" = "$(sfdisk --part-type "$gpt" $n | tr A-Z a-z)" ] ||
		fail "PART_ENTRY_TYPE of p$n"
	[ "$(tag "$gpt" "$gpt:p$n" PART_ENTRY_NUMBER)" = $n ] || fail "PART_ENTRY_NUMBER of p$n"
done
[ "$(tag "$gpt" "$gpt:p1" PARTLABEL)" = "pony\\ data" ] || fail "PARTLABEL of p1: $(tag "$gpt" "$gpt:p1" PARTLABEL)"
[ "$(tag "$gpt" "$gpt:p1" PART_ENTRY_OFFSET)" = 2048 ] || fail "PART_ENTRY_OFFSET"
[ "$(tag "$gpt" "$gpt:p1" PART_ENTRY_SIZE)" = 16384 ] || fail "PART_ENTRY_SIZE"
[ "$(tag "$gpt" "$gpt:p1" LABEL)" = inpart ] || fail "ext4 inside p1 not found"
[ "$(tag "$gpt" "$gpt:p1" TYPE)" = ext4 ] || fail "TYPE inside p1"

# The kernel's partition devices (losetup -P; partx -a where the kernel has
# no parser for the table): `pony dev probe` on /dev/loopNpM gives what
# `blkid -p` gives on the same device, PART_ENTRY_* read from the parent's
# table included (export and udev forms). Sets kloop (the loop device) when
# they could be compared; otherwise says why not.
kernel_parts() {
	local img=$1 pn l n=0
	shift
	kloop=
	if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/loop-control ] || ! loop=$(losetup -f --show -P -r "$img" 2>/dev/null); then
		echo "not compared: no loop device for ${img##*/}"
		return 0
	fi
	for _ in $(seq 10); do [ -b "${loop}p1" ] && break; sleep 0.1; done
	[ -b "${loop}p1" ] || partx -a "$loop" 2>/dev/null
	for _ in $(seq 30); do [ -b "${loop}p1" ] && break; sleep 0.1; done
	if [ ! -b "${loop}p1" ]; then
		echo "not compared: no partition devices for $loop (neither losetup -P nor partx -a)"
		return 0
	fi
	for pn in "$@"; do
		blkid -p -o export "${loop}p$pn" | grep -v '^DEVNAME=' >"$dir/want"
		grep -q '^PART_ENTRY_UUID=' "$dir/want" || fail "libblkid gives no PART_ENTRY_UUID for ${loop}p$pn"
		"$PONY" dev probe -o export "${loop}p$pn" >"$dir/got" || fail "pony dev probe ${loop}p$pn"
		while IFS= read -r l; do
			grep -qxF -- "$l" "$dir/got" || fail "libblkid on ${loop}p$pn says '$l'; pony: $(tr '\n' ' ' <"$dir/got")"
			n=$((n + 1))
		done <"$dir/want"
		blkid -p -o udev "${loop}p$pn" | grep '^ID_PART_' >"$dir/want"
		"$PONY" dev probe -o udev "${loop}p$pn" >"$dir/got"
		while IFS= read -r l; do
			grep -qxF -- "$l" "$dir/got" || fail "udev form of ${loop}p$pn: libblkid says '$l'"
		done <"$dir/want"
	done
	echo "${loop}p{$(echo "$@" | tr ' ' ,)} of ${img##*/} equal to libblkid on them ($n fields)"
	kloop=$loop
}
release_loop() { partx -d "$loop" 2>/dev/null; losetup -d "$loop"; loop= kloop=; }

kernel_parts "$gpt" 1 2
if [ -n "$kloop" ]; then
	# the index finds the kernel's partition device by PARTUUID and PARTLABEL
	PONY_DEVDB=$dir/kernel.sqlite "$PONY" dev scan "${kloop}p1" "${kloop}p2" >/dev/null || fail "scan ${kloop}pN"
	u=$(blkid -p -o value -s PART_ENTRY_UUID "${kloop}p2")
	[ "$(PONY_DEVDB=$dir/kernel.sqlite "$PONY" dev find PARTUUID="$u")" = "${kloop}p2" ] ||
		fail "find PARTUUID=$u is not ${kloop}p2"
	[ "$(PONY_DEVDB=$dir/kernel.sqlite "$PONY" dev find PARTLABEL=esp)" = "${kloop}p2" ] ||
		fail "find PARTLABEL=esp is not ${kloop}p2"
fi
[ -n "$loop" ] && release_loop

# Index: the filesystem and the partition label are found, as IMG:p1.
"$PONY" dev scan "$dir" >/dev/null || fail "scan"
[ "$("$PONY" dev find LABEL=inpart)" = "$gpt:p1" ] || fail "find LABEL=inpart"
[ "$("$PONY" dev find PARTLABEL=esp)" = "$gpt:p2" ] || fail "find PARTLABEL=esp"

# Destroy the primary header: the backup at the last sector still describes the disk.
p1=$(tag "$gpt" "$gpt:p1" PARTUUID)
dd if=/dev/zero of="$gpt" bs=512 seek=1 count=1 conv=notrunc status=none
[ "$(tag "$gpt" "$gpt:p1" PARTUUID)" = "$p1" ] || fail "backup GPT header not used"
# The index notices at lookup time (the image's mtime moved) and still answers.
[ "$("$PONY" dev find PARTUUID="$p1")" = "$gpt:p1" ] || fail "find by PARTUUID after re-probe"

# DOS with an extended partition: logical partitions are numbered from 5.
truncate -s 64M "$dos"
sfdisk -q "$dos" <<'TBL' || fail "sfdisk dos"
label: dos
label-id: 0x1234abcd
start=2048, size=8192, type=83, bootable
start=10240, size=40960, type=5
start=12288, size=8192, type=82
start=22528, size=8192, type=83
TBL
[ "$(tag "$dos" "$dos" PTTYPE)" = dos ] || fail "PTTYPE dos"
[ "$(tag "$dos" "$dos" PTUUID)" = 1234abcd ] || fail "PTUUID dos"
[ "$(tag "$dos" "$dos:p1" PART_ENTRY_FLAGS)" = 0x80 ] || fail "boot flag"
[ "$(tag "$dos" "$dos:p5" PARTUUID)" = 1234abcd-05 ] || fail "first logical partition is not p5"
[ "$(tag "$dos" "$dos:p5" PART_ENTRY_TYPE)" = 0x82 ] || fail "p5 type"
[ "$(tag "$dos" "$dos:p6" PART_ENTRY_OFFSET)" = 22528 ] || fail "p6 offset"
[ "$(tag "$dos" "$dos:p2" PART_ENTRY_TYPE)" = 0x5 ] || fail "extended partition entry"
# through the kernel: primary, extended (PTTYPE without reading it), logical
kernel_parts "$dos" 1 2 5 6
[ -n "$loop" ] && release_loop
pass
