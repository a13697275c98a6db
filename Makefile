# Thin wrapper over CMake. The two commands a student needs:
#   make run    install what is missing, build Release, run every check (build/bin/kvlab all)
#   make test   build, run the unit tests and every check through ctest, then the same under
#               AddressSanitizer + UBSan (build-asan/)
BUILD     ?= build
ASAN_BUILD ?= build-asan
BUILD_TYPE ?= Release
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# Debian packages kvlab builds with (the user's design card); nothing is downloaded at build time.
# python3 only runs the tests' JSON checks (tests/cli_test.sh); kvlab itself does not use it.
DEB_PACKAGES := cmake g++ make libcli11-dev libfmt-dev libeigen3-dev doctest-dev nlohmann-json3-dev python3

.PHONY: all run test test-sanitize build configure deps clean

all: build

deps:
	@./apps/scripts/install-deps.sh $(DEB_PACKAGES)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) | grep -E "^-- kvlab:|Error" || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/kvlab all

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-sanitize

# The same unit tests, checks and sweeps under AddressSanitizer + UBSan (CUDA left out).
# Any sanitizer report aborts the process; ctest then fails.
SAN_ENV := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 KVLAB_SWEEP_SECONDS=10
test-sanitize: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVLAB_SANITIZE=ON -DKVLAB_CUDA=OFF | grep -E "^-- kvlab:|Error" || true
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
