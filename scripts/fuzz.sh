#!/usr/bin/env bash
# fuzz.sh [SECONDS] - build the libFuzzer targets into build-fuzz/ (clang
# -fsanitize=fuzzer,address, outside meson: the fuzzer runtime supplies
# main()) and run each for SECONDS (default 30). Seeds come from
# util-linux's test images in shared/testdata/blkid when present; the corpus
# and any crash-* files stay in build-fuzz/. A crash exits non-zero; turn its
# input into a regression test under tests/devdb/fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
out=build-fuzz
mkdir -p "$out"

CC=${CC_FUZZ:-clang}
CFLAGS="-std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"

probe_src=(src/devdb/probe.c src/devdb/values.c src/devdb/probe/*.c src/util/crc32c.c)
echo "fuzz: building $out/fuzz_devdb_probe"
$CC $CFLAGS -o "$out/fuzz_devdb_probe" tests/devdb/fuzz/fuzz_probe.c "${probe_src[@]}" -lisal

# Seeds: the head of each test image, prefixed with the size byte of the
# image's size class (see fuzz_probe.c), plus earlier crashes.
seeds="$out/seeds-devdb"
mkdir -p "$seeds" "$out/corpus-devdb"
shared=""
for s in "${PONY_SHARED:-../shared}" ../../shared /work/shared; do
	[ -d "$s/testdata/blkid" ] && { shared=$s; break; }
done
if [ -n "$shared" ] && [ -z "$(ls -A "$seeds")" ]; then
	for f in "$shared"/testdata/blkid/images-{fs,pt}/*.img.xz; do
		n=$(basename "$f" .img.xz)
		size=$(xz -dc "$f" | wc -c)
		k=0
		while [ $(( (65536 << k) )) -lt "$size" ] && [ $k -lt 15 ]; do k=$((k + 1)); done
		{ printf "\\x$(printf %02x $k)\\x00"; xz -dc "$f" | head -c 262144; } >"$seeds/$n" || true
	done
fi
cp tests/devdb/fuzz/crashes/* "$seeds/" 2>/dev/null || true

echo "fuzz: running fuzz_devdb_probe for ${secs}s"
"$out/fuzz_devdb_probe" -max_total_time="$secs" -max_len=300000 -rss_limit_mb=4096 \
	-artifact_prefix="$out/" -print_final_stats=1 "$out/corpus-devdb" "$seeds" 2>&1 |
	tail -n 25

echo "fuzz: building $out/fuzz_crypt_names"
$CC $CFLAGS -o "$out/fuzz_crypt_names" tests/crypt/fuzz/fuzz_names.c src/crypt/names.c \
	src/crypt/key.c src/crypt/cipher.c src/crypt/policy.c -lcrypto -lpthread
mkdir -p "$out/corpus-crypt-names"
echo "fuzz: running fuzz_crypt_names for ${secs}s"
"$out/fuzz_crypt_names" -max_total_time="$secs" -max_len=4200 -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus-crypt-names" tests/crypt/fuzz/seeds 2>&1 | tail -n 12

echo "fuzz: building $out/fuzz_layoutd_wire"
$CC $CFLAGS -o "$out/fuzz_layoutd_wire" tests/layoutd/fuzz/fuzz_wire.c src/layoutd/wire.c
mkdir -p "$out/corpus-layoutd"
echo "fuzz: running fuzz_layoutd_wire for ${secs}s"
"$out/fuzz_layoutd_wire" -max_total_time="$secs" -max_len=16384 -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus-layoutd" 2>&1 | tail -n 12
