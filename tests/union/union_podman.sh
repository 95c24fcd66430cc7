#!/usr/bin/env bash
# tests/union/union_podman.sh - podman (Debian's) with pony-overlayfs as its
# overlay driver's mount_program, as root and rootless (a test user with
# subordinate ids): a root filesystem made from busybox-static is imported,
# a container writes, renames and deletes and is committed, the commit's
# image shows exactly those changes, and a Containerfile of several RUN
# steps (creating, deleting, renaming, replacing a directory) builds an
# image whose last step and later run see each earlier step's result.
# Every container's root is a pony union (fuse.pony-union in its
# /proc/mounts). The test's own storage root, runroot and containers.conf:
# runc, cgroupfs, no ulimits, file events (crun refuses this host's
# cgroups). Skips, saying why, only without user namespaces (or the tools).
#
# union_podman.sh [root|rootless]: one of the two (default: both).
. "$(dirname "$0")/../lib.sh"

require_root
require_fuse
require_cmd podman runc busybox newuidmap newgidmap runuser
unshare --user --map-root-user true 2>/dev/null ||
	skip "user namespaces are unavailable (unshare --user failed)"
OVL=$(dirname "$PONY")/pony-overlayfs
[ -x "$OVL" ] || fail "$OVL is not built"
MODES=${1:-root rootless}
TEST_USER=ponytest

T=$(mktemp -d /tmp/pony-podman.XXXXXX)
chmod 755 "$T"
cleanup() {
	local pid
	for who in root rootless; do
		[ -f "$T/$who/env" ] || continue
		pod "$who" rm -af >/dev/null 2>&1
		pod "$who" rmi -af >/dev/null 2>&1
	done
	# The rootless pause process this test's podman started, and nothing else.
	pid=$(cat "$T/rootless/xdg/libpod/tmp/pause.pid" 2>/dev/null)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	grep -o " $T/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$T" 2>/dev/null || { sleep 1; rm -rf "$T"; }
}
trap cleanup EXIT

# The image: busybox-static and its links, an /etc with a file to delete.
mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/etc" "$T/ctx"
cp "$(command -v busybox)" "$T/rootfs/bin/busybox"
for c in sh ls cat mv rm echo mkdir grep sort; do ln -s busybox "$T/rootfs/bin/$c"; done
echo "root:x:0:0:root:/root:/bin/sh" > "$T/rootfs/etc/passwd"
echo motd > "$T/rootfs/etc/motd"
tar -C "$T/rootfs" -cf "$T/rootfs.tar" .
cat > "$T/ctx/Containerfile" <<'EOF'
FROM localhost/bb2
RUN mkdir /a && echo 1 > /a/one && echo 3 > /a/three
RUN echo 2 > /a/two && rm /a/one && mv /tmp/y /tmp/y2
RUN rm -rf /data && mkdir /data && echo new > /data/n
RUN ls /a /tmp /data > /list
EOF

# setup WHO: storage.conf and containers.conf of the test's own, and the
# environment podman runs in ($T/WHO/env).
setup() {
	local who=$1 d=$T/$1
	mkdir -p "$d/graph" "$d/run" "$d/home" "$d/xdg"
	cat > "$d/storage.conf" <<-EOF
	[storage]
	driver = "overlay"
	graphroot = "$d/graph"
	runroot = "$d/run"
	rootless_storage_path = "$d/graph"
	[storage.options.overlay]
	mount_program = "$OVL"
	EOF
	cp "$(dirname "$0")/podman-containers.conf" "$d/containers.conf"
	chmod 700 "$d/xdg"
	[ "$who" = root ] || chown -R "$TEST_USER:" "$d"
	echo "HOME=$d/home XDG_RUNTIME_DIR=$d/xdg CONTAINERS_CONF=$d/containers.conf" \
		"CONTAINERS_STORAGE_CONF=$d/storage.conf" > "$d/env"
}

# pod WHO ARGS...: podman as WHO, on the test's storage, pony as mount_program.
pod() {
	local who=$1
	shift
	if [ "$who" = root ]; then
		env $(cat "$T/root/env") podman --storage-opt "overlay.mount_program=$OVL" "$@"
	else
		(cd "$T" && runuser -u "$TEST_USER" -- env $(cat "$T/rootless/env") \
			podman --storage-opt "overlay.mount_program=$OVL" "$@")
	fi
}

# expect WHAT WANT GOT
expect() { [ "$2" = "$3" ] || fail "$1: expected [$2], got [$3]"; }

scenario() {
	local who=$1 out
	setup "$who"
	pod "$who" import "$T/rootfs.tar" localhost/bb >/dev/null 2>"$T/$who.err" ||
		fail "$who: podman import failed: $(cat "$T/$who.err")"
	out=$(pod "$who" run --name c1 localhost/bb sh -c 'grep " / " /proc/mounts;
		echo hi > /tmp/x && mv /tmp/x /tmp/y && rm /etc/motd &&
		mkdir -p /data/d && echo z > /data/d/z' 2>"$T/$who.err") ||
		fail "$who: podman run failed: $(cat "$T/$who.err")"
	case $out in *" / fuse.pony-union "*) ;; *) fail "$who: the root is not pony's: $out" ;; esac
	pod "$who" commit c1 localhost/bb2 >/dev/null 2>"$T/$who.err" ||
		fail "$who: podman commit failed: $(cat "$T/$who.err")"
	out=$(pod "$who" run --rm localhost/bb2 sh -c 'cat /tmp/y /data/d/z; ls /tmp;
		ls /etc | grep -c motd' 2>"$T/$who.err")
	expect "$who: the committed image" "$(printf 'hi\nz\ny\n0')" "$out"
	pod "$who" build --pull=never --network none -t localhost/built "$T/ctx" \
		>"$T/$who.build" 2>&1 || fail "$who: podman build failed: $(tail "$T/$who.build")"
	out=$(pod "$who" run --rm localhost/built sh -c 'cat /list /a/two /data/n; ls /a/one' \
		2>/dev/null)
	expect "$who: the built image" \
		"$(printf '/a:\nthree\ntwo\n\n/data:\nn\n\n/tmp:\ny2\n2\nnew')" "$out"
	pod "$who" rm -af >/dev/null 2>&1
	grep -q " fuse.pony-union " <(grep " $T/" /proc/mounts) &&
		fail "$who: a union is still mounted after the containers are gone"
	true
}

for who in $MODES; do
	if [ "$who" = rootless ]; then
		id "$TEST_USER" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$TEST_USER" ||
			fail "cannot create the test user $TEST_USER"
		grep -q "^$TEST_USER:" /etc/subuid || echo "$TEST_USER:300000:65536" >> /etc/subuid
		grep -q "^$TEST_USER:" /etc/subgid || echo "$TEST_USER:300000:65536" >> /etc/subgid
	fi
	scenario "$who"
done
pass
