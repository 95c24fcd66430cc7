#!/usr/bin/env bash
# layout_direct_write.sh - direct writes (libpony-layout's writer, `pony fs
# put --direct`) on real mounts over image members. On a RAID6 of six
# images: new files, a file replaced by a shorter one, sizes of one byte, a
# block, a stripe and odd ones, a file with writes still cached in the
# daemon, all read back the same through the mount and by `pony fs cat
# --direct`; the members' parity is right (pony vol scrub finds nothing,
# and with two members gone every file still reads back); fsck is clean
# (no leaked or doubly used block). A write lease that expires before the
# commit makes the commit fail ESTALE with the file untouched; commits of
# stripes the lease was not given are refused (layout_write_check). A
# mirror of two: the same, and with one image gone. A direct write drops
# set-ID bits as a write(2) on ext4 does, by an owner and by root.
# Encrypted files are refused with the reason; bad usage is a usage error.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
CHECK=$1

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-dwrite

# put SRC FILE: put --direct, then FILE reads back SRC through the mount and directly.
put() {
	"$PONY" fs put --direct "$1" "$2" 2>"$T/err" || fail "put --direct $1 $2: $(cat "$T/err")"
	cmp "$2" "$1" || fail "$2 (through the mount) is not what was put"
	"$PONY" fs cat --direct "$2" | cmp - "$1" || fail "$2 (cat --direct) is not what was put"
}

# files MNT: the shapes every volume gets, their references kept in $T.
files() {
	local m=$1
	head -c 3000123 /dev/urandom >"$T/big"
	put "$T/big" "$m/big"
	# Replaced: a file written through the mount, synced, replaced by a shorter one.
	head -c 600000 /dev/urandom >"$m/multi"
	"$PONY" sync "$m" || fail "pony sync"
	head -c 100000 /dev/urandom >"$T/multi"
	put "$T/multi" "$m/multi"
	# Sizes: nothing, a byte, a block, a stripe, a stripe and a byte.
	for n in 0 1 4096 262144 262145; do
		head -c $n /dev/urandom >"$T/s$n"
		put "$T/s$n" "$m/s$n"
	done
	# Writes cached in the daemon: the direct write is newer and wins.
	head -c 50000 /dev/urandom >"$m/cached"
	head -c 70000 /dev/urandom >"$T/cached"
	put "$T/cached" "$m/cached"
	# Again over a file put directly: its stripes are freed, the new ones used.
	head -c 1000000 /dev/urandom >"$T/big2"
	put "$T/big2" "$m/big"
}

# fsck_clean IMG...: the filesystem, unmounted, has no problem.
fsck_clean() { "$PONY" fsck "$@" >"$T/fsck" 2>&1 || fail "fsck: $(cat "$T/fsck")"; }

# --- RAID6 of six images -----------------------------------------------------
volume_images raid6 6 64M
pony_mount --layout-lease 1 "${imgs[@]}"
files "$T/m"
"$PONY" fs layout --json "$T/m/big" | python3 -c '
import json, sys
l = json.load(sys.stdin)
assert l["extents"] and all(e["state"] == "data" for e in l["extents"]), l["extents"]' ||
	fail "big: not all committed data on the volume"

# A lease that expires before the commit: ESTALE, the file as it was.
head -c 400000 /dev/urandom >"$T/late"
"$CHECK" expire "$T/m/multi" "$T/late" 2500 || fail "a commit after the lease expired was not ESTALE"
cmp "$T/m/multi" "$T/multi" || fail "an expired direct write changed the file"
# Commits of stripes not handed out to the lease: refused, the file as it was.
"$CHECK" foreign "$T/m/multi" || fail "a commit of foreign stripes was not refused"
cmp "$T/m/multi" "$T/multi" || fail "a refused commit changed the file"

