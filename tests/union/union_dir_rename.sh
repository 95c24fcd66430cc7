#!/usr/bin/env bash
# union_dir_rename.sh - directory renames and hard links on a real FUSE
# mount, compared with the kernel's overlayfs over the same layers (the
# oracle, redirect_dir=on):
#  - a directory renamed onto a whiteout (of a file or of a directory, with
#    and without RENAME_NOREPLACE) takes the name, opaque to the lowers; so
#    does mkdir, and a file renamed onto one;
#  - a lower directory moved under a new upper-only directory keeps its
#    contents and st_ino after a remount (the redirect is followed), and
#    again when that upper is a lower of a new union, before and after the
#    new union copies it up;
#  - a lookup of one name of a lower hard link whose other name was copied
#    up writes nothing to the upper and shares the inode, as the kernel's
#    overlayfs with index=on does (its link count and data too).
# The lowers are checksummed before and after and must never change.
#
# Arguments are extra `pony union mount` options (meson: defaults, and
# --writeback --threads 4).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/union/union_lib.sh"
PONY_OPTS=("$@")
union_setup dr
UNION_LOWERS=$T/l

# What a tree shows: names, types, modes, sizes, link counts of files, data.
tree_of() {
	(cd "$1" && find . \( -type d -printf '%p %y %m\n' \) -o -printf '%p %y %m %s %n\n' | sort &&
	 find . -type f -exec md5sum {} + | sort -k2)
}
# What an upper holds: names, types, whiteouts, opaque directories, and
# which directories have a redirect (pony's are absolute, the kernel's
# relative within one directory: either reaches the same lower).
upper_of() {
	python3 - "$1" <<'PY'
import os, stat, sys
top = sys.argv[1]
for d, dirs, files in sorted(os.walk(top)):
    for n in sorted(dirs + files):
        p = os.path.join(d, n); st = os.lstat(p); x = os.path.relpath(p, top)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
            print(x, "whiteout")
        elif stat.S_ISDIR(st.st_mode):
            a = os.listxattr(p, follow_symlinks=False)
            print(x, "dir", "opaque" if "trusted.overlay.opaque" in a else "",
                  "redirect" if "trusted.overlay.redirect" in a else "")
        else:
            print(x, stat.filemode(st.st_mode)[0], st.st_nlink)
PY
}
lower_sum() { (cd "$T" && tree_of l && find l -printf '%p %T@ %C@\n' | sort) | md5sum; }

# same WHAT OP: OP (a shell command) prints the same and exits the same in
# the pony mount and the kernel's.
same() {
	local p k
	p=$(cd "$T/pm" && bash -c "$2" 2>&1; echo "rc=$?")
	k=$(cd "$T/km" && bash -c "$2" 2>&1; echo "rc=$?")
	[ "$p" = "$k" ] || fail "$1: '$2' differs:
--- pony
$p
--- kernel overlayfs
$k"
}
# same_trees WHAT: the two mounts show the same tree.
same_trees() {
	local p k
	p=$(tree_of "$T/pm"); k=$(tree_of "$T/km")
	[ "$p" = "$k" ] || fail "$1: trees differ: $(diff <(echo "$p") <(echo "$k"))"
}

mkdir -p "$T"/{l,pm,km} "$T"/p{u,w}{1,2,3} "$T"/k{u,w}{1,2,3}
(
	cd "$T/l" && mkdir -p wd1/in wd2 wd3 md/sub mv/deep && echo i > wd1/in/i &&
	echo f > wf1 && echo f > wf2 && echo f > wf3 && echo m > md/m && echo s > md/sub/s &&
	echo v > mv/v && echo d > mv/deep/d && echo h > h1 && ln h1 h2 && ln h1 h3
) || fail "cannot build the lower"
before=$(lower_sum)

# renameat2(A, B, RENAME_NOREPLACE): prints the error, if any.
noreplace='python3 -c "import ctypes, os, sys; l = ctypes.CDLL(None, use_errno=True); r = l.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 1); print(\"noreplace:\", os.strerror(ctypes.get_errno()) if r else \"ok\")"'

# 1. Renames onto whiteouts.
pony_mount "$T/pu1" "$T/pw1"
kernel_mount "$T/ku1" "$T/kw1"
ops=(
	'rm -r wd1; mkdir n1; touch n1/new; mv -T n1 wd1; echo $?; ls -a wd1'
	'rm wf1; mkdir n2; mv -T n2 wf1; echo $?; ls -a wf1'
	"rmdir wd2; mkdir n3; $noreplace n3 wd2; ls -a wd2"
	"rm wf2; mkdir n4; $noreplace n4 wf2; ls -a wf2"
	'rmdir wd3; touch n5; mv -T n5 wd3; echo $?; stat -c %F wd3'
	'rm wf3; mkdir wf3; ls -a wf3'
	'rm -r mv; mv md mv; echo $?; ls -a mv mv/sub'
	'mkdir n6; mv -T n6 md; ls -a md; rmdir md; ls -a md 2>&1 | sed "s/.*: //"'
)
for op in "${ops[@]}"; do same "rename onto a whiteout" "$op"; done
same_trees "after the renames onto whiteouts"
pony_umount
kernel_umount
p=$(upper_of "$T/pu1"); k=$(upper_of "$T/ku1")
[ "$p" = "$k" ] || fail "the uppers differ after renames onto whiteouts: $(diff <(echo "$p") <(echo "$k"))"
pony_mount "$T/pu1" "$T/pw1"
kernel_mount "$T/ku1" "$T/kw1"
same_trees "renames onto whiteouts, remounted"
pony_umount
kernel_umount

