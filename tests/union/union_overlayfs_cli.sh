#!/usr/bin/env bash
# tests/union/union_overlayfs_cli.sh - fuse-overlayfs's command line: each
# option of pony-overlayfs (and `pony union mount -o`) parsed and its effect
# seen on a real mount, next to fuse-overlayfs itself over the same layers
# where it has the option: a union of lowers alone (read-only, EROFS, the
# same merged tree), uidmapping/gidmapping, squash_to_root/_uid/_gid,
# static_nlink, volatile/fsync=0, debug, the kernel's mount flags, escaped
# colons; unknown and refused options exit 2 naming the option, and the
# layers never change.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/union_lib.sh"

union_setup cli
require_cmd fuse-overlayfs strace setpriv getfattr
OVL=$(dirname "$PONY")/pony-overlayfs
[ -x "$OVL" ] || fail "$OVL is not built"

# Layers: l1 (top) whites out l2's gone, makes opq opaque, adds to both.
chmod 755 "$T"
mkdir -p "$T"/{l1,l2,u,w,fu,fw,pm,km} "$T/l1/a:b"
echo top > "$T/l1/t"
mknod "$T/l1/gone" c 0 0
mkdir "$T/l1/opq" "$T/l1/both" "$T/l2/opq" "$T/l2/both" "$T/l2/both/sub1" "$T/l2/both/sub2"
setfattr -n trusted.overlay.opaque -v y "$T/l1/opq"
echo hidden > "$T/l2/opq/x"
echo gone > "$T/l2/gone"
echo low > "$T/l2/both/low"
echo up > "$T/l1/both/up"
echo esc > "$T/l1/a:b/e"
echo m1 > "$T/l2/m1"; chown 1:1 "$T/l2/m1"
echo m2 > "$T/l2/m2"; chown 102:103 "$T/l2/m2"
echo m3 > "$T/l2/m3"; chown 4000:4000 "$T/l2/m3"
mkdir -m 1777 "$T/l2/pub"
layers_sum() { (cd "$T" && find l1 l2 -printf '%p %y %m %U %G %s %T@ %C@\n' | sort;
	getfattr -R -d -m - l1 l2 2>/dev/null) | md5sum; }
SUM=$(layers_sum)

# ovl_start MNT OPTS...: pony-overlayfs in the foreground, in the background.
ovl_start() { local m=$1; shift; fuse_daemon_start "$m" "$T/pony.log" pony-overlayfs "$OVL" -f "$@" "$m"; }
fo_start() { local m=$1; shift; fuse-overlayfs "$@" "$m" 2>>"$T/fo.log" || fail "fuse-overlayfs $* failed"; }
stop_both() { pony_umount; fusermount3 -u "$T/km" || fail "fusermount3 -u km"; }
# tree DIR: every name, type, mode, owner and content under DIR.
tree() { (cd "$1" && find . -printf '%p %y %m %U:%G\n' | sort && find . -type f -exec md5sum {} + | sort); }

# 1. Lowers alone: read-only, the same merged tree as fuse-overlayfs's.
ovl_start "$T/pm" -o "lowerdir=$T/l1:$T/l2"
fo_start "$T/km" -o "lowerdir=$T/l1:$T/l2"
[ "$(tree "$T/pm")" = "$(tree "$T/km")" ] ||
	fail "lowers-only tree differs from fuse-overlayfs's: $(diff <(tree "$T/pm") <(tree "$T/km"))"
[ ! -e "$T/pm/gone" ] && [ ! -e "$T/pm/opq/x" ] && [ -e "$T/pm/both/low" ] ||
	fail "whiteout, opaque or merged directory wrong in the lowers-only union"
grep " $T/pm fuse.pony-union ro," /proc/mounts >/dev/null || fail "lowers-only union not mounted ro"
for cmd in "touch $T/pm/new" "rm $T/pm/t" "mkdir $T/pm/d" "mv $T/pm/t $T/pm/t2" \
	"chmod 600 $T/pm/both/low" "rmdir $T/pm/both/sub1" "ln -s x $T/pm/s" \
	"setfattr -n user.x -v 1 $T/pm/t"; do
	err=$($cmd 2>&1) && fail "'$cmd' succeeded on a read-only union"
	case $err in *"Read-only file system"*) ;; *) fail "'$cmd': $err, not EROFS" ;; esac
