# tests/cli/mount_lib.sh - what the mount(8) tests share: the real mount(8)
# and umount(8) in a private mount namespace (`unshare -m --propagation
# private`: nothing they mount is seen outside, and the machine's /sbin
# stays as it is), where /sbin holds mount.fuse.pony and
# mount.fuse.pony-union, links to the pony under test, as `make install`
# puts them there: a kernel overlay of a directory of those links over
# /usr/sbin (mount(8) finds helpers in /sbin only). A scratch directory $T
# (mount point $T/m), the daemons' pids, and fstab lines in $T/fstab,
# given to mount(8) with -T. Skips only without /dev/fuse (and as non-root,
# which mount(8) of a FUSE type needs).
# Source it after tests/lib.sh: `. "$PONY_SRCDIR/tests/cli/mount_lib.sh" NAME`.

require_root
require_fuse
require_cmd unshare mount umount findmnt
if [ -z "${PONY_MOUNT_NS:-}" ]; then
	PONY_MOUNT_NS=1 exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi

T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
mount_cleanup() {
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$T/" | sort -r); do umount "$m" 2>/dev/null ||
		umount -l "$m"; done
	umount /usr/sbin 2>/dev/null
	[ -z "${PONY_PREFIX_BOUND:-}" ] || umount "$PONY_PREFIX_BOUND" 2>/dev/null
	rm -rf "$T"
}
trap mount_cleanup EXIT
mkdir -p "$T/m" "$T/sbin"

# helpers_over_sbin DIR: DIR's mount.fuse.pony and mount.fuse.pony-union
# seen in /sbin, over the machine's own helpers.
helpers_over_sbin() {
	mount -t overlay overlay -o "lowerdir=$1:/usr/sbin" /usr/sbin ||
		fail "cannot lay $1 over /usr/sbin in the private namespace"
	[ -L /sbin/mount.fuse.pony ] && [ -L /sbin/mount.fuse.pony-union ] ||
		fail "no mount.fuse.pony helpers in /sbin"
}
# mount.fuse.pony runs `pony` under that name: argv[0] picks the helper.
# (PONY_MOUNT_HELPERS=installed: the test lays its own, after make install.)
if [ "${PONY_MOUNT_HELPERS:-}" != installed ]; then
	for h in mount.fuse.pony mount.fuse.pony-union; do
		ln -s "$(realpath "$PONY")" "$T/sbin/$h"
	done
	helpers_over_sbin "$T/sbin"
fi

# fstab LINE...: $T/fstab holds exactly these lines.
fstab() { printf '%s\n' "$@" > "$T/fstab"; }

# mounted_as MNT SOURCE TYPE: /proc/mounts says MNT is SOURCE of TYPE.
mounted_as() {
	local src type
	read -r src type <<<"$(findmnt -n -o SOURCE,FSTYPE --mountpoint "$1")"
	[ "$src" = "$2" ] || fail "$1: source '$src', expected '$2'"
	[ "$type" = "$3" ] || fail "$1: type '$type', expected '$3'"
	awk -v m="$1" -v t="$3" '$2 == m && $3 == t { f = 1 } END { exit !f }' /proc/mounts ||
		fail "/proc/mounts: $(grep " $1 " /proc/mounts)"
}

# union_round NAME LOWER UPPER WORK FILE TEXT WHAT: `mount -t fuse.pony-union
# NAME $T/m` of those layers (WHAT says how, for the messages); it is NAME
# of type fuse.pony-union, FILE reads TEXT through it; then umount.
union_round() {
	mount -t fuse.pony-union "$1" "$T/m" -o "lowerdir=$2,upperdir=$3,workdir=$4" ||
		fail "mount through $7"
	mounted_as "$T/m" "$1" fuse.pony-union
	[ "$(cat "$T/m/$5")" = "$6" ] || fail "$5 through $7's mount"
	unmount "$T/m"
}

# unmount MNT: umount(8), and MNT is no mount point after it.
unmount() {
	umount "$1" || fail "umount $1"
	! mountpoint -q "$1" || fail "$1 is still mounted after umount"
}

# daemon_of MNT: the pid of the pony serving MNT (argv: HELPER SRC MNT ...).
daemon_of() {
	local p exe args
	exe=$(realpath "$PONY")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$exe" ] || continue
		mapfile -d '' -t args < "$p/cmdline" 2>/dev/null || continue
		[ "${args[2]:-}" = "$1" ] && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}
