#!/usr/bin/env bash
# nbd_plugin_by_name.sh - `nbdkit pony member=DEV ...` by the plugin's name:
# installed (meson install, which `make install` runs), nbdkit-pony-plugin.so
# sits in nbdkit's own plugin directory (pkg-config's plugindir), where
# nbdkit looks for a plugin named on its command line. In a private mount
# namespace the installed directory is laid over nbdkit's, so nothing of
# the machine's changes, and a RAID5 of image files served as `nbdkit pony
# member=...` gives nbdcopy the bytes `pony vol write` put there.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_cmd unshare meson pkg-config nbdcopy
[ -n "${PONY_PLUGIN_NS:-}" ] ||
	PONY_PLUGIN_NS=1 exec unshare --mount --propagation private "$BASH" "$0" "$@"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-plugin-by-name
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
plugindir=$(pkg-config --variable=plugindir nbdkit) || skip "no nbdkit.pc (nbdkit-plugin-dev)"
[ -f "$(dirname "$PONY")/src/nbdkit/nbdkit-pony-plugin.so" ] ||
	skip "nbdkit-pony-plugin.so was not built (no nbdkit-plugin-dev)"

B=$(dirname "$(realpath "$PONY")")
meson install -C "$B" --destdir "$T/root" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
	fail "meson install --destdir: $(cat "$T/install.log")"
[ -f "$T/root$plugindir/nbdkit-pony-plugin.so" ] ||
	fail "the plugin is not installed into nbdkit's plugin directory $plugindir: $(find "$T/root" -name '*nbdkit*')"
mount --bind "$T/root$plugindir" "$plugindir" || fail "cannot lay the installed $plugindir over nbdkit's"

for i in 0 1 2 3; do truncate -s 32M "$T/d$i.img"; done
devs=("$T"/d{0,1,2,3}.img)
"$PONY" vol create -l 5 "${devs[@]}" >/dev/null || fail "vol create"
head -c 8M /dev/urandom >"$T/data"
"$PONY" vol write -f "$T/data" "${devs[@]}" || fail "vol write"
members=()
for d in "${devs[@]}"; do members+=("member=$d"); done
nbd_start_plugin byname "" -- pony "${members[@]}"
nbdcopy "$(nbd_uri byname)" "$T/out" || fail "nbdcopy from nbdkit pony"
nbd_kill byname
cmp -n $((8 << 20)) "$T/out" "$T/data" || fail "nbdkit pony served other bytes than were written"
pass
