# tests/lib.sh - helpers for shell integration tests. Exit codes follow
# meson: 0 pass, 77 skip, anything else fail.
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
pass() { echo "PASS"; exit 0; }

# expect_usage_error CMD...: exits 2, prints to stderr, nothing to stdout.
expect_usage_error() {
	local out err rc
	err=$(mktemp)
	out=$("$@" 2>"$err"); rc=$?
	[ "$rc" -eq 2 ] || fail "'$*' exited $rc, expected 2"
	[ -s "$err" ] || fail "'$*' printed no error on stderr"
	[ -z "$out" ] || fail "'$*' printed on stdout: $out"
	rm -f "$err"
}

# expect_failure CMD...: exits non-zero with a message on stderr.
expect_failure() {
	local err rc
	err=$(mktemp)
	"$@" >/dev/null 2>"$err"; rc=$?
	[ "$rc" -ne 0 ] || fail "'$*' succeeded, expected failure"
	[ -s "$err" ] || fail "'$*' failed without a message on stderr"
	rm -f "$err"
}

# wait_for_mount MNT PID LOG WHAT [RUNNER...]: waits (5 s at most) until MNT
# is a mount point; fails, showing LOG, if PID (the FUSE daemon) exits first.
# RUNNER runs the check as someone else (a user's FUSE mount refuses root).
wait_for_mount() {
	local mnt=$1 pid=$2 log=$3 what=$4
	shift 4
	for _ in $(seq 1 100); do
		"$@" mountpoint -q "$mnt" && return 0
		kill -0 "$pid" 2>/dev/null || fail "$what exited: $(cat "$log")"
		sleep 0.05
	done
	fail "$what did not come up"
}

# fuse_daemon_start MNT LOG WHAT CMD...: runs CMD (a FUSE daemon kept in the
# foreground, so its exit status is seen) in the background with stderr to
# LOG, and waits for MNT. PONY_PID is its pid.
fuse_daemon_start() {
	local mnt=$1 log=$2 what=$3
	shift 3
	"$@" 2>>"$log" &
	PONY_PID=$!
	wait_for_mount "$mnt" "$PONY_PID" "$log" "$what"
}

# fuse_daemon_stop MNT LOG: unmounts MNT; the daemon must then exit 0 (ASan
# and leak reports make it fail).
fuse_daemon_stop() {
	# A close the kernel has not passed on yet can keep the mount busy a moment.
	for _ in 1 2 3 4 5; do fusermount3 -u "$1" 2>/dev/null && break; sleep 0.2; done
	mountpoint -q "$1" && { fusermount3 -u "$1" || fail "fusermount3 -u $1 failed"; }
	wait "$PONY_PID" || fail "the FUSE daemon exited $? after unmount: $(cat "$2")"
	PONY_PID=
}

# workdir NAME: T is a fresh directory, removed at exit after $T/m (if
# mounted) is unmounted and the daemon PONY_PID (if any) has exited.
workdir() {
	T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
	PONY_PID=
	trap workdir_cleanup EXIT
}
workdir_cleanup() {
	mountpoint -q "$T/m" && fusermount3 -u "$T/m"
	[ -n "$PONY_PID" ] && wait "$PONY_PID"
	rm -rf "$T"
}

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
require_fuse() { [ -c /dev/fuse ] || skip "/dev/fuse is missing"; }
# require_cmd CMD... : skip unless every CMD is on PATH.
require_cmd() {
	local c
	for c; do command -v "$c" >/dev/null || skip "$c is missing"; done
}
# record_field FIELD: the VALUE of FIELD in a record read from stdin (`pony
# dev show`, `pony crypt status`...: FIELD VALUE lines, src/cli/table.c),
# a line for each time FIELD is there.
record_field() { awk -v f="$1" '$1 == f { sub(/^[^ ]+ +/, ""); print }'; }
