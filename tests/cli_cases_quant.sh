# Sourced by cli_test.sh: the quantization checks (kv-quant, int8-outliers) and kv-size on
# an MLA config.json. Bad input is exit 2 with one stderr line naming the option.
quant_configs="$(dirname "${BASH_SOURCE[0]}")/data/configs"

# json_has ARGS... -- PYTHON-ASSERTION : kvlab ARGS --format json parses and the assertion on d holds.
json_has() {
  local args=() expr
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  expr=$2
  if kv "${args[@]}" --format json | python3 -c "import json,sys; d=json.load(sys.stdin); assert $expr, d.get('metrics')"; then
    echo "ok: kvlab ${args[*]}: $expr"
  else
    echo "FAIL: kvlab ${args[*]}: $expr"; failures=$((failures + 1))
  fi
}

# kv-quant
expect_exit 0 kv-quant --format json
json_has kv-quant -- 'd["status"] == "pass" and d["metrics"]["max_prefill_decode_diff"] == 0 and abs(d["metrics"]["transfer_ratio_int4"] - 16 / 4.25) < 1e-12'
json_has kv-quant -- 'all(k in d for k in ("check", "source", "claim", "status", "metrics", "expectations", "tables", "notes", "errata"))'
expect_exit 0 kv-quant --group-size 32 --tokens 64 --format csv
expect_exit 0 kv-quant --group-size 8 --tokens 16 --head-dim 8 --kv-heads 1 --queries 1 --outlier-channels 1
expect_exit 0 kv-quant --outlier-scale 1000
for bad in 0 15 4097 abc 1e3; do
  expect_usage_error --tokens kv-quant --tokens "$bad"
done
expect_usage_error --head-dim kv-quant --head-dim 63
expect_usage_error --group-size kv-quant --group-size 129
expect_exit 2 kv-quant --outlier-channels 65
expect_stderr_mentions --outlier-channels kv-quant --outlier-channels 200 --head-dim 64 --kv-heads 1
expect_stderr_mentions --outlier-channels kv-quant --outlier-channels 5 --head-dim 8 --kv-heads 1
expect_exit 0 kv-quant --outlier-channels 4 --head-dim 8 --kv-heads 1 --group-size 8
for bad in nan inf 0.5 1001; do
  expect_usage_error --outlier-scale kv-quant --outlier-scale "$bad"
done
expect_usage_error "--tokens × --kv-heads × --head-dim" kv-quant --tokens 4096 --kv-heads 8 --head-dim 256
expect_exit 2 kv-quant --dtype f32

# int8-outliers
expect_exit 0 int8-outliers --format json
json_has int8-outliers -- 'd["status"] == "pass" and d["metrics"]["rms_error_llm_int8"] < d["metrics"]["rms_error_int8_outliers"] / 5 and d["metrics"]["outlier_dims_found"] == 4'
expect_exit 0 int8-outliers --tokens 1 --features 8 --outputs 1 --outlier-dims 1
expect_exit 0 int8-outliers --threshold 100 --outlier-magnitude 1000
expect_usage_error --outlier-magnitude int8-outliers --outlier-magnitude 11
expect_exit 2 int8-outliers --threshold 0
expect_stderr_mentions --threshold int8-outliers --threshold nan
expect_exit 2 int8-outliers --outlier-dims 5 --features 8
expect_stderr_mentions --outlier-dims int8-outliers --outlier-dims 33
expect_usage_error "--tokens × --features × --outputs" int8-outliers --tokens 512 --features 512 --outputs 512

# kv-size reads an MLA config.json (kv_lora_rank, qk_rope_head_dim): DeepSeek-V2's
# 60 layers × (512 + 64) elements × 2 bytes = 69,120 B per token, 283,115,520 B at 4096 tokens.
json_has kv-size --config "$quant_configs/hf_deepseek_v2.json" --ctx 4096 --kv-dtype fp16 -- \
  'd["metrics"]["bytes_per_token"] == 60 * (512 + 64) * 2 and d["metrics"]["bytes"] == 60 * 576 * 2 * 4096 and d["status"] == "pass"'
json_has kv-size --model deepseek-v2 --ctx 4096 --kv-dtype fp16 -- 'd["metrics"]["bytes"] == 283115520'
expect_stderr_mentions MLA kv-size --config "$quant_configs/hf_deepseek_v2.json" --kv-heads 8
