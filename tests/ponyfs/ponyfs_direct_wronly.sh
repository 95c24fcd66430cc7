#!/usr/bin/env bash
# ponyfs_direct_wronly.sh - a write-only open on a pony mount is direct I/O
# (FOPEN_DIRECT_IO), so a new file's first write costs no GETXATTR of
# security.capability (the kernel asks it before a write through the page
# cache: docs/fuse-requests.md), and nothing a user sees changes:
#  - 20 new files of one write each: 20 WRITEs and no GETXATTR;
#  - a descriptor open for reading, and a shared mapping of the file, see
#    what a write-only descriptor wrote (the kernel drops the pages the
#    direct write covers), the size it grew to, too;
#  - security.capability goes on a write through a write-only descriptor
#    and through a read-write one, and stays after an open without a
#    write; suid and sgid go on a write, and on an O_TRUNC open (fstests'
#    generic/193), by a caller without CAP_FSETID:
#    each as ext4 (on a loop device, the oracle) does;
#  - the files read back after a remount.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-direct-wronly
require_root
require_fuse
require_cmd python3 setcap getcap setpriv mkfs.ext4 losetup
M=$T/m
chmod 755 "$T"                          # nobody writes under it below
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"

pony_mount "$T/img"
gx0=$(requests_count fuse_getxattr) wr0=$(requests_count fuse_write)
python3 - "$M" <<'PY' || fail "the new files"
import os, sys
for i in range(20):
    fd = os.open(f"{sys.argv[1]}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"%d" % i * 300)
    os.close(fd)
PY
gx=$(( $(requests_count fuse_getxattr) - gx0 )) wr=$(( $(requests_count fuse_write) - wr0 ))
[ "$gx" = 0 ] || fail "20 new files of one write each cost $gx GETXATTRs, not 0"
[ "$wr" = 20 ] || fail "20 writes of 20 new files came as $wr WRITEs"

python3 - "$M/coherent" <<'PY' || fail "a write-only descriptor's writes unseen through another"
import mmap, os, sys
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(b"A" * 8192)
r = os.open(p, os.O_RDONLY)
m = mmap.mmap(r, 8192, mmap.MAP_SHARED, mmap.PROT_READ)
assert os.pread(r, 4, 0) == b"AAAA" and m[4196:4200] == b"AAAA"   # both cached now
w = os.open(p, os.O_WRONLY)
os.pwrite(w, b"BBBB", 0)
os.pwrite(w, b"CCCC", 4196)
os.pwrite(w, b"D" * 10, 8192)
assert os.pread(r, 4, 0) == b"BBBB", os.pread(r, 4, 0)
assert os.pread(r, 4, 4196) == b"CCCC"
assert m[:4] == b"BBBB" and m[4196:4200] == b"CCCC", (m[:4], m[4196:4200])
assert os.fstat(r).st_size == 8202 and os.pread(r, 12, 8190) == b"AA" + b"D" * 10
PY

# privs DIR: what each write leaves of caps and set-ID bits under DIR.
privs() {
	local d=$1 f
	for how in wronly rdwr open; do
		f=$d/cap-$how
		printf 'data' >"$f"
		setcap cap_net_raw+ep "$f" || fail "setcap on $f"
		case $how in
		wronly) printf 'more' >>"$f" ;;
		rdwr) printf 'more' 1<>"$f" ;;
		open) : >>"$f" ;;
		esac
		echo "$how: $(getcap "$f" | awk '{ print $2 }')"
	done
	f=$d/setid
	printf 'data' >"$f"
	chmod 06777 "$f"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "printf more >>'$f'" ||
		fail "write to $f as nobody"
	echo "setid: $(stat -c %a "$f")"
	chmod 06777 "$f"                # fstests' generic/193: truncated by open
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo >'$f'" ||
		fail "truncate $f as nobody"
	echo "setid-trunc: $(stat -c %a "$f")"
}
pony=$(privs "$M") || exit 1
mkdir "$T/e"
truncate -s 64M "$T/ext4.img"
mkfs.ext4 -q "$T/ext4.img" || fail "mkfs.ext4"
mount -o loop "$T/ext4.img" "$T/e" || fail "mount the ext4"
ext4=$(privs "$T/e")
umount "$T/e"
[ "$pony" = "$ext4" ] || fail "ponyfs left '$(echo $pony)' of the privileges, ext4 '$(echo $ext4)'"
case $ext4 in *"open: cap_net_raw=ep"*"setid: 777"*"setid-trunc: 777"*) ;; *) fail "the oracle: $(echo $ext4)" ;; esac

"$PONY" sync "$M" || fail "pony sync"
pony_umount
pony_mount "$T/img"
for i in $(seq 0 19); do
	want=$(printf "$i%.0s" $(seq 300))
	[ "$(cat "$M/f$i")" = "$want" ] || fail "f$i after the remount reads '$(head -c 40 "$M/f$i")'"
done
echo "ok: 20 new files, $wr WRITEs, $gx GETXATTRs; writes seen by readers and maps; privileges as ext4 ($(echo $ext4))"
