# sliding-window, cla, and incremental-vs-full on RoPE and MLA, sourced by cli_test.sh:
# exit codes, JSON keys, and bad values rejected with one line naming the option.

# expect_json_keys CHECK_ARGS -- KEY...: `kvlab CHECK_ARGS --format json` exits 0 and has every metric KEY.
expect_json_keys() {
  local args=() keys
  while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
  keys="$*"
  if kv "${args[@]}" --format json |
      python3 -c 'import json,sys; d=json.load(sys.stdin); m=d["metrics"]; missing=[k for k in sys.argv[1:] if k not in m]; assert d["status"]=="pass" and not missing, missing' $keys; then
    echo "ok: kvlab ${args[*]} --format json has $keys"
  else
    echo "FAIL: kvlab ${args[*]} --format json lacks one of: $keys"; failures=$((failures + 1))
  fi
}

expect_exit 0 sliding-window
expect_exit 0 sliding-window --dtype f32 --positional learned
expect_exit 0 sliding-window --window 1 --tokens 2 --prefill 2 --perturb 1
expect_exit 0 sliding-window --window 8 --tokens 8 --prefill 1 --format csv
expect_json_keys sliding-window -- max_abs_diff_before_wrap max_abs_diff_after_wrap cache_positions_held_max \
  cache_bytes_held_max full_cache_bytes wrap_arounds reach_positions reach_expected
expect_exit 2 sliding-window --window 0
expect_stderr_mentions --window sliding-window --window 65
expect_exit 2 sliding-window --layers 9
expect_exit 2 sliding-window --tokens 1
expect_stderr_mentions --prefill sliding-window --prefill 25
expect_stderr_mentions --perturb sliding-window --perturb 24
expect_stderr_mentions --positional sliding-window --positional alibi

expect_exit 0 cla
expect_exit 0 cla --dtype f32 --layers 3 --share 2
expect_exit 0 cla --layers 1 --share 1 --decode 0
expect_json_keys cla -- cache_positions_cla cache_positions_baseline cache_bytes_cla cache_bytes_baseline \
  kv_params_cla kv_params_baseline max_abs_diff
expect_exit 2 cla --share 0
expect_stderr_mentions --share cla --share 5
expect_stderr_mentions --layers cla --layers 13
expect_exit 2 cla --prefill 0

expect_json_keys incremental-vs-full -- max_abs_diff_mha max_abs_diff_gqa max_abs_diff_mqa max_abs_diff_chunked \
  max_abs_diff_rope max_abs_diff_mla_naive max_abs_diff_mla_absorbed
expect_exit 0 incremental-vs-full --dtype f32 --prefill 1 --decode 0
