#!/usr/bin/env bash
# union_vs_overlayfs.sh - a pony union on a real FUSE mount behaves as the
# kernel's overlayfs over the same lowers, operation by operation (output
# and exit status of each), and the two read each other's upper: the kernel
# mounting pony's upper shows the tree pony showed, and pony mounting the
# kernel's shows the kernel's. The lowers are checksummed before and after
# and must never change. Also: bad input, a lower changed under the mount.
#
# Arguments are extra `pony union mount` options: meson runs it once with the
# defaults and once with --writeback --threads 4.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/union/union_lib.sh"
PONY_OPTS=("$@")
union_setup it
UNION_LOWERS=$T/l1:$T/l2

# What a tree shows: names, types, modes, sizes, owners, link targets, data.
tree_of() {
	(cd "$1" && find . -printf '%p %y %m %s %U:%G %l\n' | sort &&
	 find . -type f -exec md5sum {} + | sort -k2)
}
lower_sum() { (cd "$T" && tree_of l1 && tree_of l2 && find l1 l2 -printf '%p %T@ %C@\n' | sort) | md5sum; }

mkdir -p "$T"/{l1,l2,pu,pw,ku,kw,pm,km}
(
	cd "$T/l1" && mkdir -p d/sub deep emp full/in && echo deep > full/in/f && echo one > a && echo sub > d/sub/s &&
	ln a alink && ln -s a sym && mkfifo fifo && chmod 751 d &&
	mkdir xa xb && echo a1 > xa/a1 && echo b1 > xb/b1 &&
	python3 -c "import os; os.setxattr('a', 'user.k', b'v1')"
	cd "$T/l2" && mkdir -p d e/f xa xb && echo a2 > xa/a2 && echo b2 > xb/b2 &&
	echo two > b && echo low > d/x && echo e > e/f/g &&
	echo shadowed > a && head -c 300000 /dev/urandom > big
) || fail "cannot build the lowers"
before=$(lower_sum)

chmod 711 "$T" # nobody reaches the mounts (the suid op below)
pony_mount "$T/pu" "$T/pw"
kernel_mount "$T/ku" "$T/kw"
mount | grep -q "^$T/pu on $T/pm type fuse.pony-union" || fail "fsname is not the upper: $(mount | grep "$T/pm")"

