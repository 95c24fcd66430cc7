#!/usr/bin/env bash
# fuse_uring.sh - FUSE over io_uring (--io-uring): with it, a union's
# requests reach the daemon over the rings (uring_requests counts them, one
# queue per possible CPU, and grows by at least one per stat of a new name),
# files made, written, renamed, linked, listed and removed through it read
# back right and land in the upper, upper files still pass through,
# trees unpacked at once from every CPU (so over every ring) come out whole;
# an rm -rf's forgets come in batches (a forget read per 2 ms at most),
# all of them soon; SIGTERM and SIGINT unmount and end the daemon cleanly with its rings
# (exit 0, so no leak under ASan), also when busy and mounted at a
# relative path, and a daemonized mount ends on unmount.
# Fallback: without --io-uring nothing goes over rings and the module
# parameter is left as it was; with it where enable_uring is off and the
# caller may not turn it on (a user), pony says so and serves over
# /dev/fuse. The parameter is restored at the end.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/fuse/uring_lib.sh"
USER_ID=${PONY_TEST_UID:-1000}
as_user() { setpriv --reuid="$USER_ID" --regid="$USER_ID" --clear-groups --inh-caps=-all "$@"; }
echo lower > "$T/l/f"
mkdir "$T/l/d"
head -c 300000 /dev/urandom > "$T/l/big"
before=$(cd "$T/l" && find . -type f -exec md5sum {} + | sort)

# Without --io-uring the front end never asks for rings, whatever the
# parameter says, and leaves the parameter alone.
echo N > "$PARAM"
mount_union
cat "$T/m/f" >/dev/null || fail "reading through the /dev/fuse mount failed"
[ "$(counter fuse_lookup)" -gt 0 ] || fail "no lookups counted: $(counters)"
"$PONY" fs requests "$T/m" | grep -q '^uring_' && fail "rings without --io-uring: $(counters)"
fuse_daemon_stop "$T/m" "$T/log"
[ "$(cat "$PARAM")" = N ] || fail "a mount without --io-uring changed $PARAM"

# --io-uring as root turns the parameter on, saying so, and serves over rings.
mount_union --io-uring
grep -q "turned on FUSE over io_uring" "$T/log" || fail "pony did not say it set $PARAM: $(cat "$T/log")"
[ "$(cat "$PARAM")" = Y ] || fail "--io-uring did not turn on $PARAM"
cpus=$(awk -F- '{ print ($2 == "" ? $1 : $2) + 1 }' /sys/devices/system/cpu/possible)
[ "$(counter uring_queues)" = "$cpus" ] || fail "not one ring per possible CPU ($cpus): $(counters)"
n0=$(counter uring_requests)
[ "$n0" -gt 0 ] || fail "no request came over the rings: $(counters)"
for i in $(seq 1 50); do stat "$T/m/none$i" >/dev/null 2>&1; done
n1=$(counter uring_requests)
[ $((n1 - n0)) -ge 50 ] || fail "50 lookups of new names made $((n1 - n0)) ring requests"

# What the union does, over the rings: the same answers as ever.
cd "$T/m" || fail "cannot enter the mount"
echo new > made && echo more >> f && mkdir d/sub && mv made d/sub/moved &&
	ln d/sub/moved hard && ln -s f sym ||
	fail "changes through the rings failed: $(cat "$T/log")"
w0=$(counter fuse_write)
cp "$T/l/big" copy || fail "writing a new file through the rings failed"
w1=$(counter fuse_write)
python3 -c 'import os; os.setxattr("f", "user.k", b"val"); assert os.getxattr("f", "user.k") == b"val"' ||
	fail "xattrs through the rings failed"
cd / || fail "cannot leave the mount"
[ "$(cat "$T/m/d/sub/moved")" = new ] || fail "the renamed file reads wrong"
[ "$(cat "$T/m/f")" = "$(printf 'lower\nmore')" ] || fail "the appended file reads wrong"
[ "$(stat -c %h "$T/m/hard")" = 2 ] || fail "the hard link count is wrong"
[ "$(readlink "$T/m/sym")" = f ] || fail "the symlink reads wrong"
cmp -s "$T/m/copy" "$T/l/big" || fail "the copied file reads differently"
cmp -s "$T/m/big" "$T/l/big" || fail "the lower file reads differently over the rings"
cmp -s "$T/u/copy" "$T/l/big" || fail "the upper's copy differs"
[ "$(ls "$T/m" | tr '\n' ' ')" = "big copy d f hard sym " ] || fail "readdir: $(ls "$T/m")"
rm -r "$T/m/d/sub" "$T/m/hard" || fail "removing through the rings failed"
[ -e "$T/m/d/sub" ] && fail "a removed directory is still there"
# Forgets in batches: with the rings on, /dev/fuse carries only FORGET,
# BATCH_FORGET and INTERRUPT, and its reader pauses 2 ms after a read of
# forgets so the kernel gathers them (forget.c). An rm -rf of 2,000 files
# (one forget each) then takes at most one forget read per 2 ms of it, not
# one per file (before: 0.5 to 0.8 per file), and every inode is still
# forgotten within a moment of the rm.
python3 -c "import os, sys
os.mkdir(sys.argv[1])
for i in range(2000): open('%s/f%04d' % (sys.argv[1], i), 'w').close()" "$T/m/many" ||
	fail "creating 2,000 files failed"
fr() { echo $(( $(counter fuse_forget) + $(counter fuse_batch_forget) )); }
r0=$(fr); f0=$(counter forget_inodes); t0=$(date +%s%N)
rm -rf "$T/m/many" || fail "rm -rf of 2,000 files failed"
ms=$(( ($(date +%s%N) - t0) / 1000000 )); reads=$(( $(fr) - r0 ))
[ "$reads" -le $(( ms / 2 + 10 )) ] ||
	fail "rm -rf of 2,000 files in $ms ms made $reads forget reads: $(counters)"
