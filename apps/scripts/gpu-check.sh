#!/usr/bin/env bash
# The GPU run, on a machine with an NVIDIA GPU: kvlab info, the unit tests (their device case
# included), kvlab parity (text and json; again under compute-sanitizer memcheck and racecheck when
# installed), kvlab bench kernels (f32 and bf16 cache), kvlab all --device cuda, every output into
# OUTDIR (at most 9 files). Sized for under 5 minutes on an H200 with 16 CPU cores: the build about
# 1-2 min, parity seconds, the benchmark grid (2 batches x 3 contexts x 2 head configs x
# contiguous/paged, 20 repeats, two cache dtypes, the largest 34 GB of KV) well under a minute.
#
#   apps/scripts/gpu-check.sh OUTDIR
# Uses gpu-pack/ (apps/scripts/gpu-pack.sh, built elsewhere) when it is there and runs; otherwise
# builds here with CUDA into build-gpu/ (needs cmake, nvcc and the -dev packages of the Makefile).
# Exit 0 when every step exited 0; the steps' statuses are in OUTDIR/summary.txt.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: apps/scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
summary="$out/summary.txt"
{
  echo "kvlab commit: $(git rev-parse HEAD 2>/dev/null || cat gpu-pack/COMMIT 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
} > "$summary"

kvlab=""
if [ -x gpu-pack/bin/kvlab ] && LD_LIBRARY_PATH=$PWD/gpu-pack/lib gpu-pack/bin/kvlab --version >/dev/null 2>&1; then
  export LD_LIBRARY_PATH=$PWD/gpu-pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  kvlab=gpu-pack/bin/kvlab tests=gpu-pack/bin/kvlab_tests
  echo "binaries: gpu-pack (built from $(cat gpu-pack/COMMIT 2>/dev/null), $(cat gpu-pack/GLIBC 2>/dev/null))" >> "$summary"
else
  start=$(date +%s)
  if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DKVLAB_CUDA=ON > "$out/build.log" 2>&1 &&
     cmake --build build-gpu -j"$(nproc)" >> "$out/build.log" 2>&1; then
    kvlab=build-gpu/bin/kvlab tests=build-gpu/bin/kvlab_tests
    echo "binaries: built here in $(( $(date +%s) - start )) s" >> "$summary"
  else
    echo "build: FAILED (see build.log)" >> "$summary"
    exit 1
  fi
fi

status=0
step() {  # step NAME FILE COMMAND...: runs with a time limit, appends its exit status
  local name=$1 file=$2; shift 2
  local t0; t0=$(date +%s)
  timeout "${STEP_TIMEOUT:-240}" "$@" >> "$out/$file" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s" >> "$summary"
  [ $rc = 0 ] || status=1
}
step "kvlab info" info.txt "$kvlab" info
step "unit tests (gpu parity and model ops cases included)" unit.txt "$tests" -tc="gpu*,device*"
step "kvlab parity" parity.txt "$kvlab" parity
step "kvlab parity --format json" parity.json "$kvlab" parity --format json
# The kernels under compute-sanitizer (out-of-bounds and shared-memory races), the same cases.
if command -v compute-sanitizer >/dev/null; then
  STEP_TIMEOUT=90 step "compute-sanitizer memcheck: kvlab parity" parity.txt compute-sanitizer --tool memcheck --error-exitcode 9 "$kvlab" parity
  STEP_TIMEOUT=90 step "compute-sanitizer racecheck: kvlab parity" parity.txt compute-sanitizer --tool racecheck --error-exitcode 9 "$kvlab" parity
fi
step "kvlab bench kernels (f32 cache)" bench_kernels.txt "$kvlab" bench kernels
step "kvlab bench kernels --cache bf16" bench_kernels.txt "$kvlab" bench kernels --cache bf16 --gemm-m 4096
step "kvlab bench kernels --format json" bench_kernels.json "$kvlab" bench kernels --format json
# The model checks with a CUDA path on the GPU (the others on the CPU, each saying so).
step "kvlab all --device cuda" all_cuda.txt "$kvlab" all --device cuda --full
cat "$summary"
exit $status
