#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time and keeps what it finds (`make fuzz` calls this).
#   apps/fuzz/run_fuzz.sh BUILD_DIR SECONDS TARGET...      e.g. build-fuzz 60 model_config gpu_spec
# For TARGET, BUILD_DIR/bin/fuzz_TARGET starts from three corpus folders: BUILD_DIR/fuzz/TARGET/
# corpus (its working corpus; new inputs go there and it grows from run to run),
# tests/fuzz/corpus/TARGET (the seeds) and tests/fuzz/regressions/TARGET (every input that once
# failed, replayed first). A crash-*, leak-*, timeout-* or oom-* it writes is copied into
# tests/fuzz/regressions/TARGET/ to be committed with its fix; the script then exits 1.
# Limits per input: 5 s (-timeout) and 2 GiB (-rss_limit_mb, also the largest single malloc).
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD_DIR SECONDS TARGET..." >&2
  exit 2
fi
build=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
failed=0
for t in "$@"; do
  work=$build/fuzz/$t
  regressions=$root/tests/fuzz/regressions/$t
  mkdir -p "$work/corpus" "$work/artifacts" "$regressions"
  rm -f "$work/artifacts"/*
  log=$work/fuzz.log
  echo "fuzz_$t: ${seconds} s, log $log"
  "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict="$root/apps/fuzz/$t.dict" -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$root/tests/fuzz/corpus/$t" "$regressions" >"$log" 2>&1
  rc=$?
  # The last status line: executions, coverage (cov: edges, ft: features), corpus, exec/s.
  grep -E '^#[0-9]+' "$log" | tail -n 1 | sed "s/^/  /"
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sed "s/^/  /"
  found=$(find "$work/artifacts" -maxdepth 1 -type f \
            \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \))
  if [ -n "$found" ]; then
    for f in $found; do
      cp "$f" "$regressions/"
      echo "  FOUND: $(basename "$f") -> tests/fuzz/regressions/$t/ (replay: $build/bin/fuzz_$t $f)"
    done
    grep -E 'kvlab fuzz:|ERROR:|SUMMARY:' "$log" | head -n 5 | sed "s/^/  /"
    failed=1
  elif [ "$rc" -ne 0 ]; then
    echo "  fuzz_$t exited with status $rc and wrote no input; see $log"
    tail -n 5 "$log" | sed "s/^/  /"
    failed=1
  else
    echo "  no findings"
  fi
done
exit $failed
