#!/usr/bin/env bash
# Builds kvlab with CUDA here (an x86-64 machine with nvcc and the Debian -dev packages) and packs
# what a GPU machine needs to run it into gpu-pack/ (git-ignored): the executables, libkvlab and
# the shared libraries that are not glibc. A GPU machine whose image lacks fmt/Eigen/CLI11/
# nlohmann-json/doctest (a bare CUDA image, for instance) then runs apps/scripts/gpu-check.sh on
# the pack instead of building. docs/gpu.md.
#
#   apps/scripts/gpu-pack.sh            # then carry gpu-pack/ to the GPU machine
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${KVLAB_GPU_BUILD:-build-cu}
# OpenBLAS off: one library fewer to carry (the CUDA checks do not use the CPU prefill GEMMs).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKVLAB_CUDA=ON -DKVLAB_OPENBLAS=OFF \
      ${CCACHE:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache} >/dev/null
cmake --build "$build" -j"${JOBS:-2}"
rm -rf gpu-pack && mkdir -p gpu-pack/bin gpu-pack/lib
cp "$build/bin/kvlab" "$build/bin/kvlab_tests" gpu-pack/bin/
cp -P "$build"/lib/libkvlab.so* gpu-pack/lib/
# Every non-glibc library the executables load (fmt, libstdc++, libgomp, ...), so that an older
# image runs them; glibc itself must be at least this machine's (ldd --version).
ldd "$build/bin/kvlab" "$build/bin/kvlab_tests" | awk '/=> \// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | grep -v libkvlab |
  while read -r lib; do cp -L "$lib" gpu-pack/lib/; done
ldd --version | sed -n 1p > gpu-pack/GLIBC
git rev-parse HEAD > gpu-pack/COMMIT
du -sh gpu-pack
