#!/usr/bin/env bash
# vol_scrub.sh - `pony vol scrub` on image files: one chunk of a RAID6
# member corrupted at a known offset (a data chunk, then P, then Q) is
# blamed on that member by name, and --repair puts back exactly the bytes
# that were written; on RAID5, which cannot tell which member is wrong,
# the stripe is reported unlocatable and --repair changes nothing. Scrub
# exits 1 whenever it found anything, 0 when everything agrees.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
. "$PONY_SRCDIR/tests/volume/vol_lib.sh" vol-scrub

MIB=1048576
CHUNK=65536
STRIPE=2                # the stripe corrupted: volume bytes [2 * 4 chunks, 3 * 4 chunks)
DEVOFF=$((MIB + STRIPE * CHUNK))        # the stripe's chunks on every member

# member_roles NPARITY IMG...: "data P Q" member indexes of stripe STRIPE (data
# block 1), found from the bytes written (file data), not from a layout formula.
member_roles() {
	python3 - "$DEVOFF" "$CHUNK" "$STRIPE" "$@" <<'EOF'
import sys
devoff, chunk, stripe, nparity = map(int, sys.argv[1:5])
imgs = sys.argv[5:]
data = open("data", "rb").read()
ndata = len(imgs) - nparity
want = [data[(stripe * ndata + b) * chunk:(stripe * ndata + b + 1) * chunk] for b in range(ndata)]
p = bytearray(chunk)
for w in want:
    for i in range(chunk):
        p[i] ^= w[i]
roles = {}
for m, img in enumerate(imgs):
    with open(img, "rb") as f:
        f.seek(devoff)
        got = f.read(chunk)
    if got in want:
        roles["d%d" % want.index(got)] = m
    elif got == bytes(p):
        roles["p"] = m
    else:
        roles["q"] = m
print(roles["d1"], roles["p"], roles.get("q", "-"))
EOF
}

chunk_of() { dd if="$1" bs=$CHUNK skip=$((DEVOFF / CHUNK)) count=1 status=none; }

for i in 0 1 2 3 4 5; do truncate -s 12M d$i.img; done
imgs=(d0.img d1.img d2.img d3.img d4.img d5.img)
"$PONY" vol create -l raid6 -c 64K "${imgs[@]}" > /dev/null || fail "create raid6"
head -c 3000000 /dev/urandom > data
"$PONY" vol write -f data "${imgs[@]}" || fail "write"
read -r dm pm qm <<< "$(member_roles 2 "${imgs[@]}")"
[ -n "$qm" ] && [ "$qm" != - ] || fail "could not tell the stripe's members apart"

for m in "$dm" "$pm" "$qm"; do
	img=d$m.img
	chunk_of "$img" > orig.chunk
	head -c 4096 /dev/urandom | dd of="$img" bs=1 seek=$((DEVOFF + 8192)) conv=notrunc status=none
	"$PONY" vol scrub "${imgs[@]}" > out 2> err; rc=$?
	[ "$rc" = 1 ] || fail "scrub of a corrupt member $m exited $rc, expected 1"
	grep -q "region 0 stripe $STRIPE: member $m ($img)" err ||
		fail "scrub did not blame member $m by name: $(cat err)"
	"$PONY" vol scrub --json "${imgs[@]}" 2>/dev/null | json "
f = s['mismatches']
assert len(f) == 1, s
assert f[0]['located'] and f[0]['member'] == $m and f[0]['stripe'] == $STRIPE, f
assert not f[0]['repaired'], f
assert f[0]['offset'] <= $STRIPE * $CHUNK + 8192 < f[0]['offset'] + f[0]['length'], f"
	chunk_of "$img" | cmp -s - orig.chunk && fail "a scrub without --repair changed member $m"
	"$PONY" vol scrub --repair --json "${imgs[@]}" > out 2>/dev/null; rc=$?
	[ "$rc" = 1 ] || fail "scrub --repair that found member $m exited $rc, expected 1"
	json "assert s['mismatches'][0]['repaired'] and s['mismatches'][0]['member'] == $m, s" < out
	chunk_of "$img" | cmp -s - orig.chunk || fail "--repair did not restore member $m's bytes"
	"$PONY" vol read -L 3000000 -f back "${imgs[@]}" || fail "read after repair"
	cmp -s back data || fail "the volume reads other bytes after repairing member $m"
	"$PONY" vol scrub "${imgs[@]}" > out 2>&1 || fail "scrub after repair exited $?: $(cat out)"
	[ "$(record_field MISMATCHES <out)" = 0 ] || fail "scrub after repair: $(cat out)"
done

# RAID5: one parity cannot say which member is wrong: unlocatable, left alone.
for i in 0 1 2 3; do truncate -s 12M r$i.img; done
r5=(r0.img r1.img r2.img r3.img)
"$PONY" vol create -l raid5 -c 64K "${r5[@]}" > /dev/null || fail "create raid5"
"$PONY" vol write -f data "${r5[@]}" || fail "write raid5"
read -r dm _ <<< "$(member_roles 1 "${r5[@]}")"
[ -n "$dm" ] || fail "could not find the raid5 stripe's data member"
head -c 4096 /dev/urandom | dd of=r$dm.img bs=1 seek=$((DEVOFF + 8192)) conv=notrunc status=none
# The data area alone: the superblocks' event counts move with every command.
sums() { for f in "${r5[@]}"; do dd if="$f" bs=1M skip=1 count=10 status=none | md5sum; done; }
sums > before
"$PONY" vol scrub --repair --json "${r5[@]}" > out 2>/dev/null; rc=$?
[ "$rc" = 1 ] || fail "raid5 scrub --repair exited $rc, expected 1"
json "
f = s['mismatches']
assert len(f) == 1, s
assert not f[0]['located'] and f[0]['member'] is None and not f[0]['repaired'], f
assert f[0]['stripe'] == $STRIPE, f" < out
sums > after
cmp -s before after || fail "raid5 scrub --repair changed an unlocatable stripe"
"$PONY" vol scrub "${r5[@]}" > out 2> err; rc=$?
[ "$rc" = 1 ] || fail "raid5 scrub exited $rc, expected 1"
grep -q "unlocatable" err || fail "no 'unlocatable' in the raid5 findings: $(cat err)"
[ "$(record_field MISMATCHES <out)" = 1 ] && [ "$(record_field UNLOCATABLE <out)" = 1 ] || fail "raid5 scrub summary: $(cat out)"
pass
