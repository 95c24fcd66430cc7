#!/usr/bin/env bash
# dev_cli.sh - the device database through the pony binary, on image files
# made by the real mkfs tools: scan, findfs-style find (exit 1 on a miss, 2 on bad usage),
# a rescan reads nothing when nothing changed, a relabel is seen by the
# lookup's stat check, vanished images are not returned, copied images are
# reported as duplicate UUIDs, hard links are one device with two paths,
# remote devices are returned as not connected, forget, watch (inotify),
# --json output, --help everywhere and usage errors.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

require_cmd mkfs.ext4
dir=$(mktemp -d /tmp/pony-devcli.XXXXXX)
watch_pid=
loopdev=
trap '[ -n "$watch_pid" ] && kill $watch_pid 2>/dev/null; [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null; rm -rf "$dir"' EXIT
export PONY_DEVDB=$dir/db/devdb.sqlite
img=$dir/img
mkdir -p "$img"
for i in 1 2 3; do
	truncate -s 32M "$img/e$i.img"
	mkfs.ext4 -q -L "lab$i" "$img/e$i.img" || fail "mkfs.ext4"
done
truncate -s 16M "$img/s.img"
mkswap -L swp "$img/s.img" >/dev/null 2>&1 || fail "mkswap"
truncate -s 4M "$img/blank.img"

for sub in probe scan find list show register forget watch; do
	"$PONY" dev "$sub" --help | grep -q Usage || fail "pony dev $sub --help"
done
expect_usage_error "$PONY" dev find
expect_usage_error "$PONY" dev find notaterm
expect_usage_error "$PONY" dev register not-a-uri
expect_usage_error "$PONY" dev probe -o nosuchformat "$img/e1.img"

out=$("$PONY" dev scan --json "$img") || fail "scan"
python3 -c 'import json,sys; d=json.loads(sys.argv[1])["scan"][0]; assert d["probed"]==5 and d["found"]==4, d' "$out" ||
	fail "first scan: $out"
[ -f "$PONY_DEVDB" ] || fail "no database at PONY_DEVDB"
[ "$(sqlite3 "$PONY_DEVDB" 'PRAGMA journal_mode')" = wal ] || fail "database is not in WAL mode"

