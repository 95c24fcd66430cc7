#!/usr/bin/env bash
# union_passthrough.sh - FUSE passthrough on a union over hostfs: an upper
# file is written and read (read(2), mmap) by the kernel from the host file
# with no WRITE or READ request reaching the daemon (its request counters say
# so) and the same bytes; a lower file is served by the daemon; a lower file
# appended to is copied up and later opens pass through to the upper, also
# when a reader held the lower file open meanwhile (that append once failed
# with EIO); opens of one file share one backing file, and none is left
# registered once all are closed; the lower is untouched. With
# --no-passthrough the daemon serves the reads (the counter counts).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3 python3

T=$(mktemp -d /tmp/pony-union-pt.XXXXXX)
PONY_PID=
cleanup() {
	exec 3<&- 4<&-
	mountpoint -q "$T/m" 2>/dev/null && { fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"; }
	[ -n "$PONY_PID" ] && wait "$PONY_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T"/{l,u,w,m}
head -c $((3 << 20)) /dev/urandom > "$T/l/big"
echo lower > "$T/l/small"
echo held > "$T/l/held"
before=$(cd "$T/l" && find . -type f -exec md5sum {} + | sort)

mount_union() {
	rm -rf "$T/u" "$T/w"; mkdir -p "$T/u" "$T/w"
	fuse_daemon_start "$T/m" "$T/log" "pony union mount" "$PONY" union mount --foreground \
		--lower "$T/l" --upper "$T/u" --work "$T/w" "$@" "$T/m"
}
counter() { "$PONY" fs requests "$T/m" | awk -v k="$1" '$1 == k { n = $2 } END { print n + 0 }'; }
counters() { "$PONY" fs requests "$T/m" | tr '\n' ' '; }

mount_union
# A file made through the union lives in the upper: written and read by the
# kernel itself, no WRITE or READ reaching the daemon.
cp "$T/l/big" "$T/m/made" || fail "copying into the union failed"
[ "$(counter passthrough)" = 1 ] || skip "the kernel took no FUSE passthrough: $(counters)"
cmp -s "$T/m/made" "$T/l/big" || fail "the made file reads differently through the union"
cmp -s "$T/u/made" "$T/l/big" || fail "the upper's made file differs"
[ "$(counter fuse_write)" = 0 ] || fail "writes reached the daemon: $(counters)"
[ "$(counter fuse_read)" = 0 ] || fail "reads reached the daemon: $(counters)"
[ "$(counter passthrough_opens)" -ge 2 ] || fail "the opens did not pass through: $(counters)"
python3 - "$T/m/made" "$T/l/big" <<'PY' || fail "mmap of a passthrough file differs"
import mmap, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "rb") as g:
    assert mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:] == g.read()
PY

# A lower file is served by the daemon (an open for writing may copy it up
# to another host file while it is open, and the kernel binds one host
# file to an inode), with the same bytes.
cmp -s "$T/m/big" "$T/l/big" || fail "the lower big file reads differently through the union"
[ "$(counter fuse_read)" -gt 0 ] || fail "a lower file's reads did not reach the daemon: $(counters)"

# Read, then copied up by an append: later opens pass through to the upper.
[ "$(cat "$T/m/small")" = lower ] || fail "small reads wrong"
echo more >> "$T/m/small" || fail "append after a read failed"
[ "$(cat "$T/m/small")" = "$(printf 'lower\nmore')" ] || fail "after copy-up: $(cat "$T/m/small")"
[ "$(cat "$T/u/small")" = "$(printf 'lower\nmore')" ] || fail "the upper holds: $(cat "$T/u/small")"
writes=$(counter fuse_write)
dd if=/dev/zero of="$T/m/small" bs=1 count=2 seek=1 conv=notrunc status=none ||
	fail "write into the copied-up file failed"
[ "$(od -An -c "$T/m/small" | tr -d ' \n')" = 'l\0\0er\nmore\n' ] ||
	fail "write landed wrong: $(od -An -c "$T/m/small")"
[ "$(counter fuse_write)" = "$writes" ] || fail "writes to the upper reached the daemon: $(counters)"

# A lower file held open for reading while another open copies it up: the
# writer is served (the bug: EIO, the kernel refusing a second host file),
# and once the reader is gone the file passes through again.
exec 3<"$T/m/held"
echo again >> "$T/m/held" || fail "an append while a reader holds the lower file failed"
[ "$(cat "$T/m/held")" = "$(printf 'held\nagain')" ] || fail "held after copy-up: $(cat "$T/m/held")"
exec 3<&-
# Two opens of one upper file share its backing file: a reader held open
# sees what a writer opened meanwhile appends.
for _ in $(seq 1 50); do [ "$(counter passthrough_backing_files)" = 0 ] && break; sleep 0.1; done
opens=$(counter passthrough_opens)
exec 3<"$T/m/held"
exec 4>>"$T/m/held" || fail "a second open of an open file failed"
echo last >&4
[ "$(cat <&3)" = "$(printf 'held\nagain\nlast')" ] || fail "the held reader sees another file"
[ "$(counter passthrough_opens)" = $((opens + 2)) ] || fail "the upper's opens did not pass through: $(counters)"
[ "$(counter passthrough_backing_files)" = 1 ] || fail "two opens, not one backing: $(counters)"
exec 3<&- 4<&-
for _ in $(seq 1 50); do [ "$(counter passthrough_backing_files)" = 0 ] && break; sleep 0.1; done
[ "$(counter passthrough_backing_files)" = 0 ] || fail "backing files left registered: $(counters)"
fuse_daemon_stop "$T/m" "$T/log"

# The daemon serves the same reads without passthrough.
mount_union --no-passthrough
cmp -s "$T/m/big" "$T/l/big" || fail "--no-passthrough: the big file reads differently"
[ "$(counter fuse_read)" -gt 0 ] || fail "--no-passthrough: no READ counted: $(counters)"
[ "$(counter passthrough)" = 0 ] || fail "--no-passthrough still passes through: $(counters)"
fuse_daemon_stop "$T/m" "$T/log"

[ "$(cd "$T/l" && find . -type f -exec md5sum {} + | sort)" = "$before" ] || fail "the lower changed"
pass
