#!/usr/bin/env bash
# nbd_uris.sh - the names a member may have on NBD, and the refusals that
# name them: nbd+unix:// with a socket, nbds:// with TLS (a PSK the test
# makes), a mirror across both; a server that is absent, an export the
# server does not have, a read-only export for writing, a TLS-only server
# without TLS, one URI given twice, a bad --member-timeout (usage, exit 2);
# vol add and replace onto URIs, and a listed member refused as new device.
# Each message names the URI and says the cause; nothing is written.
# pony is not linked with libnbd (nor GnuTLS, libxml2, ICU it brings): it
# loads it on the first NBD member opened, which every step here does.
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" nbd-uris
. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"

# expect_refusal WHAT PATTERN CMD...: CMD fails, stderr matches PATTERN.
expect_refusal() {
	local what=$1 pattern=$2
	shift 2
	"$@" > "$T/out" 2> "$T/err" && fail "$what: succeeded"
	grep -q -- "$pattern" "$T/err" || fail "$what: expected '$pattern', got: $(cat "$T/err")"
}

# libnbd and what it brings cost every command their loading at start.
readelf -d "$PONY" >"$T/dynamic" || fail "readelf -d pony"
grep -q 'NEEDED.*libc\.so' "$T/dynamic" || fail "readelf shows no libraries: $(cat "$T/dynamic")"
! grep -E 'NEEDED.*(libnbd|libgnutls|libxml2)' "$T/dynamic" ||
	fail "pony is linked with libnbd or its dependencies: $(grep NEEDED "$T/dynamic")"

# A Unix socket and a TLS server make one mirror.
nbdkit -f --exit-with-parent -U "$T/sock" memory 64M 2>> "$T/nbdkit-unix.log" &
NBD_PID[unix]=$!
unix="nbd+unix:///?socket=$T/sock"
nbd_wait unix "$T/sock"
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$T/psk"
nbd_start tls "" -- --tls=require --tls-psk="$T/psk" memory 64M
tls="nbds://alice@127.0.0.1:${NBD_PORT[tls]}/?tls-psk-file=$T/psk"
"$PONY" vol create -l 1 "$unix" "$tls" > "$T/out" 2>&1 || fail "create over unix + tls: $(cat "$T/out")"
head -c 5000000 /dev/urandom > "$T/data"
"$PONY" vol write -f "$T/data" "$tls" "$unix" || fail "write"
"$PONY" vol read -L 5000000 "$unix" "$tls" | cmp - "$T/data" || fail "read back differs"
"$PONY" vol status "$unix" "$tls" > "$T/out" || fail "status: $(cat "$T/out")"
grep -Eq "^1 +ok +nbds://alice@127.0.0.1:${NBD_PORT[tls]}/( |$)" "$T/out" ||
	fail "the TLS member's name: $(cat "$T/out")"
# The TLS server without TLS: refused by the server, said so.
expect_refusal "plain to a TLS server" "nbd://127.0.0.1:${NBD_PORT[tls]}/: .*TLS" \
	"$PONY" vol status "nbd://127.0.0.1:${NBD_PORT[tls]}/"

# Nobody listening.
port=$(nbd_free_port)
expect_refusal "absent server" "nbd://127.0.0.1:$port/x: cannot connect: .*Connection refused" \
	"$PONY" vol status "nbd://127.0.0.1:$port/x"
# An export the server does not have (the file plugin serves a directory's files by name).
mkdir "$T/exports"
truncate -s 64M "$T/exports/a.img" "$T/exports/b.img"
nbd_start dir "" -- file dir="$T/exports"
expect_refusal "wrong export" "nbd://127.0.0.1:${NBD_PORT[dir]}/nope: .*no export named 'nope'" \
	"$PONY" vol create -l 1 "$(nbd_uri dir a.img)" "$(nbd_uri dir nope)"
# Read-only for writing.
nbd_start ro "" -- -r memory 64M
expect_refusal "read-only export" "nbd://127.0.0.1:${NBD_PORT[ro]}/: the server exports it read-only" \
	"$PONY" vol create -l 1 "$(nbd_uri dir a.img)" "$(nbd_uri ro)"
# One URI twice.
expect_refusal "twice" "nbd://127.0.0.1:${NBD_PORT[dir]}/a.img is given twice" \
	"$PONY" vol create -l 1 "$(nbd_uri dir a.img)" "$(nbd_uri dir a.img)"
# None of these wrote anything.
cmp "$T/exports/a.img" "$T/exports/b.img" || fail "a refused create wrote to a.img"

# add and replace take a URI as the new device; a listed member is refused as one.
mkdir "$T/ex2"
truncate -s 64M "$T/ex2/p.img" "$T/ex2/q.img" "$T/ex2/r.img" "$T/ex2/s.img"
nbd_start dir2 "" -- file dir="$T/ex2"
p=$(nbd_uri dir2 p.img) q=$(nbd_uri dir2 q.img) r=$(nbd_uri dir2 r.img) s=$(nbd_uri dir2 s.img)
"$PONY" vol create -l 1 "$p" "$q" > /dev/null || fail "create p q"
"$PONY" vol write -f "$T/data" "$p" "$q" || fail "write p q"
expect_refusal "add a listed member" "$p is also given as member $p" \
	"$PONY" vol add -d "$p" "$p" "$q"
"$PONY" vol fail -m 1 "$p" "$q" > /dev/null 2>&1 || fail "fail q"
"$PONY" vol add -d "$r" "$p" "$q" > "$T/out" 2>&1 || fail "vol add -d URI: $(cat "$T/out")"
"$PONY" vol replace -m 0 -d "$s" "$p" "$r" > "$T/out" 2>&1 || fail "vol replace -d URI: $(cat "$T/out")"
"$PONY" vol status "$s" "$r" > "$T/out" 2>&1 || fail "not clean after add and replace: $(cat "$T/out")"
"$PONY" vol read -L 5000000 "$s" "$r" | cmp - "$T/data" || fail "data after add and replace"

expect_usage_error "$PONY" --member-timeout abc vol status "$(nbd_uri dir a.img)"
expect_usage_error "$PONY" vol status --member-timeout=0 "$(nbd_uri dir a.img)"
expect_usage_error "$PONY" vol status "$(nbd_uri dir a.img)" --member-timeout
pass
