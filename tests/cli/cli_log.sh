#!/usr/bin/env bash
# cli_log.sh - a mount daemon logs its events to --log FILE, one line each
# (issue 18, point 5): the mount, a checksum that fails with nothing to
# repair it from (naming the block), the unmount; a --log that cannot be
# written is refused before anything is mounted.
set -u
. "$(dirname "$0")/../lib.sh"
PONY=${PONY:?}
require_root
require_fuse
workdir cli-log
mkdir "$T/m"
truncate -s 64M "$T/a.img"
"$PONY" mkfs "$T/a.img" >/dev/null 2>&1 || fail "mkfs"

fuse_daemon_start "$T/m" "$T/err" "pony mount" "$PONY" mount -f --log "$T/pony.log" "$T/a.img" "$T/m"
python3 -c 'import sys; sys.stdout.write("PONYLOGMARK" * 400)' >"$T/m/file"
fuse_daemon_stop "$T/m" "$T/err"
grep -q "notice: .*a.img (ponyfs) mounted at $T/m" "$T/pony.log" || fail "no mount line: $(cat "$T/pony.log")"
grep -q "notice: .*a.img unmounted from $T/m" "$T/pony.log" || fail "no unmount line: $(cat "$T/pony.log")"

# Corrupt the file's data block on the image (one image: no redundancy).
off=$(grep -obUa PONYLOGMARKPONYLOGMARK "$T/a.img" | head -1 | cut -d: -f1)
[ -n "$off" ] || fail "the file's data is not on the image"
printf 'X' | dd of="$T/a.img" bs=1 seek=$((off + 100)) conv=notrunc status=none
fuse_daemon_start "$T/m" "$T/err" "pony mount" "$PONY" mount -f --log "$T/pony.log" "$T/a.img" "$T/m"
cat "$T/m/file" >/dev/null 2>&1 && fail "a corrupt block was read back as data"
fuse_daemon_stop "$T/m" "$T/err"
grep -E "ponyfs [0-9a-f-]+: inode [0-9]+ offset [0-9]+: data block [0-9]+ failed its checksum" "$T/pony.log" >/dev/null ||
	fail "the checksum failure was not logged: $(cat "$T/pony.log")"
[ "$(grep -c . "$T/pony.log")" -ge 5 ] || fail "fewer lines than events: $(cat "$T/pony.log")"

"$PONY" mount --log /nonexistent/dir/x.log "$T/a.img" "$T/m" 2>"$T/err2" && fail "--log to nowhere mounted"
grep -q "/nonexistent/dir/x.log" "$T/err2" || fail "the bad --log was not named: $(cat "$T/err2")"
mountpoint -q "$T/m" && fail "mounted despite the bad --log"
pass
