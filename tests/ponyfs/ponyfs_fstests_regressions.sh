#!/usr/bin/env bash
# ponyfs_fstests_regressions.sh - what fstests' generic group found wrong in
# ponyfs, each reproduced on a real mount without fstests (docs/fstests.md):
# - generic/035: a directory removed or renamed over while open stays
#   fstat-able (nlink 0) until closed, and is gone after it.
# - generic/451: asynchronous direct writes beside buffered readers leave
#   no stale page behind (the helper ponyfs_dio, given as $1).
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_fuse
require_cmd fusermount3 perl
DIO=${1:?usage: ponyfs_fstests_regressions.sh DIO_HELPER}
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" fstests-reg
M=$T/m
truncate -s 128M "$T/img"
"$PONY" mkfs "$T/img" || fail "mkfs"
pony_mount "$T/img"

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

# generic/451: the read-back after each direct write sees that write.
"$DIO" "$M/dio" 5 || fail "a buffered read after an asynchronous direct write was stale"
pony_umount
"$PONY" fsck "$T/img" >"$T/fsck" || fail "fsck: the orphans stayed: $(cat "$T/fsck")"
pass
