#!/usr/bin/env bash
# fuse_signal_at_mount.sh - a FUSE daemon stopped by SIGINT or SIGTERM the
# moment its mount appears still unmounts and exits 0. The mount shows up
# before the serving loop starts; a signal in between was once lost (SIGINT,
# which a shell's background job starts with ignored: the daemon then served
# on and `wait` hung) or killed the daemon with the mount left behind
# (SIGTERM). The signal is sent from a loop polling /proc/self/mountinfo, so
# it lands within microseconds of the mount, many times over.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
require_fuse
require_cmd fusermount3

T=$(mktemp -d /tmp/pony-fuse-sig.XXXXXX)
cleanup() {
	# A daemon killed by the test leaves a dead mount that mountpoint(1)
	# cannot stat: detach whatever is there.
	fusermount3 -u -z "$T/m" 2>/dev/null || umount -l "$T/m" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/src" "$T/m"

python3 - "$PONY" "$T/src" "$T/m" "${ROUNDS:-20}" <<'PY' || fail "a signal at mount time was lost or left the mount"
import os, signal, subprocess, sys, time
pony, src, mnt, rounds = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3]), int(sys.argv[4])

def mounted():
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)

def ignore_sigint():  # as a shell starts a background job
    signal.signal(signal.SIGINT, signal.SIG_IGN)

for n in range(rounds):
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen([pony, "fs", "mount-host", "--foreground", src, mnt],
                             preexec_fn=ignore_sigint, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not mounted():
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"round {n}: the mount did not come up: {p.stderr.read()}")
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            sys.exit(f"round {n}: {sig.name} at mount time was lost: the daemon kept serving")
        err = p.stderr.read().decode(errors="replace")
        if rc != 0:
            sys.exit(f"round {n}: {sig.name} at mount time: exit {rc}: {err}")
        if mounted():
            sys.exit(f"round {n}: {sig.name} at mount time left the mount behind")
PY
pass
