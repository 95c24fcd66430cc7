#!/usr/bin/env bash
# ponyfs_acl.sh - POSIX ACLs on a real ponyfs mount, with ext4 (a directory
# of the root filesystem) as the oracle: the same setfacl/chmod/create
# sequence on both must give the same getfacl output and modes (the mode
# follows the access ACL, chmod rewrites the ACL, a default ACL is
# inherited at create without the umask), and the kernel must enforce the
# ACL for another uid (nobody reads through a named entry, then loses it).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd setfacl fusermount3
id nobody >/dev/null 2>&1 || skip "no user nobody"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" ponyfs-acl
ext4_oracle_and_mount

# The same steps in a directory; prints what getfacl and ls say of it.
steps() (
	cd "$1" || exit 1
	umask 022
	echo secret >f && chmod 600 f
	setfacl -m u:nobody:r f
	setfacl -m g:daemon:rw,m::r f           # a narrower mask than the entries
	chmod 640 f                             # rewrites user::, mask:: and other::
	mkdir d
	setfacl -d -m u:nobody:rwx,g::r-x,o::- d
	touch d/x                               # inherits; the umask does not apply
	mkdir d/sub                             # inherits both ACLs
	mkdir -m 700 d/tight                    # the requested mode masks the default
	ln -s f d/link                          # symlinks get no ACL
	touch plain && setfacl -m u::rwx,g::r,o::r plain  # equivalent to a mode: no ACL kept
	touch plain2 && setfacl -m u:nobody:rw plain2 && setfacl -b plain2  # ACL gone again
	find . -mindepth 1 | sort | xargs getfacl -p 2>&1
	find . -printf '%p %M\n' | sort
)
steps "$T/ref" >"$T/ref.out" || fail "steps on ext4"
steps "$T/m" >"$T/pony.out" || fail "steps on ponyfs"
diff -u "$T/ref.out" "$T/pony.out" || fail "ponyfs's ACLs differ from ext4's"
grep -q 'user:nobody:rwx' "$T/pony.out" || fail "no inherited entry seen"

# Enforcement by the kernel for another uid.
as_nobody() { su nobody -s /bin/sh -c "$1" 2>/dev/null; }
echo data >"$T/m/g" && chmod 600 "$T/m/g"
as_nobody "cat $T/m/g" && fail "nobody read a 600 file"
setfacl -m u:nobody:r "$T/m/g"
[ "$(as_nobody "cat $T/m/g")" = data ] || fail "nobody cannot read through u:nobody:r"
as_nobody "echo x >>$T/m/g" && fail "nobody wrote through a read-only entry"
chmod g-r "$T/m/g"                              # the mask now denies the named entry
as_nobody "cat $T/m/g" && fail "the mask did not limit u:nobody"
setfacl -m m::r "$T/m/g"
[ "$(as_nobody "cat $T/m/g")" = data ] || fail "restored mask not honoured"
setfacl -x u:nobody "$T/m/g"
as_nobody "cat $T/m/g" && fail "removed entry still grants"
mkdir "$T/m/shared" && chmod 700 "$T/m/shared" && setfacl -d -m u:nobody:rwx "$T/m/shared"
setfacl -m u:nobody:rwx "$T/m/shared"
as_nobody "echo mine >$T/m/shared/n" || fail "nobody cannot create through a directory ACL"
[ "$(stat -c %U "$T/m/shared/n")" = nobody ] || fail "the new file is not nobody's"

# Everything survives a remount and fsck is clean.
getfacl -R -p "$T/m" >"$T/before" 2>&1
pony_umount
"$PONY" fsck "$T/img" >/dev/null || fail "fsck after ACL work"
pony_mount "$T/img"
getfacl -R -p "$T/m" >"$T/after" 2>&1
diff -u "$T/before" "$T/after" || fail "ACLs changed across a remount"
pass
