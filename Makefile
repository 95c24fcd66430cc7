# pony's front door. Every target installs what it needs first, so each one
# works as the first command on a fresh Debian machine (as root).
#
#   make          build (build/)
#   make check    all tests, plain and under ASan+UBSan (build-asan/)
#   make demo     pony's main job, on image files it creates
#   make bench    every bench/<component>, full runs (BENCH_ARGS=--quick for short)
#   make fuzz     the libFuzzer targets, briefly (FUZZ_SECONDS=N each)
#   make soak     the fault-injection soak, SOAK_SECONDS (600) long
#   make install  pony and its links, the libraries and mount(8)'s helpers,
#                 under PREFIX (/usr/local), below DESTDIR when given

MESON_OPTS ?=
BENCH_ARGS ?=
FUZZ_SECONDS ?= 30
SOAK_SECONDS ?= 600
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps build check check-plain check-asan demo bench fuzz soak interop install clean

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
	@bash scripts/demo.sh

bench: build
	@bash scripts/bench-all.sh $(BENCH_ARGS)

fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)

soak: build
	build/tests/soak/pony-soak --seconds $(SOAK_SECONDS)

interop: build
	@bash tests/volume/interop.sh

# pony, pony-overlayfs and pony-union in PREFIX/bin, libpony-aio, -blkid
# and -layout in PREFIX's libdir, the nbdkit plugin in nbdkit's plugin
# directory, and mount.fuse.pony and mount.fuse.pony-union in /sbin, where
# mount(8) looks for helpers whatever the prefix (meson_options.txt). With
# DESTDIR all of it lands below DESTDIR (made absolute: meson reads it from
# the build directory), the links still naming PREFIX/bin/pony.
install: build
	meson configure build --prefix $(PREFIX)
	meson install -C build $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))

clean:
	rm -rf build build-asan build-fuzz
