# bench/src/union_podman.sh - bench/union's podman_build row, sourced by it
# (uses its T, quick, reps, PONY): one Containerfile built by podman
# (Debian's, root, runc, cgroupfs) with pony-overlayfs as the overlay
# driver's mount_program, and the same build with fuse-overlayfs as it,
# each on a store of its own holding the same imported base image (a
# busybox-static root with a tree of small files, as a distribution image
# has). The build's steps do what image builds do: walk the tree, untar
# a source tree and build over it, delete a directory, append to files
# (copy-up), rename; every step is a container on the union and a layer
# committed from it. Timed: the whole `podman build`, base image present,
# no cache; the median of the reps. RATIO over 1: pony faster.
# The floor, in the same run: the same build on the kernel's overlayfs
# (podman's overlay driver with no mount_program), whose time is all
# podman's own work (runc, layer diffs and commits) plus the kernel's:
# RATIO podman_build_kernel_vs_fuse_overlayfs is the most any FUSE union
# could reach here.

if ! command -v podman >/dev/null || ! command -v runc >/dev/null ||
	! command -v busybox >/dev/null; then
	echo "SKIP podman_build: needs podman, runc and busybox-static (scripts/install-deps.sh)"
	return 0
fi
OVL=${PONY_OVL:-$(dirname "$PONY")/pony-overlayfs}
if [ $quick = 1 ]; then pod_dirs=60 pod_per=20; else pod_dirs=300 pod_per=40; fi
P=$T/podman
mkdir -p "$P/rootfs/bin" "$P/rootfs/tmp" "$P/rootfs/etc" "$P/ctx"
cp "$(command -v busybox)" "$P/rootfs/bin/busybox"
for c in sh ls cat mv rm echo mkdir find wc tar seq cp; do ln -s busybox "$P/rootfs/bin/$c"; done
echo "root:x:0:0:root:/root:/bin/sh" > "$P/rootfs/etc/passwd"
python3 - "$P/rootfs/usr/share" "$pod_dirs" "$pod_per" <<'PY'
import os, sys
top, dirs, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    p = os.path.join(top, "pkg%d" % (d % 10), "d%d" % d)
    os.makedirs(p, exist_ok=True)
    for i in range(per):
        with open(os.path.join(p, "f%d" % i), "wb") as f:
            f.write(b"x" * (200 + 37 * i))
PY
tar -C "$P/rootfs" -cf "$P/rootfs.tar" .
tar -C "$P/rootfs/usr/share" -cf "$P/ctx/src.tar" pkg0 pkg1
cat > "$P/ctx/Containerfile" <<'EOF'
FROM localhost/base
COPY src.tar /src.tar
RUN find / -xdev | wc -l && ls -lR /usr/share > /dev/null
RUN mkdir /build && tar xf /src.tar -C /build && rm /src.tar
RUN rm -rf /usr/share/pkg2 /usr/share/pkg3
RUN for f in /usr/share/pkg4/*/f1 /usr/share/pkg5/*/f2; do echo more >> $f; done
RUN mv /build/pkg0 /build/pkg0.done && cp -r /build/pkg1 /build/pkg1.copy
RUN find /build | wc -l > /build/count
EOF
cp tests/union/podman-containers.conf "$P/containers.conf"
for impl in pony fuse_overlayfs kernel; do
	printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
		"$P/$impl/graph" "$P/$impl/run" > "$P/$impl.conf"
done
# pod IMPL ARGS...: podman on IMPL's own store, IMPL its mount_program
# (kernel: none, the kernel's overlayfs).
pod() {
	local impl=$1 prog=()
	shift
	case $impl in
	pony) prog=(--storage-opt "overlay.mount_program=$OVL") ;;
	fuse_overlayfs) prog=(--storage-opt "overlay.mount_program=${FUSE_OVERLAYFS:-$(command -v fuse-overlayfs)}") ;;
	esac
	CONTAINERS_CONF=$P/containers.conf CONTAINERS_STORAGE_CONF=$P/$impl.conf \
		podman "${prog[@]}" "$@"
}
pod_cleanup() {
	for impl in pony fuse_overlayfs kernel; do
		[ -d "$P/$impl" ] || continue
		pod $impl rm -af >/dev/null 2>&1 || true
		pod $impl rmi -af >/dev/null 2>&1 || true
	done
	{ grep -o " $P/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m"; done
}
trap 'pod_cleanup; cleanup' EXIT
echo "# podman_build: base image of $((pod_dirs * pod_per)) files; 7 build steps"
impls="pony fuse_overlayfs kernel"
declare -A times
for impl in $impls; do
	pod $impl import "$P/rootfs.tar" localhost/base >/dev/null 2>"$P/$impl.log" ||
		{ echo "bench/union: podman import ($impl) failed: $(cat "$P/$impl.log")" >&2; exit 1; }
done
# The reps in turns (pony, fuse-overlayfs, kernel, pony, ...), so a change in
# what else the machine is doing falls on each alike.
for _ in $(seq 1 "$reps"); do
	for impl in $impls; do
		sync; echo 3 > /proc/sys/vm/drop_caches
		t0=$(date +%s.%N)
		# Each output line stamped with the seconds since t0 (the steps' times).
		pod $impl build --pull=never --network none --no-cache --layers=true \
			-t localhost/built "$P/ctx" 2>&1 |
			while IFS= read -r line; do printf '%s %s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')" "$line"; done \
				> "$P/$impl.log" ||
			{ echo "bench/union: podman build with $impl failed:" >&2; tail "$P/$impl.log" >&2; exit 1; }
		t1=$(date +%s.%N)
		# Where the time went, step by step (a STEP line to the next).
		echo "# podman_build $impl steps (s):" $(awk '/ STEP [0-9]/ { if (t != "") printf "%.2f ", $1 - t; t = $1 } END { printf "%.2f", total - t }' total="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$P/$impl.log")
		times[$impl]+=" $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
		pod $impl rmi -f localhost/built >/dev/null 2>&1
	done
done
for impl in $impls; do
	m=$(printf '%s\n' ${times[$impl]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	median[podman_build.$impl]=$m
	printf 'RESULT podman_build_%s %.3f s   (runs:%s)\n' "$impl" "$m" "${times[$impl]}"
done
printf 'RATIO podman_build_vs_fuse_overlayfs %s\n' \
	"$(awk -v a="${median[podman_build.fuse_overlayfs]}" -v b="${median[podman_build.pony]}" \
		'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
printf 'RATIO podman_build_kernel_vs_fuse_overlayfs %s\n' \
	"$(awk -v a="${median[podman_build.fuse_overlayfs]}" -v b="${median[podman_build.kernel]}" \
		'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
pod_cleanup