# 2. A lower directory moved under a new upper-only directory: its
# redirect is followed after a remount, and its st_ino stays.
pony_mount "$T/pu2" "$T/pw2"
kernel_mount "$T/ku2" "$T/kw2"
same "move under a new directory" 'mkdir nn; mv mv nn/x; mkdir nn/y; mv md nn/y/z; ls nn/x nn/y/z'
ino=$(stat -c '%i %i %i' "$T/pm/nn/x" "$T/pm/nn/x/v" "$T/pm/nn/y/z")
pony_umount
kernel_umount
pony_mount "$T/pu2" "$T/pw2"
kernel_mount "$T/ku2" "$T/kw2"
same_trees "moved directories, remounted"
[ "$(stat -c '%i %i %i' "$T/pm/nn/x" "$T/pm/nn/x/v" "$T/pm/nn/y/z")" = "$ino" ] ||
	fail "st_ino of a moved directory changed at a remount"
pony_umount
kernel_umount
# Each upper shows the same through the other implementation.
kernel_mount "$T/pu2" "$T/pw2"
k=$(tree_of "$T/km"); kernel_umount
pony_mount "$T/pu2" "$T/pw2"
p=$(tree_of "$T/pm"); pony_umount
[ "$p" = "$k" ] || fail "pony's upper with redirects differs under the kernel: $(diff <(echo "$p") <(echo "$k"))"

# 3. That upper as a lower of a new union: the lower's redirects are
# followed, before and after the new union copies the directory up.
pony_mount "$T/pu3" "$T/pw3" "$T/pu2:$T/l"
kernel_mount "$T/ku3" "$T/kw3" "$T/pu2:$T/l"
same_trees "the upper with redirects as a lower"
ino=$(stat -c '%i %i' "$T/pm/nn/x" "$T/pm/nn/y/z")
pony_umount
pony_mount "$T/pu3" "$T/pw3" "$T/pu2:$T/l"
[ "$(stat -c '%i %i' "$T/pm/nn/x" "$T/pm/nn/y/z")" = "$ino" ] ||
	fail "st_ino of a directory redirected in a lower changed at a remount"
same "change under a directory redirected in a lower" \
	'touch nn/x/new nn/y/z/sub/new; mv nn/y/z nn/zz; ls nn/x nn/zz nn/zz/sub'
pony_umount
kernel_umount
pony_mount "$T/pu3" "$T/pw3" "$T/pu2:$T/l"
kernel_mount "$T/ku3" "$T/kw3" "$T/pu2:$T/l"
same_trees "a directory redirected in a lower, copied up and remounted"
[ "$(stat -c '%i %i' "$T/pm/nn/x" "$T/pm/nn/zz")" = "$ino" ] ||
	fail "st_ino of a directory redirected in a lower changed at its copy-up"
pony_umount
kernel_umount

# 4. Hard links, as the kernel's overlayfs with index=on: looking up h2
# after h1 was moved (copied up) leaves h2 lower-only, one inode with h1.
rm -rf "$T"/{pu1,pw1,ku1,kw1}; mkdir -p "$T"/{pu1,pw1,ku1,kw1}
pony_mount "$T/pu1" "$T/pw1"
kernel_mount "$T/ku1" "$T/kw1" "" index=on
links='stat -c "%n %h" hb h2 h3; [ "$(stat -c %i hb)" = "$(stat -c %i h2)" ] && echo one inode; cat h2'
same "hard link, other name moved" "mv h1 hb; echo more >> hb; $links"
p=$(upper_of "$T/pu1"); k=$(upper_of "$T/ku1")
[ "$p" = "$k" ] || fail "a lookup of a hard link's other name changed the upper: $(diff <(echo "$p") <(echo "$k"))"
pony_umount
kernel_umount
pony_mount "$T/pu1" "$T/pw1"
kernel_mount "$T/ku1" "$T/kw1" "" index=on
same "hard link after a remount" "$links"
p=$(upper_of "$T/pu1"); k=$(upper_of "$T/ku1")
[ "$p" = "$k" ] || fail "a lookup after a remount changed the upper: $(diff <(echo "$p") <(echo "$k"))"
same "hard link's other names changed" 'rm h2; stat -c "%n %h" hb h3; mv h3 h4; stat -c "%n %h" hb h4; cat h4'
pony_umount
kernel_umount
p=$(upper_of "$T/pu1"); k=$(upper_of "$T/ku1")
[ "$p" = "$k" ] || fail "the uppers differ after hard link changes: $(diff <(echo "$p") <(echo "$k"))"

[ "$(lower_sum)" = "$before" ] || fail "the lower was modified"
pass
