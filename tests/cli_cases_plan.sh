# Your own hardware (roofline --gpu FILE, --bandwidth/--peak-flops/--memory, --tp) and `kvlab plan`:
# the contract's JSON keys, lists and side by side, and bad input naming its flag. Sourced by
# tests/cli_test.sh, which defines $kvlab, expect_exit and expect_usage_error.
hw_tmp=$(mktemp -d)
cat > "$hw_tmp/my-gpu.json" <<'JSON'
{"name": "my-gpu", "memory_bytes": 24000000000, "bandwidth_bytes_per_s": 936e9,
 "bf16_flops_per_s": 71e12, "fp32_flops_per_s": 35.6e12, "source": "my card's datasheet"}
JSON

# json_has FILE KEY... : the JSON object on stdin has each dotted key, with a number value.
json_has() {
  local what=$1; shift
  if python3 -c 'import json, sys
j = json.load(sys.stdin)
for key in sys.argv[1:]:
    v = j
    for part in key.split("."):
        v = v[part]
    assert isinstance(v, (int, float)) and v == v, key' "$@"; then
    echo "ok: $what has $*"
  else
    echo "FAIL: $what lacks one of $*"; failures=$((failures + 1))
  fi
}

# A catalogue name that is also a file here: the error says how to read the file.
cp "$hw_tmp/my-gpu.json" "$hw_tmp/my-gpu"
cd "$hw_tmp" || exit 1
expect_usage_error "put ./ before the name" roofline --gpu my-gpu
cd - > /dev/null || exit 1

# roofline on your own device (the contract: tokens_per_s, time_s, bytes, ridge)
expect_exit 0 roofline --gpu h200
expect_exit 0 roofline --gpu "$hw_tmp/my-gpu.json"
expect_exit 0 roofline --bandwidth 3.35TB/s --peak-flops 989.5TFLOPS
expect_exit 0 roofline --bandwidth 3.35e12 --peak-flops 9.895e14 --memory 80GiB
expect_exit 0 roofline --model llama-2-7b --gpu h100-sxm --bandwidth 2TB/s
expect_exit 0 roofline --model llama-3-70b --gpu h100-sxm --tp 4 --batch 8 --ctx 8k
"$kvlab" roofline --gpu "$hw_tmp/my-gpu.json" --format json | json_has "roofline --gpu FILE" \
  metrics.tokens_per_s metrics.time_s metrics.bytes metrics.ridge
"$kvlab" roofline --bandwidth 3.35TB/s --peak-flops 989.5TFLOPS --format json | json_has "roofline --bandwidth --peak-flops" \
  metrics.tokens_per_s metrics.time_s metrics.bytes metrics.ridge
"$kvlab" roofline --model llama-2-7b --bandwidth 936GB/s --peak-flops 71TFLOPS --memory 24GB --format json |
  json_has "roofline --model --bandwidth" metrics.tokens_per_s metrics.time_s metrics.bytes metrics.ridge
for bad in 0 -1 nan inf 3.35Tb/s 3.35TB abc ""; do
  expect_usage_error --bandwidth roofline --bandwidth "$bad" --peak-flops 1e15
done
for bad in 0 -5 nan 989.5TB/s 5mFLOPS; do
  expect_usage_error --peak-flops roofline --bandwidth 1e12 --peak-flops "$bad"
done
for bad in 0 nan 80gb 0.5B; do
  expect_usage_error --memory roofline --gpu h100-sxm --memory "$bad"
done
expect_usage_error --peak-flops roofline --bandwidth 1TB/s
expect_usage_error --memory roofline --memory 80GB
expect_usage_error --bandwidth roofline --model llama-2-7b --gpu h100-sxm --bandwidth nan
expect_usage_error --gpu roofline --gpu "$hw_tmp/nosuch.json"
expect_usage_error --tp roofline --model llama-3-70b --tp 3
expect_usage_error --tp roofline --gpu h100-sxm --tp 2
expect_usage_error --ctx roofline --model llama-2-7b --ctx 1.5k

# plan
expect_exit 0 plan --model llama-3-8b --gpu h100-sxm --ctx 8k --batch 16
expect_exit 0 plan --model llama-3-8b --gpu h100-sxm --ctx 8k --batch 16 --verbose --format md
expect_exit 0 plan --model llama-3-70b --gpu h100-sxm --tp 2 --ctx 4096 --batch 1
expect_exit 0 plan --model llama-3-8b --gpu "$hw_tmp/my-gpu.json" --ctx 4k,32k,128k --batch 1,8,64
expect_exit 0 plan --model llama-3-8b --model mixtral-8x7b --model deepseek-v2 --gpu mi300x --ctx 32k --batch 8
expect_exit 0 plan --model llama-3-8b --gpu h100-sxm --ctx 4k,1M --batch 1 --format csv
expect_exit 0 plan --config "$(dirname "$0")/data/configs/hf_qwen2_7b.json" --params 7.6e9 --bandwidth 936GB/s \
  --peak-flops 71TFLOPS --memory 24GB --ctx 4k --batch 1