# renameat2(RENAME_EXCHANGE) of A and B: prints the error, if any.
xchg='python3 -c "import ctypes, os, sys; l = ctypes.CDLL(None, use_errno=True); r = l.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2); print(\"exchange:\", os.strerror(ctypes.get_errno()) if r else \"ok\")"'
# Each operation runs in both mounts; output and status must match.
ops=(
	'cat a b d/x; ls'
	'echo more >> a; cat a; stat -c %s a'
	'truncate -s 2 b; cat b; stat -c %s b'
	'truncate -s 100000 big; md5sum big'
	'echo new > n; mv n a; cat a'
	'mv b b2; ls; cat b2'
	'mv d dmoved; ls dmoved dmoved/sub; cat dmoved/x dmoved/sub/s'
	'mv e/f ef; ls e ef; cat ef/g'
	'ln b2 b3; stat -c %h b2 b3'
	'rm b3 sym; ls'
	'rmdir dmoved; echo $?'
	'rm -r dmoved/sub; ls dmoved'
	'mkdir dmoved/sub; ls -a dmoved/sub'
	'chmod 600 b2; stat -c %a b2'
	'chown 12:34 b2; stat -c %u:%g b2'
	# suid/sgid dropped on write, truncate and open(O_TRUNC) by a caller
	# without CAP_FSETID, and on chown (pony does it, KILLPRIV_V2).
	'nb="setpriv --reuid 65534 --regid 65534 --clear-groups"; touch sf; chmod 4777 sf; $nb sh -c "echo x >> sf"; stat -c %a sf; chmod 6777 sf; $nb truncate -s 1 sf; stat -c %a sf; chmod 6777 sf; $nb sh -c ": > sf"; stat -c %a sf; chmod 2767 sf; $nb sh -c "echo y >> sf"; stat -c %a sf; chmod 6755 sf; chown 1:1 sf; stat -c %a sf; cat sf'
	'touch -d "2001-02-03 04:05:06" b2; stat -c %Y b2'
	'python3 -c "import os; os.setxattr(\"b2\", \"user.t\", b\"x\"); print(os.getxattr(\"b2\", \"user.t\"), sorted(os.listxattr(\"b2\")))"'
	'python3 -c "import os; print(os.getxattr(\"alink\", \"user.k\")); os.removexattr(\"alink\", \"user.k\"); print(os.listxattr(\"alink\"))"'
	'ln -s dmoved/x sl; readlink sl; cat sl'
	'(umask 027; mkfifo p1; mknod c1 c 1 3; mkdir m1; touch f1); stat -c "%n %a %F" p1 c1 m1 f1'
	'mkdir -p x/y z; mv x/y z/; stat -c "%n %h" x z z/y'
	'python3 -c "import os; fd=os.open(\"u1\", os.O_RDWR|os.O_CREAT, 0o644); os.write(fd, b\"abc\"); os.unlink(\"u1\"); st=os.fstat(fd); print(st.st_nlink, st.st_size)"'
	'python3 -c "import os; fd=os.open(\"big\", os.O_RDONLY); os.unlink(\"big\"); st=os.fstat(fd); print(st.st_size, len(os.read(fd, 10)))"; ls big'
	'touch $(printf "n%.0s" $(seq 256)) 2>&1 | sed "s/.*: //"'
	'mkdir $(printf "n%.0s" $(seq 256)) 2>&1 | sed "s/.*: //"'
	'p=deep; for i in $(seq 1 15); do p=$p/$(printf "d%.0s" $(seq 250)); done; mkdir -p $p; echo $?; touch $p/$(printf "f%.0s" $(seq 200)) 2>&1 | sed "s/.*: //"'
	'mv ef e/; ls e e/ef'
	'mv a2 a 2>&1 | sed "s/.*: //"; rm -rf e; ls'
	'cat fifo </dev/null & sleep 0.1; kill %1 2>/dev/null; stat -c %F fifo'
	'mkdir nd2; touch nd2/q; mv nd2 emp; ls -a emp; stat -c %h emp'
	'mkdir nd3; mv nd3 full 2>&1 | sed "s/.*: //"; mv full/in full2; ls full full2; rmdir full; ls -d full 2>&1 | sed "s/.*: //"'
	'mkdir full; ls -a full; touch full/x; ls full'
	'ln -s nowhere dangling; ls -l dangling | cut -c1; mv dangling dmoved/; readlink dmoved/dangling'
	"$xchg xa xb; ls xa xb; cat xa/b2 xb/a1"
	"mkdir xc; touch xc/c; $xchg xa xc; ls xa xc; $xchg xc dmoved/sub; ls xc dmoved/sub"
	"$xchg xb b2; ls xb b2; cat b2/a1"
	'python3 -c "import os; f = \"capf\"; open(f, \"w\").write(\"x\"); v = bytes.fromhex(\"0000000200200000000000000000000000000000\")
try: os.getxattr(f, \"security.capability\")
except OSError as e: print(e.strerror)
os.setxattr(f, \"security.capability\", v); print(os.getxattr(f, \"security.capability\") == v)
open(f, \"a\").write(\"y\"); print(\"security.capability\" in os.listxattr(f))"'
	# chown(f, -1, -1) changes nothing but ctime (and suid), as on ext4;
	# of an upper file, a directory, a lower file, a lower hard link.
	'touch ct; chmod 4755 ct; mkdir cdir; for f in ct cdir fifo alink; do python3 -c "import os, sys, time; f = sys.argv[1]; c = os.lstat(f).st_ctime_ns; time.sleep(0.02); os.chown(f, -1, -1); st = os.lstat(f); print(f, oct(st.st_mode), st.st_ctime_ns > c)" $f; done'
)
i=0
for op in "${ops[@]}"; do
	i=$((i + 1))
	p=$(cd "$T/pm" && bash -c "$op" 2>&1; echo "rc=$?")
	k=$(cd "$T/km" && bash -c "$op" 2>&1; echo "rc=$?")
	[ "$p" = "$k" ] || fail "op $i '$op' differs:
--- pony
$p
--- kernel overlayfs
$k"
done
# Hard links: pony keeps them one inode after copy-up (the kernel, without
# index=on, does not): alink shows what was written through a before a was
# replaced by a rename.
[ "$(cat "$T/pm/alink")" = "$(printf 'one\nmore')" ] || fail "alink lost its hard link to a after copy-up"

p_tree=$(tree_of "$T/pm" | grep -v '\./alink')
k_tree=$(tree_of "$T/km" | grep -v '\./alink')
[ "$p_tree" = "$k_tree" ] || fail "final trees differ: $(diff <(echo "$p_tree") <(echo "$k_tree"))"
pony_umount
kernel_umount

# Interop: each upper read by the other implementation shows the same tree.
# But alink: pony leaves a hard link's other names lower-only, as the
# kernel's index=on does, so the kernel without index=on shows the lower's.
kernel_mount "$T/pu" "$T/pw"
k_on_p=$(tree_of "$T/km" | grep -v '\./alink'); kernel_umount
pony_mount "$T/pu" "$T/pw"
p_on_p=$(tree_of "$T/pm" | grep -v '\./alink')
[ "$(cat "$T/pm/alink")" = "$(printf 'one\nmore')" ] || fail "alink lost its hard link to a after a remount"
pony_umount
[ "$k_on_p" = "$p_on_p" ] || fail "kernel on pony's upper differs: $(diff <(echo "$k_on_p") <(echo "$p_on_p"))"
pony_mount "$T/ku" "$T/kw"
p_on_k=$(tree_of "$T/pm"); pony_umount
kernel_mount "$T/ku" "$T/kw"
k_on_k=$(tree_of "$T/km"); kernel_umount
[ "$p_on_k" = "$k_on_k" ] || fail "pony on the kernel's upper differs: $(diff <(echo "$p_on_k") <(echo "$k_on_k"))"

# The origin xattr is overlayfs's file handle (struct ovl_fb) both ways: a
# file copied up by one implementation keeps, under the other, the inode
# number that implementation gives the lower file.
mkdir -p "$T"/{pu2,pw2,ku2,kw2}
pony_mount "$T/pu2" "$T/pw2"
p_ino=$(stat -c %i "$T/pm/b"); echo p >> "$T/pm/b"; ln "$T/pm/b" "$T/pm/bl"
[ "$(stat -c %i "$T/pm/b")" = "$p_ino" ] || fail "pony: st_ino changed at copy-up"
pony_umount
kernel_mount "$T/ku2" "$T/kw2"
k_ino=$(stat -c %i "$T/km/b"); echo k >> "$T/km/b"
[ "$(stat -c %i "$T/km/b")" = "$k_ino" ] || fail "kernel: st_ino changed at copy-up"
kernel_umount
python3 -c "import os, sys; v = os.getxattr(sys.argv[1], 'trusted.overlay.origin'); sys.exit(not (v[0] == 0 and v[1] == 0xfb and v[2] == len(v) and len(v) > 21))" \
	"$T/pu2/b" || fail "pony's origin is no ovl_fb"
kernel_mount "$T/pu2" "$T/pw2"
[ "$(stat -c %i "$T/km/b")" = "$k_ino" ] || fail "the kernel does not follow pony's origin: $(stat -c %i "$T/km/b") is not $k_ino"
# pony marked the directory impure, so the kernel's readdir agrees with stat.
[ "$(ls -i "$T/km" | awk '$2 == "b" { print $1 }')" = "$k_ino" ] || fail "the kernel's readdir gives b another d_ino than stat"
[ "$(cat "$T/km/b")" = "$(printf 'two\np')" ] || fail "the kernel shows another b on pony's upper"
kernel_umount
pony_mount "$T/ku2" "$T/kw2"
[ "$(stat -c %i "$T/pm/b")" = "$p_ino" ] || fail "pony does not follow the kernel's origin: $(stat -c %i "$T/pm/b") is not $p_ino"
[ "$(cat "$T/pm/b")" = "$(printf 'two\nk')" ] || fail "pony shows another b on the kernel's upper"
pony_umount

[ "$(lower_sum)" = "$before" ] || fail "a lower was modified"

# Bad input: clear errors, nothing mounted.
expect_failure "$PONY" union mount --lower "$T/missing" --upper "$T/pu" --work "$T/pw" "$T/pm"
mkdir -p "$T/l1/in"
expect_failure "$PONY" union mount --lower "$T/l1" --upper "$T/l1/in" --work "$T/pw" "$T/pm"
rmdir "$T/l1/in"
expect_usage_error "$PONY" union mount --upper "$T/pu" --work "$T/pw" "$T/pm"
expect_usage_error "$PONY" union mount --lower "$T/l1" --upper "$T/pu" --work "$T/pw"
mountpoint -q "$T/pm" && fail "a failed mount left a mount behind"

# security.selinux on a host without SELinux: pony refuses the inert label
# (EOPNOTSUPP, so `ls -l` stops asking once per file), and a copy-up still
# keeps it in the upper.
if ! grep -qw selinuxfs /proc/filesystems; then
	mkdir -p "$T"/{l3,pu3,pw3}; echo s > "$T/l3/lab"
	label=system_u:object_r:etc_t:s0
	if python3 -c "import os, sys; os.setxattr(sys.argv[1], 'security.selinux', sys.argv[2].encode())" \
		"$T/l3/lab" "$label" 2>/dev/null; then
		pony_mount "$T/pu3" "$T/pw3" "$T/l3"
		r=$(python3 -c "import os, sys
try: os.getxattr(sys.argv[1], 'security.selinux')
except OSError as e: print(e.strerror)" "$T/pm/lab")
		[ "$r" = "Operation not supported" ] || fail "security.selinux not refused: '$r'"
		chmod 600 "$T/pm/lab"
		pony_umount
		r=$(python3 -c "import os, sys; print(os.getxattr(sys.argv[1], 'security.selinux').decode())" \
			"$T/pu3/lab")
		[ "$r" = "$label" ] || fail "copy-up lost the security.selinux label: '$r'"
	fi
fi

# A lower changed under the mount is refused; a remount works again.
pony_mount "$T/pu" "$T/pw"
ls "$T/pm/e" >/dev/null 2>&1
cat "$T/pm/dmoved/x" >/dev/null || fail "cannot read before the change"
echo changed > "$T/l2/d/x"; touch "$T/l2/d"
sleep 1.2 # past the kernel's attribute cache
if cat "$T/pm/dmoved/x" >/dev/null 2>&1 && ls "$T/pm/dmoved" >/dev/null 2>&1; then
	fail "a changed lower was not refused"
fi
pony_umount
pony_mount "$T/pu" "$T/pw"
[ "$(cat "$T/pm/dmoved/x")" = "changed" ] || fail "after a remount the union does not show the lower"
pony_umount
pass
