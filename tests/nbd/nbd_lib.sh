# tests/nbd/nbd_lib.sh - nbdkit servers for the NBD tests, on loopback (or
# on $NBD_HOST, an address of this host, when set before nbd_start): each
# started on a free TCP port (or a Unix socket) in the foreground of a
# background job, waited for until it answers, and killed at exit. Source
# after tests/lib.sh and tests/ponyfs/mount_lib.sh (which make $T and the
# mount helpers): `. "$PONY_SRCDIR/tests/nbd/nbd_lib.sh"`.

require_cmd nbdkit python3
nbdkit --dump-config >/dev/null 2>&1 || skip "nbdkit cannot run here"

declare -A NBD_PID NBD_PORT

# PLUGIN_ENV: how nbdkit must run to load this build's nbdkit-pony-plugin.so
# (`"${PLUGIN_ENV[@]}" nbdkit ...`, `"${PLUGIN_ENV[@]}" "$PONY" vol serve`).
# An ASan build's plugin needs the sanitizer runtimes loaded first, as
# nbdkit is not built with them; nbdkit's own allocations at its exit are
# not the plugin's to answer for, so leaks are not looked for there.
PLUGIN_ENV=(env)
if [[ "${PONY_SANITIZE:-}" == *address* ]]; then
	PLUGIN_ENV=(env "LD_PRELOAD=$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
		"ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
fi
NBD_RUN=()

nbd_cleanup() {
	local name
	for name in "${!NBD_PID[@]}"; do
		kill "${NBD_PID[$name]}" 2>/dev/null
		kill -CONT "${NBD_PID[$name]}" 2>/dev/null     # a stopped one acts on TERM
	done
	# One hung at exit in an ASan build (see nbd_kill) outlives the test otherwise.
	if [[ "${PONY_SANITIZE:-}" == *address* ]]; then
		sleep 1
		for name in "${!NBD_PID[@]}"; do kill -KILL "${NBD_PID[$name]}" 2>/dev/null; done
	fi
	ponyfs_cleanup
}
trap nbd_cleanup EXIT

# nbd_free_port: a TCP port of 127.0.0.1 nobody listens on (the kernel's pick).
nbd_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nbd_wait NAME PORT|SOCKET: until the server listens (5 s at most).
nbd_wait() {
	for _ in $(seq 1 100); do
		if [ -S "$2" ] || { [ "${2#/}" = "$2" ] &&
			(exec 3<>"/dev/tcp/${NBD_HOST:-127.0.0.1}/$2") 2>/dev/null; }; then
			return 0
		fi
		kill -0 "${NBD_PID[$1]}" 2>/dev/null || fail "nbdkit $1 exited: $(cat "$T/nbdkit-$1.log")"
		sleep 0.05
	done
	fail "nbdkit $1 did not come up: $(cat "$T/nbdkit-$1.log")"
}

# nbd_start NAME [PORT] -- NBDKIT-ARGS...: nbdkit on $NBD_HOST:PORT (a free one
# when PORT is empty); NBD_PORT[NAME], NBD_PID[NAME]; its URI is nbd_uri NAME.
nbd_start() {
	local name=$1 port=$2
	shift 3
	[ -n "$port" ] || port=$(nbd_free_port)
	NBD_PORT[$name]=$port
	"${NBD_RUN[@]}" nbdkit -f --exit-with-parent -i "${NBD_HOST:-127.0.0.1}" -p "$port" "$@" \
		2>>"$T/nbdkit-$name.log" &
	NBD_PID[$name]=$!
	nbd_wait "$name" "$port"
}

# nbd_start_plugin NAME [PORT] -- NBDKIT-ARGS...: nbd_start for a server
# that loads this build's plugin (in PLUGIN_ENV).
nbd_start_plugin() {
	local NBD_RUN=("${PLUGIN_ENV[@]}")
	nbd_start "$@"
}

nbd_uri() { echo "nbd://${NBD_HOST:-127.0.0.1}:${NBD_PORT[$1]}/${2:-}"; }

# nbd_kill NAME [SIGNAL]: stops the server (SIGTERM unless told) and reaps it.
# In an ASan build, an nbdkit that loaded the plugin may hang in its very
# last step, libp11-kit's destructor at exit (blocked on glibc's setlocale
# lock; seen under the preloaded sanitizer runtimes only), after the plugin
# closed the volume: given 10 s, it is then killed.
nbd_kill() {
	local pid=${NBD_PID[$1]}
	kill "-${2:-TERM}" "$pid" 2>/dev/null
	if [[ "${PONY_SANITIZE:-}" == *address* ]]; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && echo "nbdkit $1 hung at exit: killed" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	unset "NBD_PID[$1]"
}

# nbd_six PLUGIN-ARGS...: servers s0..s5, each with the same plugin arguments
# ("%i" in them becomes the server's number); URIS holds their URIs.
nbd_six() {
	local i args a
	URIS=()
	for i in 0 1 2 3 4 5; do
		args=()
		for a; do args+=("${a//%i/$i}"); done
		nbd_start "s$i" "" -- "${args[@]}"
		URIS+=("$(nbd_uri "s$i")")
	done
}
