#!/usr/bin/env bash
# ponyfs_metadata_full.sh - a 16 MiB ponyfs through FUSE, filled with empty
# files until a create fails (issue 18, point 1). Before, 4,096 or 8,192
# creates succeeded, the next got EIO, every later change EIO, and after a
# remount 2,048 acknowledged files were gone, with fsck calling it clean and
# df showing a billion free inodes. Now: the create that cannot fit gets
# ENOSPC, the mount stays usable (unlinks work, then creates again), the
# metadata grew into the data region (meta_chunks), df -i counts real
# inodes and drops as files are made, and every file that was acknowledged
# is there after a remount, with fsck clean.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-metadata-full

# inodes: "total free" of the mount's statfs.
inodes() { stat -f -c '%c %d' "$T/m"; }

truncate -s 16M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
pony_mount "$T/img"
read -r files0 ffree0 < <(inodes)
[ "$files0" -lt 1000000 ] || fail "statfs claims $files0 inodes on 16 MiB"

# Creates until one fails: its errno, and the names that succeeded.
python3 - "$T/m" "$T/made" >"$T/fill.out" <<'PY' || fail "filling: $(cat "$T/fill.out")"
import errno, os, sys
d, made = sys.argv[1], sys.argv[2]
n = 0
with open(made, "w") as out:
    while True:
        name = "f%07d" % n
        try:
            os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except OSError as e:
            print(n, errno.errorcode.get(e.errno, e.errno))
            break
        out.write(name + "\n")
        n += 1
        if n == 1000:
            st = os.statvfs(d)
            print("at1000", st.f_files, st.f_ffree, file=sys.stderr)
PY
read -r n err <"$T/fill.out"
[ "$err" = ENOSPC ] || fail "create $n failed with $err, not ENOSPC"
[ "$n" -gt 20000 ] || fail "only $n empty files fit in 16 MiB"
read -r files1 ffree1 < <(inodes)
[ $((files1 - ffree1)) = $((files0 - ffree0 + n)) ] ||
	fail "df -i used $((files1 - ffree1)), want $((files0 - ffree0 + n))"
[ "$ffree1" -lt "$ffree0" ] || fail "free inodes did not drop: $ffree0 -> $ffree1"
"$PONY" stat --counters "$T/m" >"$T/counters" || fail "counters"
grep -q "^meta_chunks [1-9]" "$T/counters" || fail "metadata did not grow: $(cat "$T/counters")"
grep -q "^commit_error none" "$T/counters" || fail "a commit failed: $(cat "$T/counters")"

# Still usable: unlinks work on the full filesystem, then creates again
# (fewer than were removed: a create reserves what it may cost at worst).
(cd "$T/m" && head -n 1000 "$T/made" | xargs rm) || fail "unlinks on a full filesystem"
for i in $(seq 0 99); do : >"$T/m/again$i" || fail "create again$i after the unlinks"; done
pony_umount
"$PONY" fsck "$T/img" >"$T/fsck.out" || fail "fsck: $(cat "$T/fsck.out")"

pony_mount "$T/img"
ls "$T/m" | grep '^f' | sort >"$T/have"
tail -n +1001 "$T/made" | sort | cmp - "$T/have" >/dev/null ||
	fail "after the remount $(wc -l <"$T/have") of $((n - 1000)) acknowledged files are there"
[ "$(ls "$T/m" | grep -c '^again')" = 100 ] || fail "the creates after the unlinks are gone"
pony_umount
echo "ok: $n empty files on 16 MiB, ENOSPC, all there after a remount"
