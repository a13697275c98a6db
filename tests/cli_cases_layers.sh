# Layer groups (docs/design.md): kv-size's contract on real configs with windows, chunks and
# attention-free layers; layouts kvlab does not read are never PASS; bad layouts exit 2 naming
# the field. Sourced by tests/cli_test.sh, which defines $kvlab, expect_exit and expect_usage_error.
configs="$(dirname "$0")/data/configs"

# Windowed, hybrid and attention-free configs are sized and pass; the catalogue's windowed models too.
for f in real_gpt_oss_20b real_gemma_3_4b_it real_jamba_v0_1 real_mamba_130m hf_nemotron_h_8b \
         hf_llama4_scout real_falcon_7b_resaved real_santacoder; do
  expect_exit 0 kv-size --config "$configs/$f.json" --ctx 32768
done
expect_exit 0 kv-size --model mistral-7b --ctx 32768
expect_exit 0 kv-size --model gemma-2-9b --ctx 32768
expect_exit 0 roofline --model gemma-2-9b --ctx 32768
expect_exit 0 max-batch --model mistral-7b --ctx 32768

# Bad layouts: one line naming the field.
tmp=$(mktemp -d)
printf '%s' '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "layer_types": ["full_attention"]}' > "$tmp/lt.json"
expect_usage_error layer_types kv-size --config "$tmp/lt.json"
printf '%s' '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "hybrid_override_pattern": "M?"}' > "$tmp/hp.json"
expect_usage_error hybrid_override_pattern kv-size --config "$tmp/hp.json"
printf '%s' '{"num_hidden_layers": Infinity, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}' > "$tmp/inf.json"
expect_usage_error num_hidden_layers kv-size --config "$tmp/inf.json"
# A layout field kvlab does not read: a warning, and exit 1 (no PASS).
printf '%s' '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "model_type": "gpt_neo", "attention_types": [[["global", "local"], 1]]}' > "$tmp/neo.json"
expect_exit 1 kv-size --config "$tmp/neo.json"

# The JSON contract: metrics.bytes (held), bytes_if_all_full, layer_groups, warnings.
if command -v python3 >/dev/null; then
  got=$("$kvlab" kv-size --config "$configs/real_gpt_oss_20b.json" --ctx 32768 --kv-dtype bf16 --format json |
        python3 -c 'import json,sys; j=json.load(sys.stdin); m=j["metrics"]; print(int(m["bytes"]), int(m["bytes_if_all_full"]), int(m["bytes_per_token"]), len(j["layer_groups"]), len(j["warnings"]))')
  # 2·8·64·2·(12·128 + 12·32768) and 2·24·8·64·2·32768; 49,152 B per token; 2 groups; no warnings
  if [ "$got" = "808452096 1610612736 49152 2 0" ]; then echo "ok: gpt-oss-20b 32k contract $got"
  else echo "FAIL: gpt-oss-20b 32k contract = $got"; failures=$((failures + 1)); fi
  got=$("$kvlab" kv-size --config "$tmp/neo.json" --format json |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["status"], len(j["warnings"]))')
  if [ "$got" = "fail 2" ]; then echo "ok: gpt_neo layout is warned, not passed"
  else echo "FAIL: gpt_neo layout = $got"; failures=$((failures + 1)); fi
fi
rm -rf "$tmp"
