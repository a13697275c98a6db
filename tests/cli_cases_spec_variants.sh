# Sourced by cli_test.sh: typical-acceptance, jacobi and tree-verify: bad values
# are exit 2 with one stderr line naming the option; good cases exit 0 with the JSON keys.

for bad in 0 -1 abc 1.5 10000001; do
  expect_usage_error --samples typical-acceptance --samples "$bad"
done
expect_usage_error "--samples: must be at least 35" typical-acceptance --samples 30
expect_usage_error budget typical-acceptance --samples 10000000 --contexts 16
for opt in --epsilon --delta --temperature; do
  for bad in 0 nan inf -0.5 1e30; do
    expect_usage_error "$opt" typical-acceptance "$opt" "$bad"
  done
done
# A setting where the claim cannot be shown is refused with the settings that can show it (at 0.01 p
# is one-hot and typical acceptance emits its argmax: exact), not reported as a failed claim.
expect_usage_error "cannot be judged at --temperature 0.01" typical-acceptance --temperature 0.01
expect_exit 2 typical-acceptance --contexts 17
expect_stderr_mentions --contexts typical-acceptance --contexts 0
expect_exit 0 typical-acceptance --epsilon 1 --delta 1 --contexts 2
expect_exit 0 typical-acceptance --dtype f32 --format json

expect_exit 2 jacobi --block 0
expect_stderr_mentions --block jacobi --block 60
expect_exit 2 jacobi --prompts 33
expect_stderr_mentions --prompts jacobi --prompts abc
expect_exit 0 jacobi --block 1
expect_exit 0 jacobi --block 59 --prompts 1
expect_exit 0 jacobi --dtype f32

expect_usage_error --keep tree-verify --keep 781
expect_exit 2 tree-verify --heads 5
expect_stderr_mentions --heads tree-verify --heads 0
expect_usage_error --top-k tree-verify --top-k 9
expect_usage_error --depth tree-verify --depth 3
expect_exit 2 tree-verify --width 5
expect_stderr_mentions --width tree-verify --width 0
expect_usage_error "--samples: must be at least" tree-verify --samples 100
expect_usage_error budget tree-verify --samples 2000000 --width 4
expect_exit 0 tree-verify --heads 1 --top-k 1 --keep 1 --depth 1 --width 1 --samples 1000
expect_exit 0 tree-verify --heads 4 --top-k 8 --keep 4680 --dtype f32

for check in typical-acceptance jacobi tree-verify; do
  if "$kvlab" "$check" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "pass" and d["expectations"] and d["metrics"] and d["tables"]
for e in d["expectations"]:
    for k in ("quantity", "source", "expected", "tolerance", "why", "measured", "holds"):
        assert k in e, k'; then
    echo "ok: $check --format json has the contract's keys"
  else
    echo "FAIL: $check --format json"; failures=$((failures + 1))
  fi
done
