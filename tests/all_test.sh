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
  # One screen: at most 60 lines, none wider than 100 terminal columns (a Chinese character
  # takes two), one line per check that ran.
  if printf '%s\n' "$text" | python3 -c '
import sys, unicodedata
lines = sys.stdin.read().splitlines()
width = lambda l: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in l)
wide = [l for l in lines if width(l) > 100]
assert len(lines) <= 60 and not wide, (len(lines), wide)'; then
    echo "ok: all fits one screen (<= 60 lines, <= 100 columns)"
  else
    echo "FAIL: all is longer than 60 lines or wider than 100 columns"; failures=$((failures + 1))
  fi
  # --lang zh: the same summary in Chinese, aligned the same way.
  zh=$("$kvlab" all --lang zh); rc=$?
  if [ "$rc" = 0 ] && printf '%s' "$zh" | grep -q '成立' && [ "$(printf '%s\n' "$zh" | wc -l)" = "$(printf '%s\n' "$text" | wc -l)" ]; then
    echo "ok: all --lang zh"
  else
    echo "FAIL: all --lang zh (exit $rc)"; failures=$((failures + 1))
  fi
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
# The benchmarks it left out are named (JSON: "skipped_benchmarks"; text: a line before the count).
if printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ran = {r["check"] for r in d["results"]}
assert set(d["skipped_benchmarks"]) == {"cpu-roofline", "spec-wallclock"}, d["skipped_benchmarks"]
assert not ran & set(d["skipped_benchmarks"]), ran'; then
  echo "ok: kvlab all leaves the benchmarks out and names them"
else
  echo "FAIL: kvlab all ran a benchmark (cpu-roofline or spec-wallclock) or does not name those it left out"
  failures=$((failures + 1))
fi
if [ "$json_only" != --json-only ]; then
  case "$(printf '%s\n' "$text" | tail -n 2 | head -n 1)" in
    "not run: the benchmarks "*"cpu-roofline"*"\`kvlab all --bench\` runs them too)") echo "ok: all names the benchmarks it left out" ;;
    *) echo "FAIL: all does not say which benchmarks it left out: $(printf '%s\n' "$text" | tail -n 2)"; failures=$((failures + 1)) ;;
  esac
fi

# JSON: every result has the headline (document, kvlab, verdict).
if printf '%s' "$json" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["results"]:
    h = r["headline"]
    assert {"document", "kvlab", "verdict"} <= set(h), r["check"]
    assert h["verdict"] in ("held", "held_document_off", "did_not_hold", "skipped"), (r["check"], h)'; then
  echo "ok: every result has its headline"
else
  echo "FAIL: a result without its headline"; failures=$((failures + 1))
fi

# --only runs the checks named (a benchmark too), --quiet shows only what did not hold, --full
# prints each report; a name that is no check is refused before anything runs.
only=$("$kvlab" all --only kv-size,max-batch); rc=$?
if [ "$rc" = 0 ] && [ "$(printf '%s\n' "$only" | grep -cE '^  (kv-size|max-batch) ')" = 2 ] &&
   [ "$(printf '%s\n' "$only" | tail -n 1)" = "2 passed, 0 failed" ]; then
  echo "ok: all --only kv-size,max-batch"
else
  echo "FAIL: all --only kv-size,max-batch (exit $rc): $only"; failures=$((failures + 1))
fi
quiet=$("$kvlab" all --only kv-size --quiet); rc=$?
if [ "$rc" = 0 ] && ! printf '%s' "$quiet" | grep -q '^  kv-size'; then
  echo "ok: all --quiet hides what held"
else
  echo "FAIL: all --quiet (exit $rc): $quiet"; failures=$((failures + 1))
fi
full=$("$kvlab" all --only max-batch --full); rc=$?
if [ "$rc" = 0 ] && printf '%s' "$full" | grep -q '^claims checked' &&
   printf '%s\n' "$full" | head -n 5 | grep -q '^verdict: HELD'; then
  echo "ok: all --full prints the reports, the verdict in each one's first lines"
else
  echo "FAIL: all --full (exit $rc)"; failures=$((failures + 1))
fi
err=$("$kvlab" all --only no-such-check 2>&1 > /dev/null); rc=$?
if [ "$rc" = 2 ] && [ "$err" = "kvlab: --only: no check named 'no-such-check'; \`kvlab list\` shows them" ]; then
  echo "ok: all --only no-such-check -> 2, one line naming it"
else
  echo "FAIL: all --only no-such-check exited $rc: $err"; failures=$((failures + 1))
fi

echo "all: $failures failure(s)"
[ "$failures" = 0 ]
