#!/usr/bin/env bash
# vol_readd.sh - `pony vol re-add`, mdadm --re-add's habit: a RAID6 member
# that was away while the volume was written degraded comes back, and only
# what the write-intent bitmap marks (one 64 MiB bit of a 384 MiB volume)
# is rebuilt onto it; the volume is then clean, scrubs clean, and reads
# right with two other members gone (so from the re-added one). A clean
# close with a member away keeps the bitmap. A member that left before the
# bitmap was last cleared, and one replaced since, are refused with what to
# do instead, and change nothing.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-readd

MiB=1048576
for i in 0 1 2 3 4 5; do truncate -s 98M d$i.img; done
all=(d0.img d1.img d2.img d3.img d4.img d5.img)
five=(d0.img d1.img d2.img d3.img d4.img)
"$PONY" vol create -l raid6 -c 64K --assume-clean -N readd "${all[@]}" >/dev/null || fail "create"
size=$("$PONY" vol status --json "${all[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')
[ "$size" -ge $((300 * MiB)) ] || fail "volume of $size bytes: too small for several bitmap bits"
head -c $MiB /dev/urandom >a
head -c $MiB /dev/urandom >b
"$PONY" vol write -O 0 -f a "${all[@]}" || fail "write a"
"$PONY" vol write -O $((150 * MiB)) -f a "${all[@]}" || fail "write a at 150M"

# Member 5 away; the volume written degraded at 150 MiB (bit 2 of 64 MiB
# bits), then, in another open, at 10 MiB (bit 0): each open must keep the
# bits the last one left, though both sit in the bitmap's first page.
"$PONY" vol write --degraded -O $((150 * MiB)) -f b "${five[@]}" 2>/dev/null || fail "degraded write"
"$PONY" vol write --degraded -O $((10 * MiB)) -f b "${five[@]}" 2>/dev/null || fail "degraded write 2"
cp --sparse=always d5.img old5.img          # member 5 as it left, for later
"$PONY" vol re-add "${all[@]}" >out 2>err || fail "re-add: $(cat err)"
grep -qx "member 5 (d5.img) re-added: $((128 * MiB)) bytes resynced" out ||
	fail "re-add resynced other than the two 64 MiB bits written: $(cat out)"
"$PONY" vol status "${all[@]}" >out 2>err || fail "status after re-add: $(cat out err)"
record_field STATE <out | grep -qx clean || fail "not clean after re-add: $(cat out)"
"$PONY" vol scrub "${all[@]}" >out 2>&1 || fail "scrub after re-add: $(cat out)"
# Two others gone: the data must come from the re-added member.
"$PONY" vol read -O $((150 * MiB)) -L $MiB -f back d2.img d3.img d4.img d5.img 2>/dev/null ||
	fail "read without d0, d1"
cmp -s back b || fail "the re-added member lacks the write it missed"
"$PONY" vol read -O 0 -L $MiB -f back d2.img d3.img d4.img d5.img 2>/dev/null || fail "read at 0"
cmp -s back a || fail "the re-added member lost what it had"
"$PONY" vol read -O $((10 * MiB)) -L $MiB -f back d2.img d3.img d4.img d5.img 2>/dev/null ||
	fail "read at 10M"
cmp -s back b || fail "the re-added member lacks the second write it missed"
# Nothing to take back now.
"$PONY" vol re-add "${all[@]}" >out 2>err && fail "re-add with nobody away succeeded"
grep -q "no member among DEV... left and came back" err || fail "nothing to re-add: $(cat err)"

# old5 left before a later clean close with every member working cleared
# the bitmap: what it missed is unknown. Refused; nothing written.
"$PONY" vol write -O $((300 * MiB)) -f a "${all[@]}" || fail "write at 300M"
cp --sparse=always d5.img cur5.img
cp --sparse=always old5.img d5.img
md5sum d5.img >sums
"$PONY" vol re-add "${all[@]}" >out 2>err && fail "re-add of a member older than the bitmap succeeded"
grep -q "left before the write-intent bitmap was last cleared" err ||
	fail "no word of the bitmap: $(cat err)"
grep -q "pony vol replace -m 5 -d d5.img" err || fail "no word of what to do: $(cat err)"
md5sum -c --quiet sums || fail "a refused re-add wrote to the member it refused"
"$PONY" vol read -O $((300 * MiB)) -L $MiB -f back "${five[@]}" 2>/dev/null || fail "read at 300M"
cmp -s back a || fail "a refused re-add changed the volume's data"

# Replaced since: member 5's place belongs to new5 now.
cp --sparse=always cur5.img d5.img
truncate -s 98M new5.img
"$PONY" vol replace -m 5 -d new5.img "${five[@]}" >/dev/null 2>&1 || fail "replace onto new5"
"$PONY" vol re-add -m 5 "${five[@]}" d5.img >out 2>err &&
	fail "re-add of a replaced member succeeded"
grep -q "member 5 was replaced since d5.img left" err || fail "replaced member: $(cat err)"
# new5 missed that open (it was not listed): it is taken back from the bitmap.
"$PONY" vol re-add "${five[@]}" new5.img >out 2>err || fail "re-add of new5: $(cat err)"
grep -q "member 5 (new5.img) re-added" out || fail "new5 not re-added: $(cat out)"

pass
