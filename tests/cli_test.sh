#!/usr/bin/env bash
# The command line's contract: exit codes (0 held, 1 failed, 2 bad usage/input), one-line errors
# on stderr that name the option, nothing on stdout for a rejected command, valid JSON.
#   tests/cli_test.sh path/to/kvlab                  every part, one after the other
#   tests/cli_test.sh path/to/kvlab core             only the cases below (front end, list, info)
#   tests/cli_test.sh path/to/kvlab tests/cli_cases_cost.sh ...   only those case files
# ctest runs each part as a test of its own (cli.core, cli.cost, ...: tests/CMakeLists.txt), so
# that -j runs them side by side; each case file is self-contained (it only uses what is defined
# here). `kvlab all` (text and JSON) is tested by tests/all_test.sh (ctest: check.all).
set -u
# The fast path's OpenMP threads spin while they wait (libgomp's default). On a machine busier than
# its cores, that spinning is CPU time the runs below are judged by (spec-wallclock --quick measured
# 80-100 s of CPU at load 3 against 10 s with passive waiting): wait passively, as a shared machine should.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
kvlab=$1
shift
failures=0
exec 3>&2  # the script's own stderr, for notes that must not mix with a run's captured stderr

# kv ARGS...: runs kvlab ARGS; stdout and stderr come out once the run ends, complete, and the
# exit status is kvlab's. No case is judged on time: the wall-clock only catches a hang, after
# KVLAB_HANG_SECONDS (default 600, 10 × the 60 s work budget of core/work_budget.hpp), and a run
# killed there is rerun once before it counts as one (exit 124): a busy machine can deschedule a
# correct run for long, but not twice for that long.
hang_limit=${KVLAB_HANG_SECONDS:-600}
kv() {
  local out err rc attempt
  out=$(mktemp) err=$(mktemp)
  for attempt in 1 2; do
    timeout "$hang_limit" "$kvlab" "$@" >"$out" 2>"$err"; rc=$?
    [ "$rc" = 124 ] || break
    [ "$attempt" = 1 ] && echo "note: kvlab $*: no end after $hang_limit s of wall-clock; rerunning it once" >&3
  done
  cat "$out"
  cat "$err" >&2
  rm -f "$out" "$err"
  return "$rc"
}

# expect_exit CODE ARGS... : runs kvlab ARGS, checks the exit status; for status 2 also checks
# that stderr is exactly one line and stdout is empty.
expect_exit() {
  local want=$1; shift
  local out err rc
  out=$(kv "$@" 2>/tmp/kvlab_cli_err.$$); rc=$?
  err=$(cat /tmp/kvlab_cli_err.$$)
  if [ "$rc" != "$want" ]; then
    echo "FAIL: kvlab $* exited $rc, want $want; stderr: $err"; failures=$((failures + 1)); return
  fi
  if [ "$want" = 2 ]; then
    local lines; lines=$(printf '%s\n' "$err" | wc -l)
    if [ "$lines" != 1 ] || [ -n "$out" ]; then
      echo "FAIL: kvlab $*: want one stderr line and empty stdout; got $lines lines: $err / stdout: ${out:0:200}"
      failures=$((failures + 1)); return
    fi
  fi
  echo "ok: kvlab $* -> $rc ${err:+($err)}"
}

# expect_stderr_mentions WORD ARGS... : the one error line names WORD (the option or field).
expect_stderr_mentions() {
  local word=$1; shift
  local err
  err=$(kv "$@" 2>&1 >/dev/null)
  case "$err" in
    *"$word"*) echo "ok: error names '$word'" ;;
    *) echo "FAIL: kvlab $*: error does not name '$word': $err"; failures=$((failures + 1)) ;;
  esac
}

# expect_usage_error WORD ARGS... : exit 2, one stderr line that names WORD, empty stdout, from
# one run (expect_exit 2 followed by expect_stderr_mentions asserts the same with two runs).
expect_usage_error() {
  local word=$1; shift
  local out err rc lines
  out=$(kv "$@" 2>/tmp/kvlab_cli_err.$$); rc=$?
  err=$(cat /tmp/kvlab_cli_err.$$)
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ "$rc" != 2 ]; then
    echo "FAIL: kvlab $* exited $rc, want 2; stderr: $err"; failures=$((failures + 1))
  elif [ "$lines" != 1 ] || [ -n "$out" ]; then
    echo "FAIL: kvlab $*: want one stderr line and empty stdout; got $lines lines: $err / stdout: ${out:0:200}"
    failures=$((failures + 1))
  else
    case "$err" in
      *"$word"*) echo "ok: kvlab $* -> 2 ($err)" ;;
      *) echo "FAIL: kvlab $*: error does not name '$word': $err"; failures=$((failures + 1)) ;;
    esac
  fi
}

core_cases() {
  expect_exit 0 --help
  expect_exit 0 list
  expect_exit 0 info
  expect_exit 2
  expect_exit 2 no-such-check
  expect_exit 2 all --format yaml
  expect_exit 2 all --dtype f16
  expect_exit 2 all --device tpu
  expect_exit 2 all --seed -1
  expect_exit 2 all --seed abc
}

[ $# -eq 0 ] && set -- core "$(dirname "$0")"/cli_cases*.sh
for part in "$@"; do
  if [ "$part" = core ]; then
    core_cases
  else
    . "$part"
  fi
done

rm -f /tmp/kvlab_cli_err.$$
echo "cli ($*): $failures failure(s)"
[ "$failures" = 0 ]
