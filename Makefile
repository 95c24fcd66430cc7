# pony's front door. Every target installs what it needs first, so each one
# works as the first command on a fresh Debian machine (as root).
#
#   make          build (build/)
#   make check    all tests, plain and under ASan+UBSan (build-asan/)
#   make demo     pony's main job, on image files it creates
#                 (DEMO_ARGS=--bench: with its benchmarks)
#   make bench    every bench/<component>, full runs (BENCH_ARGS=--quick for short)
#   make fuzz     the libFuzzer targets, briefly (FUZZ_SECONDS=N each)
#   make soak     the fault-injection soak, SOAK_SECONDS (600) long

MESON_OPTS ?=
BENCH_ARGS ?=
DEMO_ARGS ?=
FUZZ_SECONDS ?= 30
SOAK_SECONDS ?= 600

.PHONY: all deps build check check-plain check-asan demo bench fuzz soak interop clean

all: build

deps:
	@bash scripts/install-deps.sh

build/build.ninja: | deps
	meson setup build $(MESON_OPTS)

build-asan/build.ninja: | deps
	meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false $(MESON_OPTS)

build: deps build/build.ninja
	ninja -C build

check-plain: build
	-meson test -C build --print-errorlogs --num-processes 2 --timeout-multiplier 2
check-asan: deps build-asan/build.ninja
	ninja -C build-asan
	-meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4

# Both runs, then one summary line over both ("N passed, N failed, N skipped");
# the summary's exit code is the target's.
check: check-plain check-asan
	@python3 scripts/test-summary.py build build-asan

demo: build
	@bash scripts/demo.sh $(DEMO_ARGS)

bench: build
	@bash scripts/bench-all.sh $(BENCH_ARGS)

fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)

soak: build
	build/tests/soak/pony-soak --seconds $(SOAK_SECONDS)

interop: build
	@bash tests/volume/interop.sh

clean:
	rm -rf build build-asan build-fuzz