done
stop_both
# A work directory without an upper is ignored, as the kernel's overlayfs does.
ovl_start "$T/pm" -o "lowerdir=$T/l2,workdir=$T/w"
[ "$(cat "$T/pm/both/low")" = low ] || fail "one-lower union does not show its files"
pony_umount

# 2. Escaped colons, and pony union mount -o with an upper.
"$PONY" union mount -o "lowerdir=$T/l1/a\\:b:$T/l2,upperdir=$T/u,workdir=$T/w" "$T/pm" ||
	fail "pony union mount -o failed"
[ "$(cat "$T/pm/e")" = esc ] && [ "$(cat "$T/pm/m1")" = m1 ] || fail "lowerdir with \\: wrong"
echo new > "$T/pm/n" && mv "$T/pm/n" "$T/pm/n2" && rm "$T/pm/m1" || fail "changes failed"
[ "$(cat "$T/u/n2")" = new ] && [ -c "$T/u/m1" ] || fail "the upper did not get the changes"
fusermount3 -u "$T/pm" || fail "unmount of pony union mount -o"
rm -rf "$T"/u/* "$T"/w/*

# 3. Id mapping and squashing: the same owners as fuse-overlayfs shows.
# (Link counts of merged directories differ by design: pony says 1, as the
# kernel's overlayfs; static_nlink makes them agree.)
owners() { (cd "$1" && stat -c '%n %u:%g' t m1 m2 m3 both opq both/up | sort); }
for o in "uidmapping=0:1000:10:100:2000:5,gidmapping=0:1000:10:100:2000:5" squash_to_root \
	"squash_to_uid=7" "squash_to_gid=8" "squash_to_root,squash_to_uid=9" \
	"uidmapping=0:1000:10,squash_to_gid=5" static_nlink; do
	ovl_start "$T/pm" -o "lowerdir=$T/l1:$T/l2,upperdir=$T/u,workdir=$T/w,$o"
	fo_start "$T/km" -o "lowerdir=$T/l1:$T/l2,upperdir=$T/fu,workdir=$T/fw,$o"
	[ "$(owners "$T/pm")" = "$(owners "$T/km")" ] ||
		fail "-o $o: owners differ from fuse-overlayfs's: $(diff <(owners "$T/pm") <(owners "$T/km"))"
	case $o in
	uidmapping=0:1000:10:100*)
		[ "$(stat -c %u:%g "$T/pm/m2")" = 2002:2003 ] || fail "uidmapping: m2 not 2002:2003"
		[ "$(stat -c %u "$T/pm/m3")" = 65534 ] || fail "uidmapping: unmapped id not 65534"
		# A caller shown as 1003 makes files owned by 3 on disk, as fuse-overlayfs.
		setpriv --reuid 1003 --regid 2001 --clear-groups sh -c "echo x > $T/pm/pub/f" ||
			fail "uidmapping: uid 1003 cannot create in a 1777 directory"
		setpriv --reuid 1003 --regid 2001 --clear-groups sh -c "echo x > $T/km/pub/f"
		[ "$(stat -c %u:%g "$T/u/pub/f")" = 3:101 ] ||
			fail "uidmapping: new file on disk $(stat -c %u:%g "$T/u/pub/f"), not 3:101"
		[ "$(stat -c %u:%g "$T/u/pub/f")" = "$(stat -c %u:%g "$T/fu/pub/f")" ] ||
			fail "uidmapping: on-disk owner differs from fuse-overlayfs's"
		chown 1005:2004 "$T/pm/t" && [ "$(stat -c %u:%g "$T/u/t")" = 5:104 ] ||
			fail "uidmapping: chown 1005:2004 not 5:104 on disk"
		;;
	squash_to_root) [ "$(stat -c %u:%g "$T/pm/m2")" = 0:0 ] || fail "squash_to_root" ;;
	static_nlink)
		mkdir -p "$T/pm/nd/a" "$T/pm/nd/b" "$T/km/nd/a" "$T/km/nd/b"
		[ "$(stat -c %h "$T/pm/nd" "$T/pm/both")" = "$(printf '1\n1')" ] &&
			[ "$(stat -c %h "$T/km/nd" "$T/km/both")" = "$(printf '1\n1')" ] ||
			fail "static_nlink: directories do not say 1 link"
		;;
	esac
	stop_both
	rm -rf "$T"/u/* "$T"/w/* "$T"/fu/* "$T"/fw/*
done

# 4. volatile and fsync=0: an fsync reaches no disk (syncfs under strace).
# (LeakSanitizer cannot run under ptrace: off for this daemon alone.)
syncs() {
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=fsync,fdatasync,syncfs,sync -o "$T/strace" \
		"$OVL" -f -o "lowerdir=$T/l2,upperdir=$T/u,workdir=$T/w$1" "$T/pm" 2>>"$T/pony.log" &
	PONY_PID=$!
	wait_for_mount "$T/pm" "$PONY_PID" "$T/pony.log" pony-overlayfs
	python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$T/pm/both" ||
		fail "fsync of a directory failed"
	pony_umount
	grep -cE 'fsync|syncfs|sync\(' "$T/strace"
}
[ "$(syncs "")" -gt 0 ] || fail "without volatile, fsync of a directory synced nothing"
[ "$(syncs ",volatile")" -eq 0 ] || fail "volatile: the daemon still synced"
[ "$(syncs ",fsync=0")" -eq 0 ] || fail "fsync=0: the daemon still synced"

# 5. Mount flags go to the kernel; debug logs requests; the rest is taken.
ovl_start "$T/pm" -o "lowerdir=$T/l2,upperdir=$T/u,workdir=$T/w,nodev,nosuid,noexec,noatime" \
	-o "noacl,threaded=1,timeout=5,writeback=0,context=system_u:object_r:container_file_t:s0" \
	-o "allow_other,default_permissions,xino=auto,redirect_dir=on,fast_ino=1,splice_read" --debug
grep -E " $T/pm fuse.pony-union rw,nosuid,nodev,noexec,noatime," /proc/mounts >/dev/null ||
	fail "mount flags missing: $(grep " $T/pm " /proc/mounts)"
ls "$T/pm" >/dev/null
grep -q "LOOKUP\|GETATTR\|READDIR" "$T/pony.log" || fail "--debug logged no request"
pony_umount

# 6. Bad command lines: exit 2 naming what is wrong; nothing mounted or written.
expect_named() {
	local want=$1 err rc
	shift
	err=$("$@" 2>&1 >/dev/null); rc=$?
	[ "$rc" -eq 2 ] || fail "'$*' exited $rc, expected 2"
	case $err in *"$want"*) ;; *) fail "'$*' said '$err', not naming '$want'" ;; esac
	mountpoint -q "$T/pm" && fail "'$*' mounted"
	true
}
L="lowerdir=$T/l1:$T/l2"
expect_named "'bogus'" "$OVL" -o "$L,bogus" "$T/pm"
expect_named "fsync: 'maybe'" "$OVL" -o "$L,fsync=maybe" "$T/pm"
expect_named "'-x'" "$OVL" -x -o "$L" "$T/pm"
for o in ino32_t plugins=x xattr_permissions=1 noxattrs=1 redirect_dir=off xino=off max_write=4096; do
	expect_named "'$o' is not supported" "$OVL" -o "$L,$o" "$T/pm"
done
expect_named "uidmapping=0:1000" "$OVL" -o "$L,uidmapping=0:1000" "$T/pm"
expect_named "gidmapping=a:b:c" "$OVL" -o "$L,gidmapping=a:b:c" "$T/pm"
expect_named "squash_to_uid" "$OVL" -o "$L,squash_to_uid=-1" "$T/pm"
expect_named "work directory" "$OVL" -o "$L,upperdir=$T/u" "$T/pm"
expect_named "no lower" "$OVL" -o "upperdir=$T/u,workdir=$T/w" "$T/pm"
expect_named "no mount point" "$OVL" -o "$L"
expect_named "one mount point" "$OVL" -o "$L" "$T/pm" "$T/km"
expect_named "unknown option 'bogus'" "$PONY" union mount -o "$L,bogus" "$T/pm"
err=$("$OVL" -o "lowerdir=$T/nope" "$T/pm" 2>&1); rc=$?
[ "$rc" -eq 1 ] && [[ $err == *"$T/nope"* ]] || fail "missing lower: exit $rc, '$err'"
"$OVL" --help | grep -q lowerdir || fail "--help says nothing of lowerdir"
[ "$(layers_sum)" = "$SUM" ] || fail "the lower layers changed"
pass
