#!/usr/bin/env bash
# layout_race_rebuild.sh - direct readers against a rebuild onto a hot
# spare (issue 21: "no holder ever reads a block that was reused ...
# a test races overwrites, truncates and rebuilds against layout
# readers"): a ponyfs on a RAID6 of six images and an idle hot spare
# (served by nbdkit at a bounded rate, so its rebuild lasts), member 3's
# image served by nbdkit so that it can fail. First member 3 answers
# every read with EIO for a while: direct reads must rebuild around it.
# Then layout_race overwrites, truncates and churns through the mount and
# reads the file through libpony-layout; once it runs, member 3's server
# is killed: the daemon fails the member, the spare takes its place and
# is rebuilt online under the readers. The spare's server is slowed to a
# crawl (nbdkit's rate filter, its rate file) until the race has met the
# rebuild (three reads while a member was failed or rebuilding, each with
# blocks rebuilt from redundancy), so the race always meets it; then the
# rebuild runs at full speed and must finish. Every block read must be
# the file's own of a generation it could hold at the layout's moment.
# Meanwhile the layout names the spare in member 3's place, "rebuilding",
# then "working" with the spare's own member UUID, and a lease got before
# the failure is recalled. Unmounted, fsck finds every block accounted
# for and a scrub finds the parity right, the spare member 3.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3
RACE=${1:?usage: layout_race_rebuild.sh LAYOUT_RACE LAYOUT_LEASE_CHECK}
LEASE=${2:?usage: layout_race_rebuild.sh LAYOUT_RACE LAYOUT_LEASE_CHECK}

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" layout-race-rebuild
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

# 96 MiB members. The spare is served by nbdkit too, through its rate
# filter: at 10 MB/s (80M: it counts bits) until the race runs, then at
# 16 Mbit/s (the rate file) until the readers have met its rebuild.
for i in 0 1 2 3 4 5; do truncate -s 96M "$T/m$i.img"; done
truncate -s 96M "$T/spare.img"
nbd_start s3 "" -- --filter=error file "$T/m3.img" error=EIO error-pread-rate=100% \
	error-pread-file="$T/eio3"
nbd_start spare "" -- --filter=rate file "$T/spare.img" rate=80M rate-file="$T/spare.rate"
# spare_rate BITS: the spare's server's rate from now (nbdkit reads the file anew).
spare_rate() { echo "$1" >"$T/spare.rate.new" && mv "$T/spare.rate.new" "$T/spare.rate"; }
# member3 FIELD: member 3's FIELD in `pony fs layout --json` of the file ref.
member3() {
	"$PONY" fs layout --json "$T/m/ref" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["members"][3][sys.argv[1]])' "$1"
}
spare=$(nbd_uri spare)
members=("$T/m0.img" "$T/m1.img" "$T/m2.img" "$(nbd_uri s3)" "$T/m4.img" "$T/m5.img")
"$PONY" mkfs --data raid6 --assume-clean "${members[@]}" >/dev/null || fail "mkfs --data raid6"
"$PONY" vol add -d "$spare" "${members[@]}" >"$T/add.out" 2>&1 ||
	fail "vol add (spare): $(cat "$T/add.out")"

# Leases of 120 s: the one got before the failure outlives the takeover
# (layout_race.sh races 1 s leases; the readers here return theirs).
pony_mount --commit 50 --layout-lease 120 "${members[@]}" "$spare"

# First member 3's reads all fail (the error filter, once $T/eio3 exists),
# superblock and all, while the daemon still counts it working (read
# errors fail no member): a direct reader rebuilds its blocks from the
# others, leaving the device it cannot assemble out.
head -c 3000000 /dev/urandom >"$T/ref"
cp "$T/ref" "$T/m/ref" && "$PONY" sync "$T/m" || fail "write ref"
touch "$T/eio3"
"$PONY" fs cat --direct --stats "$T/m/ref" 2>"$T/cat.err" | cmp - "$T/ref" ||
	fail "direct read with member 3 unreadable: $(cat "$T/cat.err")"
