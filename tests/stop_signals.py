#!/usr/bin/env python3
# stop_signals.py ROUNDS MNT CMD... - a FUSE daemon run as CMD (in the
# foreground, mounting at MNT) stopped by SIGINT or SIGTERM unmounts and exits
# 0, however the signal arrives. First ROUNDS times each signal the moment
# the mount appears (sent from a loop polling /proc/self/mountinfo, so it
# lands within microseconds of it): the mount shows up before the serving
# loop starts, and a signal in between was once lost or killed the daemon
# with the mount left behind. Then each signal sent to each of the daemon's
# threads, other than its first, that does not block it (read helpers,
# timers, I/O workers), one thread a daemon: libfuse's own handler, run
# there, marks the session exited without waking the loop, and the daemon
# served on. Used by tests/vfs/fuse_signal_at_mount.sh (pony fs mount-host)
# and tests/volume/vol_expose_signal.sh (pony vol expose). Exits non-zero
# with the reason on the first lost signal or mount left behind.
import ctypes, os, signal, subprocess, sys, time

rounds, mnt, cmd = int(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3:]
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

def start():
    return subprocess.Popen(cmd, preexec_fn=ignore_sigint, stderr=subprocess.PIPE)

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
        p = start()
        deadline = time.monotonic() + 30
        while not mounted():
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"round {n}: the mount did not come up: {p.stderr.read()}")
        p.send_signal(sig)
        stopped(p, n, sig, "at mount time")

# Each thread in turn, once the mount serves (its helpers are then running).
for sig in (signal.SIGINT, signal.SIGTERM):
    for n in range(64):
        p = start()
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