[ "$("$PONY" dev find LABEL=lab2)" = "$img/e2.img" ] || fail "find LABEL=lab2"
[ "$("$PONY" dev find TYPE=swap LABEL=swp)" = "$img/s.img" ] || fail "find TYPE=swap LABEL=swp"
"$PONY" dev find TYPE=swap LABEL=lab1 >/dev/null; [ $? -eq 1 ] || fail "AND of two tags matched"
# Exit codes as findfs: 0 found, 1 not found, 2 bad usage.
out=$("$PONY" dev find LABEL=nothing); rc=$?
[ $rc -eq 1 ] && [ -z "$out" ] || fail "a miss: exit $rc, '$out'"
"$PONY" dev find --json LABEL=nothing >/dev/null; rc=$?
[ $rc -eq 1 ] || fail "a --json miss: exit $rc"
err=$("$PONY" dev show LABEL=nothing 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [[ $err == *LABEL=nothing* ]] || fail "show of a miss: exit $rc, '$err'"
err=$("$PONY" dev show "$img/never-there.img" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [[ $err == *never-there.img* ]] || fail "show of an unknown path: exit $rc, '$err'"
expect_usage_error "$PONY" dev find --no-such-option LABEL=x
expect_usage_error "$PONY" dev show
expect_usage_error "$PONY" dev probe

# Nothing changed: nothing is read again.
out=$("$PONY" dev scan --json "$img")
python3 -c 'import json,sys; d=json.loads(sys.argv[1])["scan"][0]; assert d["probed"]==0 and d["unchanged"]==5 and d["bytes_read"]==0, d' "$out" ||
	fail "rescan read again: $out"

# Relabel with the formatting tool: the hit's stat check sees the change.
mkfs.ext4 -q -F -L relabelled "$img/e3.img" || fail "mkfs.ext4 relabel"
"$PONY" dev find LABEL=lab3 >/dev/null; [ $? -eq 1 ] || fail "stale label lab3 still found"
[ "$("$PONY" dev find LABEL=relabelled)" = "$img/e3.img" ] || fail "new label not found after the stat check"

# A vanished image is marked absent and not returned.
rm "$img/e2.img"
"$PONY" dev find LABEL=lab2 >/dev/null; [ $? -eq 1 ] || fail "vanished image still found"
"$PONY" dev list | grep "$img/e2.img" | grep -q absent || fail "vanished image not listed absent"

# A copy shares the UUID: two devices, reported, both kept.
cp "$img/e1.img" "$img/copy.img"
"$PONY" dev scan "$img" >/dev/null || fail "scan after copy"
uuid=$("$PONY" dev show --json LABEL=lab1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"][0]["uuid"])')
[ "$("$PONY" dev list --duplicates | grep -E "^$uuid +$img/(e1|copy).img$" | wc -l)" = 2 ] ||
	fail "duplicate UUID not reported: $("$PONY" dev list --duplicates)"
"$PONY" dev list --duplicates --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["duplicates"]
assert sorted(x["path"] for x in d if x["uuid"] == sys.argv[1]) == [sys.argv[2] + "/copy.img", sys.argv[2] + "/e1.img"], d' "$uuid" "$img" ||
	fail "dev list --duplicates --json"
[ "$("$PONY" dev find --all UUID="$uuid" | wc -l)" -eq 2 ] || fail "find --all did not list both copies"

# Multipath in files: a hard link is another path to the same device.
ln "$img/s.img" "$img/s-link.img"
"$PONY" dev scan "$img" >/dev/null
n=$("$PONY" dev show --json LABEL=swp | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["device"][0]["path"]))')
[ "$n" -eq 2 ] || fail "hard link is not a second path of one device ($n paths)"
[ "$("$PONY" dev find --all LABEL=swp | wc -l)" -eq 1 ] || fail "one device with two paths listed twice"

# Registered before it exists: returned, marked not connected.
"$PONY" dev register nbd://127.0.0.1:10809/vol0 UUID=0f0f0f0f-1111-2222-3333-444455556666 LABEL=netvol ||
	fail "register"
out=$("$PONY" dev find LABEL=netvol 2>"$dir/err") || fail "find remote"
[ "$out" = nbd://127.0.0.1:10809/vol0 ] || fail "remote find printed '$out'"
grep -q "not connected" "$dir/err" || fail "remote device not marked as not connected"
"$PONY" dev list --json | python3 -c '
import json,sys
d=[x for x in json.load(sys.stdin)["devices"] if x["kind"]=="remote"]
assert len(d)==1 and not d[0]["present"] and d[0]["connect"].startswith("nbd://"), d' || fail "remote in list --json"
"$PONY" dev forget nbd://127.0.0.1:10809/vol0 || fail "forget remote"
"$PONY" dev find LABEL=netvol >/dev/null; [ $? -eq 1 ] || fail "forgotten device still found"
expect_failure "$PONY" dev forget "$img/never-there.img"

# watch: inotify sees a new image and a relabel without any scan or lookup of the old label.
"$PONY" dev watch --timeout 20 "$img" 2>"$dir/watch.err" &
watch_pid=$!
for _ in $(seq 50); do grep -q watching "$dir/watch.err" && break; sleep 0.1; done
truncate -s 32M "$img/new.img"
mkfs.ext4 -q -L born "$img/new.img"
for _ in $(seq 50); do
	[ "$("$PONY" dev find LABEL=born 2>/dev/null)" = "$img/new.img" ] && break
	sleep 0.1
done
[ "$("$PONY" dev find LABEL=born)" = "$img/new.img" ] || fail "watch did not add the new image"
kill $watch_pid; watch_pid=

# A block device (a loop device, as root): found, re-probed after mkfs on the
# node (its mtime moves), not returned once detached (size and diskseq change).
if [ "$(id -u)" -eq 0 ] && loopdev=$(losetup -f --show "$img/e1.img" 2>/dev/null); then
	"$PONY" dev scan "$loopdev" >/dev/null || fail "scan $loopdev"
	[ "$("$PONY" dev find --all LABEL=lab1 | grep -c "^$loopdev\$")" -eq 1 ] || fail "loop device not found by label"
	mkfs.ext4 -q -F -L onloop "$loopdev" || fail "mkfs.ext4 on $loopdev"
	"$PONY" dev find --all LABEL=lab1 | grep -q "^$loopdev\$" && fail "stale label on $loopdev"
	# (the backing file carries the new label too: two devices)
	"$PONY" dev find --all LABEL=onloop 2>/dev/null | grep -q "^$loopdev\$" || fail "relabelled loop device not found"
	losetup -d "$loopdev"
	lo=$loopdev loopdev=    # detached: the trap must not detach a reuser's
	"$PONY" dev find --all LABEL=onloop | grep -q "^$lo\$" && fail "detached loop device still found"
fi

# pony volume members: every member of a volume found by the volume's UUID.
vdir=$dir/vol
mkdir -p "$vdir"
for i in 0 1 2; do truncate -s 64M "$vdir/m$i.img"; done
"$PONY" vol create -l raid5 -N dbvol "$vdir/m0.img" "$vdir/m1.img" "$vdir/m2.img" >/dev/null ||
	fail "pony vol create"
"$PONY" dev scan "$vdir" >/dev/null || fail "scan volume members"
vuuid=$("$PONY" dev show --json "$vdir/m0.img" | python3 -c 'import json,sys; t=json.load(sys.stdin)["device"][0]; assert t["type"]=="pony_volume_member" and t["label"]=="dbvol", t; print(t["uuid"])') ||
	fail "volume member tags"
[ "$("$PONY" dev find --all TYPE=pony_volume_member UUID="$vuuid" | wc -l)" -eq 3 ] ||
	fail "not every member found by the volume UUID"
# the start copy destroyed: the end copy still identifies the member
dd if=/dev/zero of="$vdir/m2.img" bs=4096 count=1 conv=notrunc status=none
"$PONY" dev probe -o export "$vdir/m2.img" | grep -qx "UUID=$vuuid" || fail "end superblock copy not used"

# probe output forms
"$PONY" dev probe -o device "$img/e1.img" | grep -qx "$img/e1.img" || fail "probe -o device"
# JSON through libsmartcols: one line a device, a column for every tag any
# device has (lower case, as lsblk's keys), null where a device has none.
"$PONY" dev probe --json "$img/e1.img" "$img/s.img" | python3 -c '
import json, sys
e, s = json.load(sys.stdin)["devices"]
assert e["type"] == "ext4" and e["device"].endswith("/e1.img"), e
assert s["type"] == "swap" and s["label"] == "swp", s
assert set(e) == set(s), (e, s)
assert s["block_size"] is None and e["endianness"] is None, (e, s)   # each one'"'"'s own tag
' || fail "probe --json"
"$PONY" dev probe "$img/blank.img" >/dev/null; [ $? -eq 1 ] || fail "probe of a blank image did not exit 1"

# A database of schema version 1 (before paths.probe_sum) is upgraded in
# place, its devices kept, and scans work on it.
if command -v sqlite3 >/dev/null; then
	old=$dir/v1.sqlite
	sqlite3 "$old" "PRAGMA journal_mode=WAL;
	CREATE TABLE devices(id INTEGER PRIMARY KEY, ident TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
	  connect TEXT, present INTEGER NOT NULL DEFAULT 1, size INTEGER NOT NULL DEFAULT 0,
	  status INTEGER NOT NULL DEFAULT 0, ambivalent TEXT);
	CREATE TABLE paths(path TEXT PRIMARY KEY, device_id INTEGER NOT NULL, parent TEXT, dir TEXT,
	  present INTEGER NOT NULL DEFAULT 1, block INTEGER NOT NULL DEFAULT 0, dev INTEGER,
	  ino INTEGER, size INTEGER, mtime_ns INTEGER, diskseq INTEGER) WITHOUT ROWID;
	CREATE TABLE tags(name TEXT NOT NULL, value TEXT NOT NULL, device_id INTEGER NOT NULL,
	  PRIMARY KEY(name, value, device_id)) WITHOUT ROWID;
	INSERT INTO devices(id, ident, kind, connect, present) VALUES(1, 'r:nbd://h:1/x', 'remote', 'nbd://h:1/x', 0);
	INSERT INTO paths(path, device_id, present) VALUES('nbd://h:1/x', 1, 0);
	INSERT INTO tags VALUES('LABEL', 'oldremote', 1);
	PRAGMA user_version=1;" >/dev/null || fail "making a version 1 database"
	"$PONY" dev scan --db "$old" "$img" >/dev/null || fail "scan on a version 1 database"
	[ "$(sqlite3 "$old" 'PRAGMA user_version')" = 4 ] || fail "version 1 database not upgraded"
	[ "$(sqlite3 "$old" "SELECT count(*) FROM volumes")" = 0 ] || fail "no volumes table after the upgrade"
	sqlite3 "$old" "EXPLAIN QUERY PLAN SELECT path, present, parent FROM paths WHERE device_id=1" |
		grep -q "COVERING INDEX paths_by_device" || fail "upgraded database lacks the covering index"
	"$PONY" dev find --db "$old" LABEL=oldremote | grep -q "nbd://h:1/x" || fail "device of version 1 lost"
	"$PONY" dev find --db "$old" TYPE=swap | grep -q "s.img" || fail "scan into an upgraded database"
fi
pass
