#!/usr/bin/env bash
# cli_targets.sh - pony mkfs and pony vol create never destroy what is on
# their targets without -f (issue 18, point 4): an ext4, a vfat, a pony
# volume member, a ponyfs; never a member of a mounted ponyfs, nor the same
# file twice, even with -f; members of different sizes get a warning. Each
# refusal names the target and what it holds, and leaves every byte as it
# was.
set -u
. "$(dirname "$0")/../lib.sh"
PONY=${PONY:?}
require_cmd mkfs.ext4 mkfs.vfat
workdir cli-targets
cd "$T" || fail "cd $T"

# refused WHAT IMG -- CMD...: fails naming IMG and WHAT; IMG is unchanged.
refused() {
	local what=$1 img=$2 sums err
	shift 2
	while [ "$1" != -- ]; do shift; done
	shift
	sums=$(cksum "$img")
	err=$("$@" 2>&1 >/dev/null) && fail "'$*' succeeded over $img ($what)"
	grep -qF -- "$img" <<<"$err" || fail "'$*' did not name $img: $err"
	grep -qF -- "$what" <<<"$err" || fail "'$*' did not say '$what': $err"
	[ "$(cksum "$img")" = "$sums" ] || fail "'$*' changed $img while refusing"
}

truncate -s 64M e.img v.img p.img f.img z1.img z2.img z3.img
mkfs.ext4 -q -L data e.img || fail "mkfs.ext4"
mkfs.vfat -n BOOT v.img >/dev/null || fail "mkfs.vfat"
"$PONY" mkfs p.img >/dev/null 2>&1 || fail "mkfs p.img"
"$PONY" vol create -l raid1 z1.img z2.img >/dev/null 2>&1 || fail "vol create z1 z2"

refused "ext4" e.img -- "$PONY" mkfs e.img
refused "LABEL=data" e.img -- "$PONY" mkfs e.img
refused "vfat" v.img -- "$PONY" mkfs v.img
refused "ponyfs" p.img -- "$PONY" mkfs p.img
refused "member of pony volume" z1.img -- "$PONY" mkfs z1.img z3.img
refused "ext4" e.img -- "$PONY" vol create -l raid1 f.img e.img
refused "-f" v.img -- "$PONY" vol create -l raid1 v.img f.img
refused "same file" f.img -- "$PONY" mkfs -f f.img ./f.img
ln -s f.img link.img
refused "same file" link.img -- "$PONY" vol create -f -l raid1 f.img link.img

# -f overwrites a signature, saying what it overwrites.
err=$("$PONY" mkfs -f e.img 2>&1 >/dev/null) || fail "mkfs -f e.img: $err"
grep -q "overwriting an ext4" <<<"$err" || fail "mkfs -f said nothing of the ext4: $err"
[ "$("$PONY" dev probe e.img | grep -o 'TYPE="[^"]*"')" = 'TYPE="ponyfs"' ] ||
	fail "mkfs -f e.img did not make a ponyfs"

# Different sizes: a warning with how much stays unused, and it goes on.
truncate -s 96M big.img
err=$("$PONY" vol create -l raid1 f.img big.img 2>&1 >/dev/null) || fail "vol create: $err"
grep -q "differ in size.*32M stay unused" <<<"$err" || fail "no size warning: $err"

# A member of a mounted ponyfs: refused even with -f, whatever it holds.
if [ -c /dev/fuse ] && [ "$(id -u)" -eq 0 ]; then
	mkdir m
	fuse_daemon_start m "$T/mount.log" "pony mount" "$PONY" mount -f p.img m
	echo hello >m/file
	refused "in use by a running pony" p.img -- "$PONY" mkfs -f p.img
	refused "in use by a running pony" p.img -- "$PONY" vol create -f -l raid1 p.img f.img
	[ "$(cat m/file)" = hello ] || fail "the mounted ponyfs lost its file"
	fuse_daemon_stop m "$T/mount.log"
else
	echo "no FUSE or not root: the mounted-member case is not run"
fi

# vol add -d: a working member of the volume is refused, even with -f.
"$PONY" vol create -f -l raid1 z1.img z2.img z3.img >/dev/null 2>&1 || fail "vol create 3"
refused "also given as member" z2.img -- "$PONY" vol add -f -d z2.img z1.img z2.img z3.img
pass
