#!/usr/bin/env bash
# demo.sh - pony's main job, shown on image files it creates under a
# temporary directory. Each component adds its act here as it lands.
set -euo pipefail
cd "$(dirname "$0")/.."
PONY=$PWD/build/pony
work=$(mktemp -d /tmp/pony-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== pony $("$PONY" --version | cut -d' ' -f2): the 2009 storage stack, in user space"
echo "   working in $work"

# --- aio: an unmodified POSIX AIO program (fio's posixaio engine), glibc's
# AIO and then pony's through LD_PRELOAD, 4 KiB random O_DIRECT reads, depth 32.
if command -v fio >/dev/null && [ -f build/lib/libpony-aio.so ]; then
	echo "== aio: fio posixaio, 4 KiB random O_DIRECT reads at depth 32, glibc then pony"
	fio --name=fill --filename="$work/aio.img" --size=256M --rw=write --bs=1M \
	    --ioengine=psync >/dev/null
	for who in glibc pony; do
		pre=
		[ "$who" = pony ] && pre=$PWD/build/lib/libpony-aio.so
		iops=$(LD_PRELOAD=$pre fio --name=r --filename="$work/aio.img" --rw=randread \
			--bs=4k --ioengine=posixaio --iodepth=32 --direct=1 --runtime=2 \
			--time_based --output-format=json |
			python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))')
		echo "   $who: $iops IOPS"
	done
fi
