#!/usr/bin/env bash
# `kvlab all`, the run a student makes (ctest: check.all): every registered check but the
# benchmarks, once as text and once as JSON. Under ASan+UBSan one `all` costs ~15 s, so each form
# runs once here and carries every assertion on it (they were spread over three runs, in
# tests/cli_test.sh, tests/cli_cases_cpuroof.sh and ctest's plain check.all).
#   tests/all_test.sh path/to/kvlab
set -u
kvlab=$1
failures=0

# Text: exit 0 (every claim held) and the summary line last.
text=$("$kvlab" all); rc=$?
last=$(printf '%s\n' "$text" | tail -n 1)
if [ "$rc" = 0 ]; then echo "ok: all -> 0"; else echo "FAIL: all exited $rc"; failures=$((failures + 1)); fi
case "$last" in
  *" passed, 0 failed") echo "ok: all ends with '$last'" ;;
  *) echo "FAIL: all ends with '$last'"; failures=$((failures + 1)) ;;
esac

# JSON: exit 0, the contract's document (every result passed), and no benchmark in it
# (Check::is_bench(): cpu-roofline times the machine; issue 9).
json=$("$kvlab" all --format json); rc=$?
if [ "$rc" = 0 ]; then echo "ok: all --format json -> 0"; else echo "FAIL: all --format json exited $rc"; failures=$((failures + 1)); fi
if printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failed"]==0 and d["passed"]==len(d["results"])'; then
  echo "ok: all --format json parses"
else
  echo "FAIL: all --format json is not the contract's JSON"; failures=$((failures + 1))
fi
if printf '%s' "$json" | grep -q '"cpu-roofline"'; then
  echo "FAIL: kvlab all ran the cpu-roofline benchmark"; failures=$((failures + 1))
else
  echo "ok: kvlab all leaves the benchmark out"
fi

echo "all: $failures failure(s)"
[ "$failures" = 0 ]
