#!/usr/bin/env bash
# ponyfs_posix_attrs.sh - the attribute rules a FUSE daemon must apply
# itself (fstests' generic/314, 375, 444, 633, 683-685, 696, 697), with ext4
# (a directory of the root filesystem) as the oracle: the same steps on both
# must give the same modes and groups.
# - a name made in a set-group-ID directory takes its group; a directory
#   also takes the bit; a file asked for with S_ISGID|S_IXGRP by a caller
#   outside the group loses S_ISGID;
# - a write, truncate or fallocate by an unprivileged caller drops S_ISUID,
#   and S_ISGID when the file is group-executable or the caller is not in
#   its group (the case the kernel's FUSE fallback leaves to the daemon);
#   root keeps them; chown drops them;
# - an access ACL set by a caller outside the file's group drops S_ISGID.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3 setpriv setfacl perl setcap getcap
id nobody >/dev/null 2>&1 || skip "no user nobody"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-attrs
ext4_oracle_and_mount

NB=$(id -u nobody)
NG=$(id -g nobody)
# nobody, without root's groups and capabilities.
as_nobody() { setpriv --reuid="$NB" --regid="$NG" --clear-groups "$@"; }
# create PATH MODE: open(O_CREAT) with exactly MODE (umask 0).
create() { perl -e 'umask 0; sysopen(my $f, $ARGV[0], 64 | 1, oct($ARGV[1])) or die "$ARGV[0]: $!\n"' "$1" "$2"; }

steps() (
	cd "$1" || exit 1
	umask 022
	# Inheritance (generic/314, 444, 633, 696).
	mkdir sg && chgrp daemon sg && chmod 2777 sg
	mkdir sg/sub
	touch sg/file
	mknod sg/fifo p
	ln -s file sg/link
	create sg/rootx 2755                    # root may keep S_ISGID
	as_nobody mkdir sg/nsub
	as_nobody perl -e 'umask 0; sysopen(my $f, "sg/nx", 64 | 1, 02755) or die "$!\n"'
	# Writes, truncation, fallocate (generic/683-685).
	for f in w1 w2 w3 w4 t1 a1 r1 c1 c2; do create $f 666; done
	chmod 2666 w1 && as_nobody sh -c 'echo x >>w1'          # not in group: drop S_ISGID
	chmod 6777 w2 && as_nobody sh -c 'echo x >>w2'          # both go
	chmod 4666 w3 && as_nobody sh -c 'echo x >>w3'
	chgrp "$NG" w4 && chmod 2666 w4 && as_nobody sh -c 'echo x >>w4'  # in group: kept
	chmod 2666 t1 && as_nobody truncate -s 100 t1
	chmod 6666 a1 && as_nobody fallocate -l 8192 a1
	stat -c '%n %a' a1                      # the mode alone: the kernel's cached one
	chmod 6777 r1 && echo x >>r1 && truncate -s 0 r1         # root keeps them
	chmod 6755 c1 && chown daemon c1                         # chown drops S_ISUID and S_ISGID|S_IXGRP
	chmod 2644 c2 && chown daemon c2                         # root's chown keeps S_ISGID without S_IXGRP
	# An access ACL set outside the file's group (generic/375).
	create acl 666 && chown "$NB":daemon acl && chmod 2755 acl
	as_nobody setfacl -m u::rwx,g::rwx,o::rwx acl
	create acl2 666 && chown "$NB":"$NG" acl2 && chmod 2755 acl2
	as_nobody setfacl -m u::rwx,g::rwx,o::rwx acl2          # in group: kept
	# File capabilities go with a write, a chown or a truncation, even
	# root's (the mount hands suid/sgid and capabilities to ponyfs:
	# KILLPRIV_V2); a chmod keeps them.
	for f in k1 k2 k3 k4; do echo x >$f; setcap cap_net_raw+ep $f; done
	echo y >>k1; chown daemon k2; truncate -s 1 k3; chmod 700 k4
	for f in k1 k2 k3 k4; do echo "$f caps: $(getcap $f | awk '{print $2}')"; done
	find . -mindepth 1 ! -type l -printf '%p %M %u %g\n' | sort
)
steps "$T/ref" >"$T/ref.out" 2>&1 || fail "steps on ext4: $(cat "$T/ref.out")"
steps "$T/m" >"$T/pony.out" 2>&1 || fail "steps on ponyfs: $(cat "$T/pony.out")"
diff -u "$T/ref.out" "$T/pony.out" || fail "ponyfs's modes and groups differ from ext4's"
grep -q '^./sg/sub drwxr-sr-x root daemon$' "$T/pony.out" || fail "no inherited set-group-ID directory"
grep -q '^./w1 -rw-rw-rw- root root$' "$T/pony.out" || fail "S_ISGID survived a write by a non-member"
grep -q '^k1 caps: $' "$T/pony.out" || fail "a capability survived a write"
grep -q '^k4 caps: cap_net_raw=ep$' "$T/pony.out" || fail "a chmod dropped a capability"
pony_umount
"$PONY" fsck "$T/img" >"$T/fsck" || fail "fsck: $(cat "$T/fsck")"
pass
