# Thin wrapper over CMake. The two commands a student needs:
#   make run    install what is missing, build Release, run every check (build/bin/kvlab all)
#   make test   build, then run the unit tests and every check through ctest
BUILD     ?= build
BUILD_TYPE ?= Release
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# Debian packages kvlab builds with (the user's design card); nothing is downloaded at build time.
DEB_PACKAGES := cmake g++ make libcli11-dev libfmt-dev libeigen3-dev doctest-dev nlohmann-json3-dev

.PHONY: all run test build configure deps clean

all: build

deps:
	@./apps/scripts/install-deps.sh $(DEB_PACKAGES)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/kvlab all

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
