# Bad input to kv-size and roofline: exit 2, one stderr line that names the option or field.
# Sourced by tests/cli_test.sh, which defines $kvlab, expect_exit, expect_stderr_mentions and
# expect_usage_error.
configs="$(dirname "$0")/data/configs"

# expect_usage_error WORD ARGS... (tests/cli_test.sh): exit 2 with one line, and that line names WORD.

# kv-size: options
expect_usage_error --batch kv-size --model gpt2 --batch 0
expect_usage_error --batch kv-size --model gpt2 --batch -1
expect_usage_error --batch kv-size --model gpt2 --batch 1e3
expect_usage_error --ctx kv-size --model gpt2 --ctx 99999999999999999999
expect_usage_error --ctx kv-size --model gpt2 --ctx abc
expect_usage_error "overflows 64 bits" kv-size --model llama-3.1-405b --batch 4000000000 --ctx 4000000000
expect_usage_error batch kv-size --model llama-3.1-405b --batch 4000000000 --ctx 4000000000
expect_usage_error --kv-dtype kv-size --model gpt2 --kv-dtype fp7
expect_usage_error kv-heads kv-size --model llama-2-70b --kv-heads 5
expect_usage_error kv-heads kv-size --model llama-2-70b --kv-heads 0
expect_usage_error MLA kv-size --model deepseek-v2 --kv-heads 8
expect_usage_error "known: " kv-size --model nosuch
expect_usage_error llama-2-70b kv-size --model nosuch
expect_usage_error --config kv-size --model gpt2 --config "$configs/hf_gpt2.json"
expect_usage_error --batch kv-size --batch 4
expect_usage_error --kv-dtype kv-size --kv-dtype int4

# kv-size: config files
expect_usage_error --config kv-size --config /nonexistent
expect_usage_error "no such file" kv-size --config /nonexistent
expect_usage_error "is a directory" kv-size --config /tmp
expect_usage_error "not a regular file" kv-size --config /dev/null
expect_usage_error "not valid JSON" kv-size --config "$configs/random_bytes.json"
expect_usage_error "line 3" kv-size --config "$configs/malformed.json"
expect_usage_error "JSON object" kv-size --config "$configs/not_object.json"
expect_usage_error num_hidden_layers kv-size --config "$configs/missing_layers.json"
expect_usage_error num_attention_heads kv-size --config "$configs/string_heads.json"
expect_usage_error num_hidden_layers kv-size --config "$configs/float_layers.json"
expect_usage_error num_hidden_layers kv-size --config "$configs/negative_layers.json"
expect_usage_error num_attention_heads kv-size --config "$configs/zero_heads.json"
expect_usage_error vocab_size kv-size --config "$configs/huge_vocab.json"
expect_usage_error "must divide num_attention_heads" kv-size --config "$configs/kv_not_dividing.json"
expect_usage_error head_dim kv-size --config "$configs/head_dim_inconsistent.json"

# kv-size and roofline accept real Hugging Face configs
for f in hf_llama_2_7b hf_gpt2 hf_falcon_7b hf_qwen2_7b hf_deepseek_v2; do
  expect_exit 0 kv-size --config "$configs/$f.json"
done
for f in hf_llama_2_7b hf_gpt2 hf_falcon_7b hf_qwen2_7b; do
  expect_exit 0 roofline --config "$configs/$f.json" --params 7e9
done
# DeepSeek-V2's config routes tokens (n_routed_experts 160, 6 per token): N alone is not enough.
expect_usage_error --active-params roofline --config "$configs/hf_deepseek_v2.json" --params 236e9
expect_exit 0 roofline --config "$configs/hf_deepseek_v2.json" --params 236e9 --active-params 21e9
expect_exit 0 kv-size --model llama-2-70b --batch 32 --ctx 8192 --kv-heads 64
expect_exit 0 roofline --model llama-2-7b --params 7e9 --gpu a100-80gb --batch 8 --ctx 1024

