# tests/netns_lib.sh - a second network namespace joined to this one by a
# veth pair: "another host" as far as the network goes, for the tests of
# pony across hosts (the layout service over TCP, direct reads from NBD
# servers). Source after tests/lib.sh, then `peer_up CLEANUP` (CLEANUP: the
# test's own exit handler, run after the namespace is gone). Sets NS,
# HOST_IP (this side's address), PEER_IP, and in_peer CMD... runs CMD there.
# Skips (77) where namespaces, veth pairs or a route between them are missing.

peer_down() {
	ip link del "v$NS" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}

peer_up() {
	command -v ip >/dev/null || skip "ip (iproute2) is missing"
	NS=pony-p$$           # "v$NS" is an interface name: 15 bytes at most
	HOST_IP=10.213.$((RANDOM % 250)).1
	PEER_IP=${HOST_IP%.1}.2
	ip netns add "$NS" 2>/dev/null || skip "network namespaces are unavailable"
	# shellcheck disable=SC2064 # the handler's name is fixed now
	trap "peer_down; $1" EXIT
	ip link add "v$NS" type veth peer name eth0 netns "$NS" || skip "veth pairs are unavailable"
	ip addr add "$HOST_IP/24" dev "v$NS" && ip link set "v$NS" up || fail "host side of the veth"
	ip -n "$NS" addr add "$PEER_IP/24" dev eth0 && ip -n "$NS" link set eth0 up &&
		ip -n "$NS" link set lo up || fail "peer side of the veth"
	# Reachable: a connection to a closed port is refused (not timed out).
	in_peer python3 - "$HOST_IP" <<'PY' || skip "no route between the namespaces"
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=3)
except ConnectionRefusedError:
    sys.exit(0)
except OSError:
    sys.exit(1)
PY
}

in_peer() { ip netns exec "$NS" "$@"; }

# free_port [ADDR]: a TCP port of ADDR (every address) nobody listens on.
free_port() {
	python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "${1:-}"
}
