#!/usr/bin/env bash
# mount_fstab_union.sh - a pony union through the real mount(8) and fstab
# lines of type fuse.pony-union with overlayfs's options (lowerdir=A:B,
# upperdir=, workdir=): mounted by the line alone, /proc/mounts says the
# line's source and type fuse.pony-union; lowers read through it, writes
# and deletions land in the upper, never in a lower, and are there after
# umount and mount; `mount -o remount,ro` makes it read-only; a line of
# lowers alone is a read-only union; without the /sbin helper, mount.fuse3
# runs pony-union to the same end.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/cli/mount_lib.sh" mount-union

mkdir -p "$T/l1" "$T/l2" "$T/u" "$T/w" "$T/ro"
echo top > "$T/l1/top"
echo bottom > "$T/l2/bottom"
echo shadowed > "$T/l2/top"
fstab "mine $T/m fuse.pony-union lowerdir=$T/l1:$T/l2,upperdir=$T/u,workdir=$T/w,nofail 0 0" \
	"layers $T/ro fuse.pony-union lowerdir=$T/l1:$T/l2 0 0"
lowers=$(cd "$T" && find l1 l2 -type f -exec md5sum {} + | sort)

mount -T "$T/fstab" "$T/m" || fail "mount by the fuse.pony-union line"
mounted_as "$T/m" mine fuse.pony-union
[ "$(cat "$T/m/top")" = top ] && [ "$(cat "$T/m/bottom")" = bottom ] ||
	fail "the lowers are not read through the union, top first"
echo new > "$T/m/new" && echo changed > "$T/m/bottom" && rm "$T/m/top" ||
	fail "write, change and delete through the union"
unmount "$T/m"
[ "$(cat "$T/u/new")" = new ] && [ "$(cat "$T/u/bottom")" = changed ] ||
	fail "the writes are not in the upper"
[ "$(cd "$T" && find l1 l2 -type f -exec md5sum {} + | sort)" = "$lowers" ] ||
	fail "a lower changed"

mount -T "$T/fstab" "$T/m" || fail "the second mount"
[ "$(cat "$T/m/new")" = new ] && [ "$(cat "$T/m/bottom")" = changed ] ||
	fail "the writes are gone after umount and mount"
[ ! -e "$T/m/top" ] || fail "the deleted file is back (no whiteout)"
mount -o remount,ro "$T/m" || fail "mount -o remount,ro"
findmnt -n -o OPTIONS --mountpoint "$T/m" | grep -qw ro || fail "remount,ro is not read-only"
touch "$T/m/after" 2>/dev/null && fail "a file made after remount,ro"
unmount "$T/m"

mount -T "$T/fstab" "$T/ro" || fail "mount of the lowers-only line"
mounted_as "$T/ro" layers fuse.pony-union
[ "$(cat "$T/ro/top")" = top ] || fail "read through the lowers-only union"
touch "$T/ro/x" 2>/dev/null && fail "the lowers-only union took a new file"
unmount "$T/ro"

out=$(mount -t fuse.pony-union mine "$T/m" -o lowerdir="$T/l1",bogus=1 2>&1) &&
	fail "mounted with bogus=1"
echo "$out" | grep -q "unknown option 'bogus=1'" || fail "bogus=1 said: $out"
mountpoint -q "$T/m" && fail "a refused union left a mount"

# Without /sbin/mount.fuse.pony-union, mount(8) runs mount.fuse3, which
# runs pony-union from PATH (/usr/local/sbin here, in this namespace only).
if command -v mount.fuse3 >/dev/null; then
	umount /usr/sbin || fail "cannot take the helpers away"
	mkdir -p "$T/path"
	ln -s "$(realpath "$PONY")" "$T/path/pony-union"
	mount --bind "$T/path" /usr/local/sbin || fail "cannot bind over /usr/local/sbin"
	union_round viafuse3 "$T/l1" "$T/u" "$T/w" new new "mount.fuse3 and pony-union"
fi
pass
