# Thin wrapper over CMake. The two commands a student needs:
#   make run    install what is missing, build Release, run every check (build/bin/kvlab all)
#   make test   build, run the unit tests and every check through ctest, then the same under
#               AddressSanitizer + UBSan (build-asan/, compiled with clang)
# For kvlab's developers:
#   make fuzz FUZZ_SECONDS=60   the libFuzzer targets (clang), each for that long (docs/reliability.md)
BUILD     ?= build
ASAN_BUILD ?= build-asan
BUILD_TYPE ?= Release
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# Each test has a TIMEOUT (tests/CMakeLists.txt: 10 × its cost, at least 600 s) that only a hang
# reaches; a test that times out is run once more before it fails (a loaded machine, not a hang).
CTEST_FLAGS ?= --repeat after-timeout:2

# Debian packages kvlab builds with (the user's design card); nothing is downloaded at build time.
# libutf8proc-dev: the terminal width of Chinese text (aligned tables under --lang zh).
# python3 only runs the tests' JSON checks (tests/cli_test.sh); kvlab itself does not use it.
# libopenblas-dev: sgemm for the fast float32 path's prefill (optional to the build,
# chosen by measurement: docs/perf.md). python3-torch is needed only by `kvlab bench decode
# --vs-torch`, which names the package when it is missing.
# fortunes: the training and validation text of the trained pair (/usr/share/games/fortunes).
# clang, libclang-rt-14-dev (its sanitizer runtimes) and libomp-dev (its OpenMP): the sanitizer
# stage of `make test` is compiled with clang: with its precompiled headers, less than half of
# g++'s CPU per file, and a sanitized process starts 4x faster (docs/perf.md, "CI time").
DEB_PACKAGES := cmake g++ make libcli11-dev libfmt-dev libeigen3-dev doctest-dev nlohmann-json3-dev libutf8proc-dev python3 \
                libopenblas-dev fortunes clang libclang-rt-14-dev libomp-dev

# libFuzzer needs clang (already in DEB_PACKAGES, for the sanitizer stage).
FUZZ_PACKAGES := clang libclang-rt-14-dev
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := model_config gpu_spec safetensors

.PHONY: all run test test-sanitize build configure deps clean fuzz weights

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
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)
	@$(MAKE) --no-print-directory test-sanitize

# The same unit tests, checks and sweeps under AddressSanitizer + UBSan (CUDA left out).
# Any sanitizer report aborts the process; ctest then fails.
# SAN_CXX: the sanitizer build's compiler. clang++ with the PCH compiles it in under half g++'s CPU
# (docs/perf.md, "CI time"); the Release build stays g++. `make test-sanitize SAN_CXX=g++` for
# g++'s sanitizers. A folder configured with another compiler is removed first: CMake would
# delete its cache on the compiler change and configure again without the other -D options
# (a Release build, unsanitized, where build-asan/ was expected). The cache keeps the compiler as
# given (clang++) or as found (/usr/bin/clang++): either is the same compiler.
SAN_CXX ?= clang++
SAN_CXX_PATH = $(shell command -v $(SAN_CXX))
SAN_ENV := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 KVLAB_SWEEP_SECONDS=10 KVLAB_SWEEP_QUICK=1
test-sanitize: deps
	@cached=$$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' $(ASAN_BUILD)/CMakeCache.txt 2>/dev/null); \
	if [ -n "$$cached" ] && [ "$$cached" != "$(SAN_CXX)" ] && [ "$$cached" != "$(SAN_CXX_PATH)" ]; then \
	  echo "kvlab: $(ASAN_BUILD)/ was configured with another compiler than $(SAN_CXX); building it afresh"; \
	  rm -rf $(ASAN_BUILD); fi
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_CXX_COMPILER=$(SAN_CXX) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVLAB_SANITIZE=ON \
	  -DKVLAB_CUDA=OFF | grep -E "^-- kvlab:|Error" || true
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# A build folder of its own, configured with clang, every target under ASan + UBSan; then each
# fuzz target for FUZZ_SECONDS. Fails when one finds an input, which is kept in tests/fuzz/regressions/.
fuzz:
	@./apps/scripts/install-deps.sh $(DEB_PACKAGES) $(FUZZ_PACKAGES)
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DKVLAB_FUZZ=ON -DKVLAB_TESTS=OFF \
	  -DKVLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@./apps/fuzz/run_fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Retrain the committed pair (data/weights, docs/weights.md) into $(BUILD)/weights and verify each
# validation loss against data/weights/recorded.tsv within WEIGHTS_TOL nats/byte (docs/weights.md
# derives it). About 35 minutes on a loaded 2-core machine.
WEIGHTS_TOL ?= 0.02
weights: build
	./apps/scripts/train-weights.sh $(BUILD)/bin/kvlab $(BUILD)/weights $(WEIGHTS_TOL)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
