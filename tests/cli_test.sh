#!/usr/bin/env bash
# The command line's contract: exit codes (0 held, 1 failed, 2 bad usage/input), one-line errors
# on stderr that name the option, nothing on stdout for a rejected command, valid JSON.
set -u
kvlab=$1
failures=0

# expect_exit CODE ARGS... : runs kvlab ARGS, checks the exit status; for status 2 also checks
# that stderr is exactly one line and stdout is empty.
expect_exit() {
  local want=$1; shift
  local out err rc
  out=$(timeout 60 "$kvlab" "$@" 2>/tmp/kvlab_cli_err.$$); rc=$?
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
  err=$(timeout 60 "$kvlab" "$@" 2>&1 >/dev/null)
  case "$err" in
    *"$word"*) echo "ok: error names '$word'" ;;
    *) echo "FAIL: kvlab $*: error does not name '$word': $err"; failures=$((failures + 1)) ;;
  esac
}

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

for cases in "$(dirname "$0")"/cli_cases*.sh; do [ -f "$cases" ] && . "$cases"; done

out=$("$kvlab" all --format json)
if printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failed"]==0 and d["passed"]==len(d["results"])'; then
  echo "ok: all --format json parses"
else
  echo "FAIL: all --format json is not the contract's JSON"; failures=$((failures + 1))
fi
last=$("$kvlab" all | tail -n 1)
case "$last" in
  *" passed, 0 failed") echo "ok: all ends with '$last'" ;;
  *) echo "FAIL: all ends with '$last'"; failures=$((failures + 1)) ;;
esac

rm -f /tmp/kvlab_cli_err.$$
echo "cli: $failures failure(s)"
[ "$failures" = 0 ]
