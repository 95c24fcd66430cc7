#!/usr/bin/env bash
# nbd_serve_volume.sh - nbdkit-pony-plugin.so's volume= parameter: the
# members of the volume to serve found through the device database, as
# `pony vol assemble UUID=...` finds them. A RAID5 of image files served
# by `volume=UUID=...` (indexed by `pony dev scan`) takes bytes from
# nbdcopy that `pony vol read` reads back from the images; a RAID5 of
# nbdkit exports (registered by `pony dev register`) is served by
# `volume=LABEL=...` and its bytes are the ones written to the members.
# An unknown volume, a bad spec, and member= with volume= are refused with
# a message that says why, and nbdkit does not start.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-serve-volume
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
require_cmd nbdcopy
export PONY_DEVDB="$T/devdb.sqlite"
plugin=${PONY_NBDKIT_PLUGIN:-$(dirname "$PONY")/src/nbdkit/nbdkit-pony-plugin.so}
[ -f "$plugin" ] || skip "nbdkit-pony-plugin.so was not built (no nbdkit-plugin-dev)"

# Image members, indexed by a scan of their directory; served by UUID.
mkdir "$T/imgs"
for i in 0 1 2 3; do truncate -s 64M "$T/imgs/d$i.img"; done
devs=("$T"/imgs/d{0,1,2,3}.img)
"$PONY" vol create -l 5 "${devs[@]}" >/dev/null || fail "vol create"
uuid=$("$PONY" vol status --json "${devs[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["uuid"])')
"$PONY" dev scan "$T/imgs" >/dev/null || fail "dev scan"
nbd_start_plugin byuuid "" -- "$plugin" "volume=UUID=$uuid"
head -c 12M /dev/urandom >"$T/data"
nbdcopy --flush "$T/data" "$(nbd_uri byuuid)" || fail "nbdcopy to volume=UUID=$uuid"
nbd_kill byuuid
"$PONY" vol read -L 12M "${devs[@]}" | cmp - "$T/data" || fail "the images do not hold what was written"

# NBD members, registered; served by LABEL (a volume stacked on NBD exports).
URIS=()
for i in 0 1 2 3; do
	nbd_start "s$i" "" -- memory 64M
	URIS+=("$(nbd_uri "s$i")")
done
"$PONY" vol create -l 5 -N farvol "${URIS[@]}" >/dev/null || fail "vol create on NBD"
for u in "${URIS[@]}"; do "$PONY" dev register "$u" >/dev/null || fail "register $u"; done
head -c 5M /dev/urandom >"$T/data2"
"$PONY" vol write -f "$T/data2" "${URIS[@]}" || fail "vol write on NBD"
nbd_start_plugin bylabel "" -- "$plugin" "volume=LABEL=farvol"
nbdcopy "$(nbd_uri bylabel)" - | head -c 5M | cmp - "$T/data2" || fail "volume=LABEL=farvol serves other bytes"
nbd_kill bylabel

# Refusals: nbdkit exits non-zero with the plugin's reason.
refused() {
	local want=$1
	shift
	"${PLUGIN_ENV[@]}" nbdkit -f -p "$(nbd_free_port)" -i 127.0.0.1 "$plugin" "$@" >/dev/null 2>"$T/err" &&
		fail "nbdkit started with $*"
	grep -q -- "$want" "$T/err" || fail "nbdkit $*: not said why: $(cat "$T/err")"
}
refused "no member known" "volume=UUID=00000000-0000-0000-0000-000000000000"
refused "expected UUID=... or LABEL=..." "volume=farvol"
refused "name the members twice" "volume=LABEL=farvol" "member=${devs[0]}"
pass
