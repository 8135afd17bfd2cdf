# Thin wrapper over CMake + CTest. `make run` and `make test` are all a fresh Debian
# machine needs: both install missing packages first (scripts/install-deps).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
PREFIX     ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps build run test test-fast test-asan unit fuzz bench static install clean

MAKEFLAGS += --no-print-directory

all: build

deps:
	@scripts/install-deps

build:
	@cmake -S . -B $(BUILD) -DHBM_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Builds only the binary, quietly (compiler errors still show), then runs the main job.
run: deps
	@cmake -S . -B $(BUILD) -DHBM_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target hbmctl >/dev/null
	@scripts/run-main $(BUILD)/hbmctl

# The whole suite twice: -Wall -Wextra -Werror, then under ASan + UBSan.
test: deps test-fast test-asan

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The fast inner loop: unit tests and fuzz-corpus replays only (label "unit"), no end-to-end.
unit: build
	@cd $(BUILD) && ctest -L unit --output-on-failure -j$(JOBS)

test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DHBM_WERROR=ON -DHBM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer targets (clang); run one with: build-fuzz/fuzz_backend_npusmi fuzz/corpus/backend_npusmi
fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DHBM_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS)
	@ls $(FUZZ_BUILD)/fuzz_* 2>/dev/null | sed 's/^/built: /'

bench: deps build
	@scripts/run-benches $(BUILD)

static:
	@cmake -S . -B build-static -DHBM_STATIC=ON -DHBM_WERROR=ON >/dev/null
	@cmake --build build-static -j$(JOBS) --target hbmctl
	@echo "self-contained binary: build-static/hbmctl"

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) build-static
