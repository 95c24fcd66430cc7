#!/usr/bin/env bash
# mount_fstab_volume.sh - a ponyfs on a RAID5 pony volume of three images
# through the real mount(8) and fstab lines, for each way to name it:
# pony:LABEL=L and pony:UUID=U (members found in a private device database,
# $PONY_DEVDB, filled by pony dev scan) and the member list IMG1:IMG2:IMG3.
# Each line mounts by `mount -T FSTAB MNT` alone; /proc/mounts keeps the
# source as the line spells it, type fuse.pony; what one mount wrote the
# next one reads back. Plain LABEL= is mount(8)'s to resolve (libblkid),
# and fails there: the reason for the pony: spelling.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/cli/mount_lib.sh" mount-volume

export PONY_DEVDB=$T/devdb.sqlite
mkdir -p "$T/imgs" "$T/by-label" "$T/by-uuid" "$T/by-list"
for i in 0 1 2; do truncate -s 96M "$T/imgs/m$i.img"; done
"$PONY" mkfs --label vdata --data raid5 "$T"/imgs/m?.img >/dev/null || fail "mkfs of the volume"
"$PONY" dev scan "$T/imgs" >/dev/null || fail "pony dev scan"
uuid=$("$PONY" dev probe "$T/imgs/m0.img" | sed -n 's/.* UUID="\([^"]*\)".*/\1/p')
[ -n "$uuid" ] || fail "no UUID from pony dev probe"
list="$T/imgs/m0.img:$T/imgs/m1.img:$T/imgs/m2.img"
fstab "pony:LABEL=vdata $T/by-label fuse.pony defaults,commit=100 0 0" \
	"pony:UUID=$uuid $T/by-uuid fuse.pony defaults,_netdev 0 0" \
	"$list $T/by-list fuse.pony rw 0 0" \
	"LABEL=vdata $T/m fuse.pony defaults 0 0"

head -c 500000 /dev/urandom > "$T/one"
mount -T "$T/fstab" "$T/by-label" || fail "mount by pony:LABEL="
mounted_as "$T/by-label" pony:LABEL=vdata fuse.pony
cp "$T/one" "$T/by-label/one" || fail "write by label"
unmount "$T/by-label"

mount -T "$T/fstab" "$T/by-uuid" || fail "mount by pony:UUID="
mounted_as "$T/by-uuid" "pony:UUID=$uuid" fuse.pony
cmp -s "$T/one" "$T/by-uuid/one" || fail "by uuid: what the label mount wrote differs"
cp "$T/one" "$T/by-uuid/two" || fail "write by uuid"
unmount "$T/by-uuid"

mount -T "$T/fstab" "$T/by-list" || fail "mount by the member list"
mounted_as "$T/by-list" "$list" fuse.pony
cmp -s "$T/one" "$T/by-list/one" && cmp -s "$T/one" "$T/by-list/two" ||
	fail "by the member list: what the other mounts wrote differs"
unmount "$T/by-list"

# libmount resolves LABEL= through libblkid before it runs any helper.
out=$(mount -T "$T/fstab" "$T/m" 2>&1) && fail "plain LABEL= mounted: $out"
mountpoint -q "$T/m" && fail "plain LABEL= left a mount"
# A name that no member has: pony's own message, mount(8) fails.
out=$(mount -t fuse.pony pony:LABEL=nosuch "$T/m" 2>&1) && fail "mounted LABEL=nosuch"
echo "$out" | grep -q "LABEL=nosuch: no pony volume member" || fail "LABEL=nosuch said: $out"
out=$(mount -t fuse.pony pony:TYPE=x "$T/m" 2>&1) && fail "mounted pony:TYPE=x"
echo "$out" | grep -q "pony: is followed by UUID= or LABEL=" || fail "pony:TYPE=x said: $out"
"$PONY" fsck "$T"/imgs/m?.img >/dev/null || fail "fsck after the mounts"
pass
