#!/usr/bin/env bash
# fuse_killpriv.sh - privileges still drop on files passed through to the
# host (docs/fuse-requests.md): on a union's upper files, whose writes the
# kernel does itself (FOPEN_PASSTHROUGH, no WRITE reaches the daemon),
# a write by root drops security.capability, so does a chown, and a write
# by a caller without CAP_FSETID drops suid/sgid. The kernel asks the
# daemon for security.capability on a new file's first passed-through
# write() only (KILLPRIV_V2 gives the mount SB_NOSEC, and the answer
# "none" marks the inode S_NOSEC), and no WRITE is counted; a chown asks
# again: the two GETXATTRs an untar pays per file. The same for a host
# directory mounted with pony fs mount-host.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_root
require_fuse
require_cmd fusermount3 python3 setpriv

T=$(mktemp -d /tmp/pony-fuse-killpriv.XXXXXX)
cleanup() {
	mountpoint -q "$T/m" 2>/dev/null && { fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"; }
	rm -rf "$T"
}
trap cleanup EXIT
chmod 711 "$T"
mkdir -p "$T"/{l,u,w,m}
echo lower > "$T/l/f"
fuse_daemon_start "$T/m" "$T/log" "pony union mount" "$PONY" union mount --foreground \
	--lower "$T/l" --upper "$T/u" --work "$T/w" "$T/m"
counter() { "$PONY" fs requests "$T/m" | awk -v k="$1" '$1 == k { n = $2 } END { print n + 0 }'; }
[ "$(counter passthrough)" = 1 ] || skip "the kernel took no passthrough: $("$PONY" fs requests "$T/m" | tr '\n' ' ')"
CAP=0000000200200000000000000000000000000000 # v2, CAP_NET_RAW permitted
setcap_() { python3 -c "import os, sys; os.setxattr(sys.argv[1], 'security.capability', bytes.fromhex('$CAP'))" "$1"; }
hascap() { python3 -c "import os, sys; print('security.capability' in os.listxattr(sys.argv[1]))" "$1"; }

# A new file written in three write()s by root: passed through, one
# GETXATTR (the first write), no WRITE.
opens0=$(counter passthrough_opens); gx0=$(counter fuse_getxattr); wr0=$(counter fuse_write)
python3 -c "import os; fd = os.open('$T/m/n', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
for b in (b'a', b'b', b'c'): os.write(fd, b)
os.close(fd)"
[ "$(cat "$T/m/n")" = abc ] || fail "the new file reads '$(cat "$T/m/n")'"
[ "$(cat "$T/u/n")" = abc ] || fail "the upper file reads '$(cat "$T/u/n")'"
[ "$(counter passthrough_opens)" -gt "$opens0" ] || fail "the created file was not passed through"
[ "$(counter fuse_write)" = "$wr0" ] || fail "a passed-through write reached the daemon"
gx=$(( $(counter fuse_getxattr) - gx0 ))
[ "$gx" = 1 ] || fail "3 passed-through writes made $gx GETXATTRs, not 1"

# security.capability: dropped by root's passed-through write and by chown.
setcap_ "$T/m/n"
[ "$(hascap "$T/m/n")" = True ] || fail "security.capability was not set"
echo d >> "$T/m/n"
[ "$(hascap "$T/m/n")" = False ] || fail "a write by root kept security.capability"
[ "$(hascap "$T/u/n")" = False ] || fail "the upper file kept security.capability"
setcap_ "$T/m/n"
gx0=$(counter fuse_getxattr)
chown 1:1 "$T/m/n"
[ "$(hascap "$T/m/n")" = False ] || fail "a chown kept security.capability"
[ "$(counter fuse_getxattr)" -gt "$gx0" ] || fail "the chown asked no GETXATTR"
[ "$(stat -c %u:%g "$T/u/n")" = 1:1 ] || fail "the chown did not reach the upper"

# suid/sgid: dropped by a write of a caller without CAP_FSETID, kept by root's.
chown 65534:65534 "$T/m/n"
chmod 6777 "$T/m/n"
echo r >> "$T/m/n"
[ "$(stat -c %a "$T/m/n")" = 6777 ] || fail "root's write dropped suid/sgid: $(stat -c %a "$T/m/n")"
setpriv --reuid 65534 --regid 65534 --clear-groups sh -c "echo x >> '$T/m/n'" ||
	fail "the write by nobody failed"
[ "$(stat -c %a "$T/m/n")" = 777 ] || fail "a write by nobody kept suid/sgid: $(stat -c %a "$T/m/n")"
[ "$(stat -c %a "$T/u/n")" = 777 ] || fail "the upper kept suid/sgid: $(stat -c %a "$T/u/n")"
[ "$(cat "$T/m/n")" = "abcd
r
x" ] || fail "the file reads '$(cat "$T/m/n")'"

# A chown drops suid (and sgid with group execute) as the kernel does on
# the host: the daemon decides from the chown's own reply attributes.
for m in 6755 6745 2755 2745 4700; do
	touch "$T/host$m"
	chmod "$m" "$T/host$m" "$T/m/n"
	chown 2:2 "$T/host$m" "$T/m/n"
	want=$(stat -c %a "$T/host$m")
	[ "$(stat -c %a "$T/m/n")" = "$want" ] ||
		fail "chown of a $m file left $(stat -c %a "$T/m/n"), the host $want"
	[ "$(stat -c %a "$T/u/n")" = "$want" ] || fail "the upper has $(stat -c %a "$T/u/n")"
	chown 0:0 "$T/m/n"
done

# The lower is untouched.
[ "$(cat "$T/l/f")" = lower ] || fail "the lower changed"
fuse_daemon_stop "$T/m" "$T/log"

# pony fs mount-host asks for KILLPRIV_V2 too: ten appends to one file, each
# its own open and passed-through write, ask for security.capability once
# (without it, once per write: eleven), and suid/sgid still drop on a write
# by a caller without CAP_FSETID, on the mount and on the host file.
mkdir "$T/h"
fuse_daemon_start "$T/m" "$T/log" "pony fs mount-host" "$PONY" fs mount-host --foreground \
	"$T/h" "$T/m"
[ "$(counter passthrough)" = 1 ] || fail "mount-host took no passthrough where the union did"
gx0=$(counter fuse_getxattr); wr0=$(counter fuse_write)
echo 0 > "$T/m/h"
for i in 1 2 3 4 5 6 7 8 9 10; do echo $i >> "$T/m/h"; done
[ "$(wc -l < "$T/h/h")" = 11 ] || fail "the host file has $(wc -l < "$T/h/h") lines, not 11"
[ "$(counter fuse_write)" = "$wr0" ] || fail "a passed-through write reached the daemon"
gx=$(( $(counter fuse_getxattr) - gx0 ))
[ "$gx" = 1 ] || fail "11 passed-through writes on mount-host made $gx GETXATTRs, not 1"
chmod 6777 "$T/m/h"
echo r >> "$T/m/h"
[ "$(stat -c %a "$T/m/h")" = 6777 ] || fail "root's write dropped suid/sgid on mount-host"
setpriv --reuid 65534 --regid 65534 --clear-groups sh -c "echo x >> '$T/m/h'" ||
	fail "the write by nobody on mount-host failed"
[ "$(stat -c %a "$T/m/h")" = 777 ] ||
	fail "a write by nobody kept suid/sgid on mount-host: $(stat -c %a "$T/m/h")"
[ "$(stat -c %a "$T/h/h")" = 777 ] || fail "the host file kept suid/sgid: $(stat -c %a "$T/h/h")"
[ "$(tail -n 2 "$T/h/h" | tr '\n' ' ')" = "r x " ] || fail "the host file ends '$(tail -n 2 "$T/h/h")'"
fuse_daemon_stop "$T/m" "$T/log"
pass
