#!/usr/bin/env bash
# nbd_crash.sh - ponyfs's crash guarantees over NBD, on a RAID6 of six
# nbdkit servers that each hold writes in a volatile cache (nbdkit's cache
# filter, cache=writeback: a write reaches the image file only when the
# client flushes, as a disk's write cache). Under a load of fsynced new
# files, unsynced new files and fsynced rename-overs, every server and
# the mount are killed at once (SIGKILL: the servers' caches are lost, as
# in a power cut of the whole cluster), the servers restarted on their
# images, and the oracle of tests/ponyfs/crash checked on what is left:
# fsck is clean; every file whose fsync returned holds its bytes; a
# rename-over target holds one whole version, the last acknowledged or a
# later one; an unsynced file is absent or a prefix of what was written.
# Three rounds on the same filesystem, each crash at another moment. It
# fails if pony's flushes do not reach the servers (nbd.c's flush path),
# where nothing acknowledged may be lost.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3 python3
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-crash
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

# servers_start: the six servers, each its image behind a volatile cache.
servers_start() {
	local i
	URIS=()
	for i in 0 1 2 3 4 5; do
		nbd_start "s$i" "${NBD_PORT[s$i]:-}" -- --filter=cache file "$T/d$i.img" cache=writeback
		URIS+=("$(nbd_uri "s$i")")
	done
}
for i in 0 1 2 3 4 5; do truncate -s 96M "$T/d$i.img"; done
servers_start
"$PONY" mkfs --data raid6 --metadata mirror "${URIS[@]}" > "$T/out" 2>&1 || fail "mkfs: $(cat "$T/out")"

for round in 1 2 3; do
	pony_mount "${URIS[@]}"
	mkdir -p "$T/m/r$round" || fail "mkdir r$round"
	# The load: before each step, what it may leave ("try NAME SHA" for an
	# unsynced or a new file, "ver NAME SHA" for a rename-over's version);
	# after an fsync returned, "ack NAME SHA".
	python3 - "$T/m/r$round" "$T/journal$round" <<'PY' > "$T/load$round.out" 2>&1 &
import hashlib, os, random, sys
d, journal = sys.argv[1:]
log = open(journal, "w", buffering=1)
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
i = 0
while True:
    data = os.urandom(random.choice((4096, 70000, 300000)))
    sha = hashlib.sha256(data).hexdigest()
    kind = i % 3
    if kind == 0:                          # a new file, fsynced
        name = "n%05d" % i
        log.write("try %s %s\n" % (name, sha))
        with open(os.path.join(d, name), "wb") as f:
            f.write(data); f.flush(); os.fsync(f.fileno())
        log.write("ack %s %s\n" % (name, sha))
    elif kind == 1:                        # a new file, never synced
        name = "u%05d" % i
        with open(journal + "." + name, "wb") as f:
            f.write(data)                  # the reference, kept off the volume
        log.write("try %s %s\n" % (name, sha))
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    else:                                  # a rename-over of one of four names
        name = "r%d" % (i % 4)
        tmp = os.path.join(d, "tmp%05d" % i)
        with open(tmp, "wb") as f:
            f.write(data); f.flush(); os.fsync(f.fileno())
        log.write("ver %s %s\n" % (name, sha))
        os.rename(tmp, os.path.join(d, name))
        os.fsync(dfd)
        log.write("ack %s %s\n" % (name, sha))
    i += 1
PY
	load=$!
	# (0 until the load has made its journal)
	acks() { local n; n=$(grep -c "^ack " "$T/journal$round" 2>/dev/null); echo "${n:-0}"; }
	for _ in $(seq 200); do [ "$(acks)" -ge $((10 * round)) ] && break; sleep 0.05; done
	kill -0 "$load" 2>/dev/null || fail "the load ended: $(cat "$T/load$round.out")"
	[ "$(acks)" -ge $((10 * round)) ] || fail "the load acknowledged too little"
	sleep "0.$((RANDOM % 9 + 1))"
	# The power cut: every server at once, then the client.
	pids=()
	for i in 0 1 2 3 4 5; do pids+=("${NBD_PID[s$i]}"); done
	kill -KILL "${pids[@]}"
	kill -KILL "$PONY_PID"
	wait "$PONY_PID" 2>/dev/null
	PONY_PID=
	for i in 0 1 2 3 4 5; do wait "${NBD_PID[s$i]}" 2>/dev/null; unset "NBD_PID[s$i]"; done
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	fusermount3 -u "$T/m" 2>/dev/null || umount -l "$T/m"
	echo "round $round: $(acks) steps acknowledged before the crash"

	servers_start
	"$PONY" fsck "${URIS[@]}" > "$T/out" 2>&1 || fail "round $round: fsck after the crash: $(cat "$T/out")"
	pony_mount "${URIS[@]}"
	python3 - "$T/m/r$round" "$T/journal$round" <<'PY' || fail "round $round: the oracle does not hold"
import hashlib, os, sys
d, journal = sys.argv[1:]
acked, versions, tried = {}, {}, {}
for line in open(journal):
    w = line.split()
    if len(w) < 3:
        continue                           # the line the crash cut short
    if w[0] == "ack":
        acked[w[1]] = w[2]
    elif w[0] == "ver":
        versions.setdefault(w[1], []).append(w[2])
    elif w[0] == "try":
        tried[w[1]] = w[2]
bad = []
for name, sha in tried.items():
    path = os.path.join(d, name)
    if not os.path.exists(path):
        if name in acked:
            bad.append("%s: fsynced, then lost" % name)
        continue
    got = open(path, "rb").read()
    if name in acked:
        if hashlib.sha256(got).hexdigest() != sha:
            bad.append("%s: fsynced, holds %d other bytes" % (name, len(got)))
    elif name.startswith("u"):
        want = open(journal + "." + name, "rb").read()
        if not want.startswith(got):
            bad.append("%s: unsynced, holds %d bytes that are no prefix of what was written"
                       % (name, len(got)))
for name, vers in versions.items():
    path = os.path.join(d, name)
    floor = vers.index(acked[name]) if name in acked else 0
    if not os.path.exists(path):
        if name in acked:
            bad.append("%s: a rename-over acknowledged, the name gone" % name)
        continue
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if sha not in vers:
        bad.append("%s: no whole version (torn or mixed)" % name)
    elif vers.index(sha) < floor:
        bad.append("%s: version %d, older than the acknowledged %d" % (name, vers.index(sha), floor))
print("%d names checked, %d acknowledged" % (len(tried) + len(versions), len(acked)))
for b in bad:
    print("BAD " + b)
sys.exit(1 if bad else 0)
PY
	pony_umount
done
pass
