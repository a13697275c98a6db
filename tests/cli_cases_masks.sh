# The Day-4 mask, layout and cache checks: exit codes, one-line errors naming the option, json keys.
# Sourced by tests/cli_test.sh, which defines $kvlab, expect_exit and expect_stderr_mentions.
expect_exit 0 causal-mask --keys 2 --queries 1
expect_usage_error --queries causal-mask --keys 8 --queries 8
expect_exit 2 causal-mask --keys 1
expect_exit 2 causal-mask --dtype f32
expect_exit 0 gqa-layout --heads 8 --kv-heads 4 --format csv
expect_exit 2 gqa-layout --heads 4 --kv-heads 4
expect_usage_error --kv-heads gqa-layout --heads 8 --kv-heads 3
expect_exit 0 gqa-equals-mha --dtype f32 --heads 1 --tokens 1
expect_exit 2 gqa-equals-mha --heads 0
expect_exit 0 bidirectional --layers 2 --dtype f32
expect_usage_error --layers bidirectional --layers 1
expect_exit 0 query-not-cached --tokens 2 --kv-heads 1
expect_exit 2 query-not-cached --tokens 1
expect_usage_error --kv-heads query-not-cached --kv-heads 3
expect_exit 0 position-offset --prefill 1 --decode 1 --dtype f32
expect_usage_error --decode position-offset --decode 0
expect_exit 0 abs-pos-window --window 2 --layers 1
expect_exit 2 abs-pos-window --window 1
expect_exit 0 gqa-meanpool --tokens 1 --dtype f32
expect_usage_error --tokens gqa-meanpool --tokens 257
expect_exit 0 cache-flops --d 1 --max-tokens 1 --count-tokens 4
expect_exit 2 cache-flops --count-tokens 3
expect_exit 2 cache-flops --d 16385
expect_stderr_mentions --max-tokens cache-flops --max-tokens 0
expect_exit 2 cache-flops --dtype f64
expect_exit 2 causal-mask --plot term   # only cache-flops of these draws a plot
if command -v python3 >/dev/null; then
  for day4a_check in cache-flops bidirectional query-not-cached gqa-equals-mha gqa-meanpool abs-pos-window \
                     position-offset causal-mask gqa-layout; do
    if "$kvlab" "$day4a_check" --format json |
         python3 -c 'import json,sys; d=json.load(sys.stdin)
assert d["status"] == "pass" and d["expectations"] and d["tables"] and d["metrics"]
assert all(k in d for k in ("check", "source", "claim", "notes", "errata"))'; then
      echo "ok: $day4a_check --format json has the contract's keys"
    else
      echo "FAIL: $day4a_check --format json"; failures=$((failures + 1))
    fi
  done
  day4a_keys=$("$kvlab" gqa-layout --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tables"][0]["rows"][2][1])')
  case "$day4a_keys" in
    "[0, 0, 1, 1]") echo "ok: gqa-layout's native kernel reads [0, 0, 1, 1]" ;;
    *) echo "FAIL: gqa-layout's native kernel reads $day4a_keys"; failures=$((failures + 1)) ;;
  esac
fi
