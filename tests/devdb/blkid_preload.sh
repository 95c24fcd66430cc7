#!/usr/bin/env bash
# blkid_preload.sh - libpony-blkid.so under the real findfs(8) and a plain
# libblkid program: image files libblkid cannot see (they are not block
# devices) resolve through the devdb index with the library preloaded, and
# do not without it; a spec the index lacks still falls through to libblkid.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_cmd findfs mkfs.ext4
[ -f "$PONY_BLKID_SO" ] || fail "libpony-blkid.so not built at $PONY_BLKID_SO"
# An ASan build of the library needs the sanitizer runtimes loaded first.
PRE="$(ldd "$PONY_BLKID_SO" | awk '/libasan|libubsan/ {printf "%s ", $3}')$PONY_BLKID_SO"
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
dir=$(mktemp -d /tmp/pony-blkidso.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export PONY_DEVDB=$dir/devdb.sqlite
label="pl$RANDOM$RANDOM"
truncate -s 32M "$dir/a.img"
mkfs.ext4 -q -L "$label" "$dir/a.img" || fail "mkfs.ext4"
"$PONY" dev scan "$dir" >/dev/null || fail "scan"
uuid=$("$PONY" dev probe -o export "$dir/a.img" | sed -n 's/^UUID=//p')

findfs LABEL="$label" >/dev/null 2>&1 && fail "plain findfs already finds an image file?"
out=$(LD_PRELOAD=$PRE findfs LABEL="$label") || fail "findfs LABEL= under LD_PRELOAD failed"
[ "$out" = "$dir/a.img" ] || fail "findfs printed '$out'"
out=$(LD_PRELOAD=$PRE findfs UUID="$uuid") || fail "findfs UUID= under LD_PRELOAD failed"
[ "$out" = "$dir/a.img" ] || fail "findfs UUID printed '$out'"
LD_PRELOAD=$PRE findfs LABEL=not-$label >/dev/null 2>&1 && fail "findfs found a missing label"

out=$(LD_PRELOAD=$PRE "$BLKID_CLIENT" LABEL="$label") || fail "blkid_client"
[ "$out" = "$(printf '%s\n%s\n%s' "$dir/a.img" "$dir/a.img" "$dir/a.img")" ] ||
	fail "evaluate_spec/evaluate_tag/get_devname answered: $out"
out=$("$BLKID_CLIENT" LABEL="$label")
[ "$out" = "$(printf -- '-\n-\n-')" ] || fail "libblkid alone resolved an image file: $out"
pass
