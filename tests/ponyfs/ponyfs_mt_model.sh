#!/usr/bin/env bash
# ponyfs_mt_model.sh - eight threads creating, rewriting, renaming (over a
# name and between directories), writing in place, truncating,
# hard-linking and deleting in four shared directories for 30 s
# (PONYFS_MT_SECONDS) leave a filesystem that matches a model: the same
# steps on the host's filesystem (ponyfs_mt_model.c, which also compares
# every file, its size and link count after each step). Then the whole
# tree against the model (diff -r: names and bytes), through the mount,
# and again after an unmount, a clean fsck and a fresh mount.
# Usage: ponyfs_mt_model.sh PONYFS_MT_MODEL
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3
HELPER=$1
[ -x "$HELPER" ] || fail "no ponyfs_mt_model at $HELPER"
SECONDS_RUN=${PONYFS_MT_SECONDS:-30}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-mt-model
truncate -s 1G "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
mkdir "$T/model"
# A short commit interval: commits run among the threads' steps.
pony_mount --commit 500 "$T/img"
"$HELPER" "$T/m" "$T/model" "$SECONDS_RUN" 8 || fail "the threads' steps did not match the model"
diff -r "$T/model" "$T/m" >"$T/diff" 2>&1 || fail "the mount differs from the model: $(head -5 "$T/diff")"
pony_umount
"$PONY" fsck "$T/img" >"$T/fsck" 2>&1 || fail "fsck after the run: $(cat "$T/fsck")"
pony_mount "$T/img"
diff -r "$T/model" "$T/m" >"$T/diff" 2>&1 ||
	fail "after a remount the filesystem differs from the model: $(head -5 "$T/diff")"
pony_umount
pass