"$kvlab" plan --model llama-3-8b --gpu h100-sxm --ctx 8k --batch 16 --format json | json_has "plan --format json" \
  metrics.weights_bytes metrics.kv_bytes metrics.fits metrics.max_batch metrics.decode_tokens_per_s_bound \
  metrics.prefill_seconds_bound
# The contract's figures for llama-3-8b on h100-sxm (tests/lib/cost/plan_test.cpp has the arithmetic).
if "$kvlab" plan --model llama-3-8b --gpu h100-sxm --ctx 8k --batch 16 --format json | python3 -c 'import json, sys
m = json.load(sys.stdin)["metrics"]
assert m["weights_bytes"] == 16060522496 and m["kv_bytes"] == 17179869184 and m["fits"] == 1 and m["max_batch"] == 52, m'; then
  echo "ok: plan --format json: llama-3-8b on h100-sxm as the hand arithmetic"
else
  echo "FAIL: plan --format json: llama-3-8b on h100-sxm differs from the hand arithmetic"; failures=$((failures + 1))
fi
expect_usage_error --ctx plan --model llama-3-8b --gpu h100-sxm
expect_usage_error --ctx plan --model llama-3-8b --gpu h100-sxm --ctx 0
expect_usage_error --ctx plan --model llama-3-8b --gpu h100-sxm --ctx 1.5k
expect_usage_error --batch plan --model llama-3-8b --gpu h100-sxm --ctx 4k --batch x
expect_usage_error --memory-utilization plan --model llama-3-8b --gpu h100-sxm --ctx 4k --memory-utilization 0
expect_usage_error --memory-utilization plan --model llama-3-8b --gpu h100-sxm --ctx 4k --memory-utilization 1.5
expect_usage_error --gpu plan --model llama-3-8b --gpu nosuch --ctx 4k
expect_usage_error --gpu plan --model llama-3-8b --ctx 4k
expect_usage_error --memory plan --model llama-3-8b --bandwidth 1TB/s --peak-flops 100TFLOPS --ctx 4k
expect_usage_error --bandwidth plan --model llama-3-8b --gpu h100-sxm --bandwidth -1 --ctx 4k
expect_usage_error --params plan --model llama-3-8b --model llama-2-7b --params 7e9 --gpu h100-sxm --ctx 4k
expect_usage_error --params plan --config "$(dirname "$0")/data/configs/hf_qwen2_7b.json" --gpu h100-sxm --ctx 4k
expect_usage_error --tp plan --model llama-3-70b --gpu h100-sxm --tp 3 --ctx 4k
expect_usage_error --model plan --model nosuch --gpu h100-sxm --ctx 4k
expect_usage_error --model plan --gpu h100-sxm --ctx 4k
# Size suffixes wherever a token count is: 4k = 4,096 in kv-size, max-batch, roofline and the
# cheatsheet, the same output as the digits.
for cmd in "kv-size --model llama-3-8b" "max-batch" "roofline --model llama-2-7b --params 7e9" "cheatsheet 000-9.1"; do
  # shellcheck disable=SC2086
  a=$("$kvlab" $cmd --ctx 32k --format json 2>&1); b=$("$kvlab" $cmd --ctx 32768 --format json 2>&1)
  if [ "$a" = "$b" ] && [ -n "$a" ]; then echo "ok: $cmd --ctx 32k = --ctx 32768"
  else echo "FAIL: $cmd --ctx 32k differs from --ctx 32768"; failures=$((failures + 1)); fi
done
expect_usage_error --ctx kv-size --ctx 1.5k
expect_usage_error --ctx max-batch --ctx 0k
# Max batch 0 says which does not fit: the weights, or one sequence's cache beside them.
for case in "llama-3-70b|4k|the weights" "llama-3-8b|100M|one sequence of 104,857,600 tokens"; do
  IFS='|' read -r model ctx words <<< "$case"
  if "$kvlab" plan --model "$model" --gpu h100-sxm --ctx "$ctx" | grep -q "max batch  0: $words"; then
    echo "ok: plan $model at $ctx: max batch 0, $words"
  else echo "FAIL: plan $model at $ctx: no line 'max batch  0: $words ...'"; failures=$((failures + 1)); fi
done
rm -rf "$hw_tmp"