# roofline
expect_usage_error --params roofline --model llama-2-7b --params nan
expect_usage_error --params roofline --model llama-2-7b --params -1
expect_usage_error --params roofline --model llama-2-7b --params inf
expect_usage_error --params roofline --config "$configs/hf_llama_2_7b.json"
expect_usage_error --weight-bytes roofline --model llama-2-7b --weight-bytes 0
expect_usage_error --gpu roofline --model llama-2-7b --gpu nosuch
expect_usage_error a100-80gb roofline --model llama-2-7b --gpu nosuch
expect_usage_error --gpu roofline --gpu nosuch
expect_usage_error --batch roofline --model llama-2-7b --batch 0
expect_usage_error "overflows 64 bits" roofline --model llama-3.1-405b --batch 4000000000 --ctx 4000000000
expect_usage_error "--batch × --ctx" roofline --model llama-3.1-405b --batch 4000000000 --ctx 4000000000
expect_usage_error "--batch × --ctx" kv-size --model llama-3.1-405b --batch 4000000000 --ctx 4000000000
expect_usage_error "--ctx: attention FLOPs" roofline --model llama-2-7b --ctx 9000000000000000000
# A legal int4 cache whose wider dtypes would not fit in 64 bits: their rows say so.
expect_exit 0 kv-size --model llama-3.1-405b --batch 10000000 --ctx 1000000 --kv-dtype int4
# A file's num_parameters out of the roofline's range names the file's field, not --params.
big_params=$(mktemp --suffix=.json)
printf '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "num_parameters": 9007199254740992}' > "$big_params"
expect_usage_error "$big_params: num_parameters: must be at most" roofline --config "$big_params"
expect_exit 0 roofline --config "$big_params" --params 1e9
rm -f "$big_params"
# Mixtures of experts
expect_exit 0 roofline --model mixtral-8x7b --batch 1 --ctx 1024
expect_exit 0 roofline --model deepseek-v3 --batch 8 --experts 256 --experts-per-token 8
expect_usage_error --params roofline --model mixtral-8x7b --params 7e9
expect_usage_error --active-params roofline --model mixtral-8x7b --active-params 50e9
expect_usage_error --experts-per-token roofline --model llama-2-7b --experts 8
expect_usage_error --active-params roofline --model llama-2-7b --experts 8 --experts-per-token 2
expect_usage_error --experts-per-token roofline --model mixtral-8x7b --experts-per-token 9
expect_usage_error --experts roofline --experts 8
expect_usage_error --config roofline --config /tmp

# The done-when figures, read from the JSON output.
if command -v python3 >/dev/null; then
  got=$("$kvlab" kv-size --model llama-3-70b --ctx 4096 --kv-dtype fp16 --format json |
        python3 -c 'import json,sys; print(int(json.load(sys.stdin)["metrics"]["bytes"]))')
  if [ "$got" = 1342177280 ]; then echo "ok: llama-3-70b 4K fp16 bytes = $got"
  else echo "FAIL: llama-3-70b 4K fp16 bytes = $got, want 1342177280"; failures=$((failures + 1)); fi
  for pair in ":85899345920" "--kv-heads 64:687194767360" "--kv-heads 1:10737418240"; do
    extra=${pair%%:*}; want=${pair##*:}
    # shellcheck disable=SC2086
    got=$("$kvlab" kv-size --model llama-2-70b --batch 32 --ctx 8192 --kv-dtype bf16 $extra --format json |
          python3 -c 'import json,sys; print(int(json.load(sys.stdin)["metrics"]["bytes"]))')
    if [ "$got" = "$want" ]; then echo "ok: llama-2-70b 32 x 8192 $extra bytes = $got"
    else echo "FAIL: llama-2-70b 32 x 8192 $extra bytes = $got, want $want"; failures=$((failures + 1)); fi
  done
  got=$("$kvlab" roofline --model llama-2-7b --params 7e9 --gpu a100-80gb --batch 8 --ctx 1024 --format json |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["metrics"]["tokens_per_s"]))')
  if [ "$got" = 892 ]; then echo "ok: roofline 7B batch 8 = $got tok/s"
  else echo "FAIL: roofline 7B batch 8 = $got tok/s, want 892"; failures=$((failures + 1)); fi
fi
