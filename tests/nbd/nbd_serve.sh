#!/usr/bin/env bash
# nbd_serve.sh - a pony volume served over NBD (`pony vol serve --nbd`,
# nbdkit with nbdkit-pony-plugin.so): what it advertises is true (size,
# flush, FUA, zero, multi-conn, no trim, the full stripe as preferred block
# size); bytes written with nbdcopy read back through `pony vol read`, and
# the volume is clean after the server stops; qemu-img converts to it (its
# holes become zero writes) and from it; served read-only, writes are
# refused and the members are untouched; the plugin also serves a volume
# whose members are themselves on NBD servers.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-serve
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"
require_cmd nbdcopy nbdinfo qemu-img
"$PONY" vol serve --help | grep -q -- "--nbd ADDR" || fail "no vol serve"
plugin=${PONY_NBDKIT_PLUGIN:-$(dirname "$PONY")/src/nbdkit/nbdkit-pony-plugin.so}
[ -f "$plugin" ] || skip "nbdkit-pony-plugin.so was not built (no nbdkit-plugin-dev)"
"${PLUGIN_ENV[@]}" nbdkit "$plugin" --dump-plugin > "$T/dump" 2>&1 ||
	fail "nbdkit cannot load $plugin: $(cat "$T/dump")"

for i in 0 1 2 3 4 5; do truncate -s 64M "$T/d$i.img"; done
devs=("$T"/d{0,1,2,3,4,5}.img)
"$PONY" vol create -l 6 "${devs[@]}" > /dev/null || fail "create"
size=$("$PONY" vol status --json "${devs[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume"][0]["size"])')

# serve_start NAME ARGS...: `pony vol serve --nbd 127.0.0.1:PORT ARGS...` as server NAME.
serve_start() {
	local name=$1 port
	shift
	port=$(nbd_free_port)
	NBD_PORT[$name]=$port
	"${PLUGIN_ENV[@]}" "$PONY" vol serve --nbd "127.0.0.1:$port" "$@" 2>> "$T/nbdkit-$name.log" &
	NBD_PID[$name]=$!
	nbd_wait "$name" "$port"
}

serve_start vol "${devs[@]}"
uri=$(nbd_uri vol)
nbdinfo --json "$uri" > "$T/info" || fail "nbdinfo"
python3 - "$T/info" "$size" <<'PY' || fail "advertised: $(cat "$T/info")"
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
want = {"export-size": int(sys.argv[2]), "can_flush": True, "can_fua": True, "can_zero": True,
        "can_multi_conn": True, "can_trim": False, "is_read_only": False,
        "block_size_preferred": 262144}
bad = {k: (e.get(k), v) for k, v in want.items() if e.get(k) != v}
sys.exit("wrong: %s" % bad if bad else 0)
PY
head -c 20M /dev/urandom > "$T/data"
nbdcopy --flush "$T/data" "$uri" || fail "nbdcopy to the volume"
nbdcopy "$uri" - | head -c 20M | cmp - "$T/data" || fail "nbdcopy from the volume"
nbd_kill vol
"$PONY" vol read -L 20M "${devs[@]}" | cmp - "$T/data" || fail "pony vol read after nbdcopy"
"$PONY" vol status "${devs[@]}" > "$T/out" || fail "not clean after the server stopped: $(cat "$T/out")"

# A sparse image: qemu-img writes its holes as NBD zero requests.
truncate -s 12M "$T/sparse"
head -c 1M /dev/urandom | dd of="$T/sparse" bs=1M seek=5 conv=notrunc status=none
serve_start vol2 "${devs[@]}"
qemu-img convert -n -f raw -O raw "$T/sparse" "$(nbd_uri vol2)" || fail "qemu-img convert to NBD"
qemu-img convert -f raw -O raw "$(nbd_uri vol2)" "$T/back" || fail "qemu-img convert from NBD"
nbd_kill vol2
cmp -n 12M "$T/sparse" "$T/back" || fail "qemu-img round trip differs"
"$PONY" vol read -L 12M "${devs[@]}" | cmp - "$T/sparse" || fail "zeroed holes differ"

# Read-only: writes refused, members untouched.
md5sum "${devs[@]}" > "$T/sums"
serve_start ro --read-only "${devs[@]}"
nbdcopy "$T/data" "$(nbd_uri ro)" 2> /dev/null && fail "wrote to a read-only export"
nbd_kill ro
md5sum -c --quiet "$T/sums" || fail "a read-only export changed the members"

# Members on NBD servers, the volume served over NBD again.
nbd_six file "$T/d%i.img"
serve_start stack "${URIS[@]}"
nbdcopy "$(nbd_uri stack)" - | head -c 12M | cmp - "$T/sparse" || fail "read through two NBD hops differs"

expect_usage_error "$PONY" vol serve "${devs[@]}"
expect_usage_error "$PONY" vol serve --nbd 127.0.0.1:99999 "${devs[@]}"
pass
