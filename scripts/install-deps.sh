#!/usr/bin/env bash
# install-deps.sh - install every Debian package pony needs to build, test and
# benchmark. Idempotent: when everything is present it only asks dpkg (well
# under a second), so `make`, `make check` and `make demo` call it every time.
set -euo pipefail

packages=(
	# build
	gcc make pkg-config meson ninja-build python3
	liburing-dev libsqlite3-dev libcmocka-dev libfuse3-dev libisal-dev
	libudev-dev libssl-dev libblkid-dev libsmartcols-dev uuid-dev
	# fuzzing (libFuzzer ships with clang)
	clang
	# runtime peers and test oracles
	fuse3 fuse-overlayfs util-linux e2fsprogs xfsprogs btrfs-progs
	dosfstools exfatprogs squashfs-tools mdadm xz-utils sqlite3 kmod fdisk
	udev libudev1 attr acl libcap2-bin iproute2
	# tests/cli/cli_docs.py renders the man pages with groff
	groff-base
	# tests/volume/vol_sbcrash.sh reads status JSON with jq (python3's start
	# takes seconds on a loaded machine, and it checks dozens of crashes)
	jq
	# the union as podman's mount_program (tests/union/union_podman.sh):
	# podman with runc (crun refuses this host's cgroups), newuidmap for
	# rootless, busybox-static for the test image, strace for a test
	podman runc uidmap busybox-static strace
	# NBD: the client library members use, the nbdkit plugin's header, and
	# the servers and clients the tests drive (nbdkit, nbdcopy, qemu-img)
	libnbd-dev libnbd-bin nbdkit nbdkit-plugin-dev qemu-utils
	# benchmarks (gocryptfs: the peer of bench/ponyfs's crypt rows)
	fio gocryptfs
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