for _ in $(seq 1 50); do [ $(( $(counter forget_inodes) - f0 )) -ge 2000 ] && break; sleep 0.02; done
[ $(( $(counter forget_inodes) - f0 )) -ge 2000 ] ||
	fail "2,000 unlinked files: $(( $(counter forget_inodes) - f0 )) inodes forgotten after 1 s"
# Upper files pass through: the open answers, patched on their way into
# the ring, carried FOPEN_PASSTHROUGH and a backing id the kernel took (so
# the 300 KB copy made no WRITE).
if [ "$(counter passthrough)" = 1 ]; then
	[ "$(counter passthrough_opens)" -ge 2 ] || fail "no open passed through over the rings: $(counters)"
	[ "$w1" = "$w0" ] || fail "writes of a new upper file reached the daemon: $(counters)"
else
	echo "note: no FUSE passthrough here: $(counters)" >&2
fi

# Both rings at once: a tree unpacked by a process on each CPU (each CPU's
# requests go to its own ring and thread), then compared with its source.
mkdir -p "$T/src"
for d in $(seq 1 20); do mkdir "$T/src/d$d"; for f in $(seq 1 20); do echo "$d.$f" > "$T/src/d$d/f$f"; done; done
tar cf "$T/src.tar" -C "$T/src" .
pids=
for cpu in $(seq 0 $((cpus - 1))); do
	mkdir "$T/m/par$cpu" || fail "mkdir par$cpu failed"
	if command -v taskset >/dev/null && taskset -c "$cpu" true 2>/dev/null; then
		taskset -c "$cpu" tar xf "$T/src.tar" -C "$T/m/par$cpu" &
	else
		tar xf "$T/src.tar" -C "$T/m/par$cpu" &
	fi
	pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a parallel untar over the rings failed"; done
for cpu in $(seq 0 $((cpus - 1))); do
	diff -r "$T/src" "$T/m/par$cpu" >/dev/null || fail "the tree unpacked on CPU $cpu differs"
	diff -r "$T/src" "$T/u/par$cpu" >/dev/null || fail "the upper's tree from CPU $cpu differs"
done

# SIGTERM and SIGINT: the mount goes away and the daemon exits 0.
for sig in TERM INT; do
	kill -"$sig" "$PONY_PID"
	wait "$PONY_PID" || fail "SIG$sig: pony exited $? ($(cat "$T/log"))"
	PONY_PID=
	mountpoint -q "$T/m" && fail "SIG$sig left the mount behind"
	mount_union --io-uring
	[ "$(counter uring_requests)" -gt 0 ] || fail "remount after SIG$sig: no rings"
done
fuse_daemon_stop "$T/m" "$T/log"

# SIGTERM while the mount is busy (a process's working directory) and the
# mount point was given relative: still unmounted (the daemon has left its
# directory by then). (An open file would do too, but its handle, which
# the kernel never releases then, is reported as a leak under ASan.)
(cd "$T" && exec "$PONY" union mount --foreground --io-uring --lower l --upper u --work w m) \
	2>>"$T/log" &
PONY_PID=$!
wait_for_mount "$T/m" "$PONY_PID" "$T/log" "pony union mount (relative)"
(cd "$T/m" && sleep 1) &
holder=$!
sleep 0.2
kill -TERM "$PONY_PID"
wait "$PONY_PID" || fail "SIGTERM of a busy mount: pony exited $? ($(cat "$T/log"))"
PONY_PID=
wait "$holder"
mountpoint -q "$T/m" && fail "SIGTERM left a relative, busy mount behind: $(cat "$T/log")"

# Daemonized: fork first, rings after (threads do not survive a fork).
"$PONY" fs mount-host --io-uring "$T/l" "$T/m" 2>/dev/null || fail "daemonized mount failed"
cat "$T/m/f" >/dev/null
[ "$(counter uring_requests)" -gt 0 ] || fail "daemonized: no rings: $(counters)"
"$PONY" fs umount "$T/m" || fail "pony fs umount failed"
mountpoint -q "$T/m" && fail "pony fs umount left the mount"

# A user asking for rings where the parameter is off: told, served anyway.
if [ -u "$(command -v fusermount3)" ] && command -v setpriv >/dev/null && as_user true 2>/dev/null; then
	echo N > "$PARAM"
	mkdir -p "$T/um" && chown "$USER_ID" "$T/um" && chmod 755 "$T"
	as_user "$PONY" fs mount-host --foreground --io-uring "$T/l" "$T/um" 2>"$T/ulog" &
	PONY_PID=$!
	wait_for_mount "$T/um" "$PONY_PID" "$T/ulog" "pony fs mount-host as uid $USER_ID" as_user
	grep -q "unavailable" "$T/ulog" || fail "the user was not told: $(cat "$T/ulog")"
	[ "$(as_user cat "$T/um/f")" = lower ] || fail "the fallback mount reads wrong"
	as_user "$PONY" fs requests "$T/um" | grep -q '^uring_' && fail "rings with the parameter off"
	as_user fusermount3 -u "$T/um" || fail "unmounting the user's mount failed"
	wait "$PONY_PID" || fail "the user's daemon exited $?"
	PONY_PID=
	[ "$(cat "$PARAM")" = N ] || fail "a user changed $PARAM"
fi

after=$(cd "$T/l" && find . -type f -exec md5sum {} + | sort)
[ "$before" = "$after" ] || fail "the lower changed"
pass
