#!/usr/bin/env bash
# `kvlab all`, the run a student makes (ctest: check.all): every registered check but the
# benchmarks, once as text and once as JSON. Under ASan+UBSan one `all` costs ~15 s, so each form
# runs once here and carries every assertion on it (they were spread over three runs, in
# tests/cli_test.sh, tests/cli_cases_cpuroof.sh and ctest's plain check.all).
# Under the sanitizers (--json-only, from tests/CMakeLists.txt) one `all` took ~65 s of the stage (a CI rehearsal), most
# of it spec-real's models at -O1 + ASan: the text run is left to the Release stage there (every
# check's own text output still runs under the sanitizers as ctest's check.NAME).
#   tests/all_test.sh path/to/kvlab [--json-only]
set -u
kvlab=$1
json_only=${2:-}
failures=0

# Text: exit 0 (every claim held) and the summary line last.
if [ "$json_only" = --json-only ]; then
  echo "skipped: the text run of all (--json-only: sanitizer build)"
else
  text=$("$kvlab" all); rc=$?
  last=$(printf '%s\n' "$text" | tail -n 1)
  if [ "$rc" = 0 ]; then echo "ok: all -> 0"; else echo "FAIL: all exited $rc"; failures=$((failures + 1)); fi
  case "$last" in
    *" passed, 0 failed") echo "ok: all ends with '$last'" ;;
    *) echo "FAIL: all ends with '$last'"; failures=$((failures + 1)) ;;
  esac
fi

# JSON: exit 0, the contract's document (every result passed), and no benchmark in it
# (Check::is_bench(): cpu-roofline and spec-wallclock time the machine).
json=$("$kvlab" all --format json); rc=$?
if [ "$rc" = 0 ]; then echo "ok: all --format json -> 0"; else echo "FAIL: all --format json exited $rc"; failures=$((failures + 1)); fi
if printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failed"]==0 and d["passed"]==len(d["results"])'; then
  echo "ok: all --format json parses"
else
  echo "FAIL: all --format json is not the contract's JSON"; failures=$((failures + 1))
fi
if printf '%s' "$json" | grep -qE '"(cpu-roofline|spec-wallclock)"'; then
  echo "FAIL: kvlab all ran a benchmark (cpu-roofline or spec-wallclock)"; failures=$((failures + 1))
else
  echo "ok: kvlab all leaves the benchmark out"
fi

echo "all: $failures failure(s)"
[ "$failures" = 0 ]
