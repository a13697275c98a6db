# The paged KV cache checks, sourced by cli_test.sh: exit codes, JSON keys, bad values
# rejected with exit 2 and one line naming the option.
for check in paged-cache paged-vs-contiguous prefix-cache parallel-sampling; do
  expect_exit 0 "$check"
  if "$kvlab" "$check" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "pass" and d["expectations"] and d["tables"], d["check"]
for e in d["expectations"]:
    assert {"quantity", "source", "unit", "expected", "tolerance", "why", "measured", "holds"} <= set(e), e
'; then echo "ok: $check --format json has the contract keys"; else
    echo "FAIL: $check --format json"; failures=$((failures + 1)); fi
done
if "$kvlab" paged-cache --format json | python3 -c '
import json, sys
m = json.load(sys.stdin)["metrics"]
assert m["shared_tokens"] == 32 and m["cow_copies"] == 1 and m["audit_problems"] == 0, m
'; then echo "ok: paged-cache metrics (32 shared tokens, 1 copy, clean audit)"; else
  echo "FAIL: paged-cache metrics"; failures=$((failures + 1)); fi
expect_exit 0 paged-cache --block-size 1 --num-blocks 35
expect_exit 0 paged-vs-contiguous --dtype f32 --block-size 5
expect_exit 0 prefix-cache --system-tokens 32 --format csv
expect_exit 0 parallel-sampling --prompt 32 --samples 2
expect_usage_error --num-blocks paged-cache --num-blocks 34
expect_exit 2 paged-cache --block-size 0
expect_usage_error --num-blocks paged-cache --block-size 256 --num-blocks 4096
expect_usage_error --kv-heads paged-vs-contiguous --kv-heads 3
expect_exit 2 paged-vs-contiguous --block-size nan
expect_exit 2 paged-vs-contiguous --prefill 0
expect_exit 2 prefix-cache --requests 0
expect_stderr_mentions --requests prefix-cache --requests 99
expect_exit 2 prefix-cache --block-size 0x10
expect_exit 2 prefix-cache --system-tokens ""
expect_usage_error --samples parallel-sampling --samples 1
expect_exit 2 parallel-sampling --new-tokens 0
expect_exit 2 parallel-sampling --device cuda
