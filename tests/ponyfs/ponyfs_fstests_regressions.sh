#!/usr/bin/env bash
# ponyfs_fstests_regressions.sh - what fstests' generic group found wrong in
# ponyfs, each reproduced on a real mount without fstests (docs/fstests.md):
# - generic/035: a directory removed or renamed over while open stays
#   fstat-able (nlink 0) until closed, and is gone after it.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_fuse
command -v fusermount3 >/dev/null || skip "fusermount3 is missing"
command -v perl >/dev/null || skip "perl is missing"
T=$(mktemp -d /tmp/pony-fstests-reg.XXXXXX)
M=$T/m
PONY_PID=
cleanup() {
	mountpoint -q "$M" 2>/dev/null && { fusermount3 -u "$M" 2>/dev/null || umount -l "$M"; }
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$M"
truncate -s 128M "$T/img"
"$PONY" mkfs "$T/img" || fail "mkfs"
"$PONY" mount --foreground "$T/img" "$M" 2>"$T/pony.log" &
PONY_PID=$!
for _ in $(seq 1 100); do mountpoint -q "$M" && break; sleep 0.05; done
mountpoint -q "$M" || fail "pony mount did not come up: $(cat "$T/pony.log")"

# generic/035: open directories outlive their names.
mkdir "$M/a" "$M/b" "$M/c" || fail "mkdir"
out=$(M=$M perl -e '
	opendir(my $a, "$ENV{M}/a") or die "opendir a: $!\n";
	rename("$ENV{M}/b", "$ENV{M}/a") or die "rename: $!\n";
	my @s = stat($a) or die "fstat of the replaced directory: $!\n";
	opendir(my $c, "$ENV{M}/c") or die "opendir c: $!\n";
	rmdir("$ENV{M}/c") or die "rmdir: $!\n";
	my @t = stat($c) or die "fstat of the removed directory: $!\n";
	print "$s[3] $t[3]\n";' 2>&1) || fail "$out"
[ "$out" = "0 0" ] || fail "open removed directories: nlink '$out', expected 0 0"
fusermount3 -u "$M" || fail "unmount"
wait "$PONY_PID" || fail "pony exited $?"
PONY_PID=
"$PONY" fsck "$T/img" >"$T/fsck" || fail "fsck: the orphans stayed: $(cat "$T/fsck")"
pass