# Set-ID bits: a direct write is a write, and drops them as write(2) does
# (setuid always, setgid with group execute, unless the writer has
# CAP_FSETID); ext4 is the oracle, written plainly by the same user. The
# writer opens the members itself: for nobody, they are made writable.
as_user() { local u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"; }
chmod 755 "$T"
chmod o+rw "${imgs[@]}"
head -c 100000 /dev/urandom >"$T/setid.src"
chmod 644 "$T/setid.src"
for who in nobody root; do
	echo old >"$T/setid.ext4"
	echo old >"$T/m/setid"
	chown "$who" "$T/setid.ext4" "$T/m/setid"
	chmod 6755 "$T/setid.ext4" "$T/m/setid"
	as_user "$who" dd if="$T/setid.src" of="$T/setid.ext4" conv=notrunc status=none ||
		fail "$who: write on ext4"
	as_user "$who" "$PONY" fs put --direct "$T/setid.src" "$T/m/setid" 2>"$T/err" ||
		fail "$who: put --direct: $(cat "$T/err")"
	cmp "$T/m/setid" "$T/setid.src" || fail "$who: the set-ID file's bytes"
	want=$(stat -c %a "$T/setid.ext4")
	got=$(stat -c %a "$T/m/setid")
	[ "$got" = "$want" ] || fail "$who: a direct write left mode $got, a write on ext4 $want"
	# The oracle must itself have dropped them for nobody, or nothing was tested.
	[ "$who" != nobody ] || [ "$want" = 755 ] || fail "ext4 kept $want for nobody's write"
done
chmod o-rw "${imgs[@]}"

# Encrypted: refused, with the reason; the file as it was.
head -c 64 /dev/urandom >"$T/key"
id=$("$PONY" crypt add-key "$T/m" <"$T/key") || fail "crypt add-key"
mkdir "$T/m/enc" && "$PONY" crypt set-policy "$T/m/enc" "$id" || fail "crypt set-policy"
echo secret >"$T/m/enc/f"
out=$("$PONY" fs put --direct "$T/big" "$T/m/enc/f" 2>&1) && fail "an encrypted file was written directly"
echo "$out" | grep -q "enc/f is encrypted: keys never leave the mount; write it through the mount" ||
	fail "encrypted: $out"
[ "$(cat "$T/m/enc/f")" = secret ] || fail "a refused direct write changed an encrypted file"

# Errors people can act on.
out=$("$PONY" fs put --direct "$T/big" "$T/outside" 2>&1) && fail "a file off the mount was written"
echo "$out" | grep -q "$T/outside: not on a pony mount" || fail "off the mount: $out"
out=$("$PONY" fs put --direct "$T/nothing" "$T/m/x" 2>&1) && fail "a missing source was put"
echo "$out" | grep -q "nothing: No such file" || fail "missing source: $out"
expect_usage_error "$PONY" fs put --direct "$T/big"
expect_usage_error "$PONY" fs put --bogus "$T/big" "$T/m/x"
"$PONY" fs put --help | grep -q "Usage: pony fs put" || fail "--help"
# Through the mount (the benchmark's other side): the same bytes.
"$PONY" fs put "$T/big" "$T/m/plain" || fail "put through the mount"
cmp "$T/m/plain" "$T/big" || fail "put through the mount: differs"
pony_umount
fsck_clean "${imgs[@]}"
"$PONY" vol scrub "${imgs[@]}" >"$T/scrub" 2>&1 || fail "vol scrub: $(cat "$T/scrub")"
record_field MISMATCHES <"$T/scrub" | grep -qx 0 || fail "parity written directly disagrees: $(cat "$T/scrub")"

# Two members gone: every byte comes back from P and Q as written.
pony_mount --degraded "$T/m0.img" "$T/m2.img" "$T/m3.img" "$T/m5.img"
cmp "$T/m/big" "$T/big2" || fail "degraded: big not rebuilt from the parity written directly"
cmp "$T/m/multi" "$T/multi" || fail "degraded: multi"
cmp "$T/m/s262145" "$T/s262145" || fail "degraded: s262145"
pony_umount

# --- a mirror of two images ----------------------------------------------------
rm -f "$T"/m?.img
truncate -s 64M "$T/a.img" "$T/b.img"
"$PONY" mkfs --data mirror "$T/a.img" "$T/b.img" >/dev/null || fail "mkfs --data mirror"
pony_mount "$T/a.img" "$T/b.img"
files "$T/m"
pony_umount
fsck_clean "$T/a.img" "$T/b.img"
mv "$T/a.img" "$T/gone.img"
pony_mount --degraded "$T/b.img"
cmp "$T/m/big" "$T/big2" || fail "mirror: the second copy of big differs"
cmp "$T/m/cached" "$T/cached" || fail "mirror: the second copy of cached differs"
pony_umount

# --- one image: no members to write to ------------------------------------------
truncate -s 64M "$T/one.img"
"$PONY" mkfs "$T/one.img" >/dev/null || fail "mkfs"
pony_mount "$T/one.img"
out=$("$PONY" fs put --direct "$T/big" "$T/m/x" 2>&1) && fail "a direct write on one image"
echo "$out" | grep -q "no layouts\|not on a volume" || fail "one image: $out"
pony_umount
pass