grep -q " [1-9][0-9]* blocks rebuilt" "$T/cat.err" || fail "nothing rebuilt: $(cat "$T/cat.err")"
rm "$T/eio3"
"$PONY" fs cat --direct "$T/m/ref" | cmp - "$T/ref" || fail "direct read with member 3 back"

# A lease got while every member works: a member change recalls it.
"$LEASE" hold "$T/m/ref" "$T/ref.st" >"$T/hold.out" 2>&1 || fail "lease: $(cat "$T/hold.out")"
[ "$("$LEASE" status "$T/m/ref" "$T/ref.st")" = held ] || fail "the lease is not held"

spare_rate 16M
"$RACE" "$T/m" 20 "$T/ready" "$T/met" >"$T/race.out" 2>&1 &
race=$!
# Member 3's server dies once the race runs (three reads made): the
# daemon's next I/O to it fails it, and the readers' reads of it fail.
for _ in $(seq 1 600); do [ -e "$T/ready" ] || ! kill -0 "$race" 2>/dev/null && break; sleep 0.1; done
nbd_kill s3 KILL
# The spare takes the place, and is rebuilt at a crawl until the readers met it.
for _ in $(seq 1 600); do
	grep -q "hot spare $spare takes failed member 3's place" "$T/pony.log" && break
	kill -0 "$race" 2>/dev/null || break
	sleep 0.1
done
grep -q "hot spare $spare takes failed member 3's place" "$T/pony.log" ||
	fail "the spare did not take member 3's place: $(cat "$T/pony.log")"
[ "$(member3 device) $(member3 state)" = "$spare rebuilding" ] ||
	fail "the layout's member 3 while the spare is rebuilt: $(member3 device) $(member3 state)"
[ "$("$LEASE" status "$T/m/ref" "$T/ref.st")" = recalled ] ||
	fail "the member's failure and the spare did not recall the lease"
for _ in $(seq 1 1200); do [ -e "$T/met" ] || ! kill -0 "$race" 2>/dev/null && break; sleep 0.1; done
grep -q "rebuild of member .* finished" "$T/pony.log" &&
	fail "the spare's rebuild finished at 16 Mbit/s before the readers met it"
spare_rate 100G
wait "$race" || fail "layout_race: $(cat "$T/race.out")"
cat "$T/race.out"
# The race may end before the rebuild does: it goes on without readers.
for _ in $(seq 1 600); do
	grep -q "rebuild of member .* finished" "$T/pony.log" && break
	sleep 0.1
done
grep -q "rebuild of member .* finished" "$T/pony.log" ||
	fail "the spare's rebuild did not finish: $(cat "$T/pony.log")"
[ "$(member3 device) $(member3 state)" = "$spare working" ] ||
	fail "the layout's member 3 after the rebuild: $(member3 device) $(member3 state)"
[ "$(member3 uuid)" = "$("$PONY" dev probe -o export "$T/spare.img" | sed -n 's/^UUID_SUB=//p')" ] ||
	fail "member 3's UUID in the layout is not the spare's: $(member3 uuid)"
# The race met both (the MET file): reads while member 3 was failed or
# rebuilt, and blocks the readers rebuilt from the others.
[ -e "$T/met" ] || fail "no read met the failed or rebuilding member: $(cat "$T/race.out")"
pony_umount

now=("$T/m0.img" "$T/m1.img" "$T/m2.img" "$spare" "$T/m4.img" "$T/m5.img")
"$PONY" fsck "${now[@]}" >"$T/fsck.out" 2>&1 || fail "fsck after the race: $(cat "$T/fsck.out")"
"$PONY" vol scrub "${now[@]}" >"$T/scrub" 2>&1 || fail "vol scrub: $(cat "$T/scrub")"
record_field MISMATCHES <"$T/scrub" | grep -qx 0 || fail "parity wrong after the rebuild: $(cat "$T/scrub")"
pass
