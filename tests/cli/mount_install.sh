#!/usr/bin/env bash
# mount_install.sh - `make install`'s meson install into a DESTDIR puts
# pony, pony-overlayfs and pony-union in PREFIX/bin, the libraries
# (libpony-aio, -blkid, -layout) in PREFIX's libdir, libpony-layout's header
# in PREFIX's includedir (a client builds against them alone), and mount(8)'s helpers
# mount.fuse.pony and mount.fuse.pony-union in DESTDIR/sbin, naming
# PREFIX/bin/pony; the Makefile's target is that command with PREFIX and
# an absolute DESTDIR. Then the installed tree does the work: in a private
# mount namespace, DESTDIR/sbin laid over /sbin and DESTDIR/PREFIX/bin bound
# over PREFIX/bin, the real mount(8) mounts a ponyfs and a union through the
# installed helpers, and the daemon is the installed pony.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
PONY_MOUNT_HELPERS=installed
. "$PONY_SRCDIR/tests/cli/mount_lib.sh" mount-install
require_cmd meson python3

B=$(dirname "$(realpath "$PONY")")
D=$T/root
opt() {
	meson introspect "$B" --buildoptions |
		python3 -c "import json,sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == '$1'))"
}
prefix=$(opt prefix) && bindir=$(opt bindir) && libdir=$(opt libdir) &&
	includedir=$(opt includedir) || fail "meson introspect"
helperdir=$(opt mount_helper_dir)
[ "$helperdir" = /sbin ] || fail "mount_helper_dir is '$helperdir', expected /sbin"
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $includedir in /*) ;; *) includedir=$prefix/$includedir ;; esac

meson install -C "$B" --destdir "$D" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
	fail "meson install --destdir: $(cat "$T/install.log")"
[ -x "$D$bindir/pony" ] && [ ! -L "$D$bindir/pony" ] || fail "no $bindir/pony"
[ "$(readlink "$D$bindir/pony-union")" = pony ] || fail "$bindir/pony-union does not name pony"
# pony-overlayfs is a program of its own (a small one: podman starts many).
[ -x "$D$bindir/pony-overlayfs" ] && [ ! -L "$D$bindir/pony-overlayfs" ] ||
	fail "no $bindir/pony-overlayfs program"
"$D$bindir/pony-overlayfs" --help | grep -q lowerdir || fail "$bindir/pony-overlayfs --help"
for h in mount.fuse.pony mount.fuse.pony-union; do
	[ "$(readlink "$D/sbin/$h")" = "$bindir/pony" ] ||
		fail "/sbin/$h names '$(readlink "$D/sbin/$h")', not $bindir/pony"
done
for lib in libpony-aio libpony-blkid libpony-layout; do
	[ -e "$D$libdir/$lib.so" ] || fail "no $libdir/$lib.so: $(find "$D" -name 'libpony*')"
done
# A direct client built from the installed header and library alone: a
# file off any pony mount is ENOTTY (the header's promise).
cat >"$T/client.c" <<'EOF'
#include <errno.h>
#include <stdint.h>
#include <pony/layout.h>
int main(int argc, char **argv)
{
	struct pony_layout *l;

	return argc == 2 && pony_layout_get_path(argv[1], 0, UINT64_MAX, &l) == -ENOTTY ? 0 : 1;
}
EOF
# A sanitizer build's library needs its runtimes in the client as well.
san=()
[ "${PONY_SANITIZE:-none}" = none ] || san=("-fsanitize=$PONY_SANITIZE")
cc "${san[@]}" -o "$T/client" "$T/client.c" -I"$D$includedir" -L"$D$libdir" -lpony-layout 2>"$T/cc.log" ||
	fail "a client of the installed libpony-layout does not build: $(cat "$T/cc.log")"
LD_LIBRARY_PATH="$D$libdir" "$T/client" /etc/hostname || fail "the installed libpony-layout's client"
# Nothing escaped DESTDIR: the machine's /sbin has no pony helper.
[ ! -e /sbin/mount.fuse.pony ] || fail "/sbin/mount.fuse.pony exists outside DESTDIR"

# The Makefile's target: that install, with PREFIX and DESTDIR made absolute.
make -s -n -C "$PONY_SRCDIR" install PREFIX=/opt/p DESTDIR=rel/dir >"$T/make.out" 2>&1 ||
	fail "make -n install: $(cat "$T/make.out")"
grep -qx "meson configure build --prefix /opt/p" "$T/make.out" &&
	grep -qx "meson install -C build --destdir $PONY_SRCDIR/rel/dir" "$T/make.out" ||
	fail "make install runs: $(cat "$T/make.out")"

# The installed tree at work through mount(8).
helpers_over_sbin "$D/sbin"
mkdir -p "$bindir" 2>/dev/null
mount --bind "$D$bindir" "$bindir" || fail "cannot bind the installed $bindir"
PONY_PREFIX_BOUND=$bindir
truncate -s 96M "$T/one.img"
"$bindir/pony" mkfs "$T/one.img" >/dev/null || fail "the installed pony's mkfs"
mount -t fuse.pony "$T/one.img" "$T/m" || fail "mount(8) through the installed mount.fuse.pony"
mounted_as "$T/m" "$T/one.img" fuse.pony
pid=$(pgrep -f "^/sbin/mount.fuse.pony $T/one.img ") || fail "no daemon run as /sbin/mount.fuse.pony"
[ "$(readlink "/proc/$pid/exe")" = "$bindir/pony" ] ||
	fail "the daemon is $(readlink "/proc/$pid/exe"), not the installed $bindir/pony"
echo data > "$T/m/f" || fail "write through the installed helper's mount"
unmount "$T/m"
mkdir -p "$T/lower" "$T/upper" "$T/work"
echo low > "$T/lower/l"
union_round u "$T/lower" "$T/upper" "$T/work" l low "the installed mount.fuse.pony-union"
pass
