#!/usr/bin/env bash
# fuse_signal_at_mount.sh - a FUSE daemon stopped by SIGINT or SIGTERM the
# moment its mount appears still unmounts and exits 0. The mount shows up
# before the serving loop starts; a signal in between was once lost (SIGINT,
# which a shell's background job starts with ignored: the daemon then served
# on and `wait` hung) or killed the daemon with the mount left behind
# (SIGTERM). The signal is sent from a loop polling /proc/self/mountinfo, so
# it lands within microseconds of the mount, many times over. Then the same
# signals are sent to each of the daemon's own threads that does not block
# them (read helpers, timers: not the loop thread, not libfuse's workers):
# handled there, they once marked the session exited without waking the
# loop, and the daemon served on (seen in CI as a lost SIGTERM).
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

python3 - "$PONY" "$T/src" "$T/m" "${ROUNDS:-20}" <<'PY' || fail "a stop signal was lost or left the mount"
import ctypes, os, signal, subprocess, sys, time
pony, src, mnt, rounds = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3]), int(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
SYS_TGKILL = 234 if os.uname().machine == "x86_64" else 131  # aarch64: 131

def mounted():
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)

def ignore_sigint():  # as a shell starts a background job
    signal.signal(signal.SIGINT, signal.SIG_IGN)

def takers(pid, sig):
    """The daemon's threads, other than its first, that do not block sig."""
    tids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                blocked = next(int(l.split()[1], 16) for l in f if l.startswith("SigBlk:"))
        except (FileNotFoundError, StopIteration):
            continue
        if int(t) != pid and not blocked & (1 << (sig - 1)):
            tids.append(int(t))
    return tids

def stopped(p, n, sig, how):
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        sys.exit(f"round {n}: {sig.name} {how} was lost: the daemon kept serving")
    err = p.stderr.read().decode(errors="replace")
    if rc != 0:
        sys.exit(f"round {n}: {sig.name} {how}: exit {rc}: {err}")
    if mounted():
        sys.exit(f"round {n}: {sig.name} {how} left the mount behind")

for n in range(rounds):
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen([pony, "fs", "mount-host", "--foreground", src, mnt],
                             preexec_fn=ignore_sigint, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not mounted():
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"round {n}: the mount did not come up: {p.stderr.read()}")
        p.send_signal(sig)
        stopped(p, n, sig, "at mount time")

# A signal handled by one of the daemon's own threads: each such thread in
# turn, once the mount serves (its read helpers are then running).
for sig in (signal.SIGINT, signal.SIGTERM):
    for n in range(64):
        p = subprocess.Popen([pony, "fs", "mount-host", "--foreground", src, mnt],
                             preexec_fn=ignore_sigint, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not mounted() or not takers(p.pid, sig):
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{sig.name}: no thread of the daemon takes it: {p.stderr.read()}")
            time.sleep(0.01)
        tids = takers(p.pid, sig)
        if n >= len(tids):
            p.send_signal(sig)
            stopped(p, n, sig, "to the process")
            break
        if libc.syscall(SYS_TGKILL, p.pid, tids[n], int(sig)) != 0:
            sys.exit(f"tgkill: {os.strerror(ctypes.get_errno())}")
        stopped(p, n, sig, f"to thread {tids[n]} of {len(tids)}")
PY
pass
