# Bad input to rope-relative and the MLA checks (sourced by cli_test.sh): exit 2, one line naming the option.
expect_usage_error --head-dim rope-relative --head-dim 7
expect_exit 2 rope-relative --pairs 0
expect_exit 2 rope-relative --pairs 257
expect_exit 2 rope-relative --theta 1
expect_exit 2 rope-relative --theta nan
expect_exit 2 rope-relative --max-offset 1000000001
expect_exit 2 rope-relative --dtype f32
expect_exit 0 rope-relative --max-offset 0
expect_exit 0 rope-relative --max-pos 0 --head-dim 2
expect_exit 2 mla-cache --mla-model llama-3-70b
expect_stderr_mentions --mla-model mla-cache --mla-model nosuch
expect_exit 2 mla-cache --gqa-model deepseek-v2
expect_exit 2 mla-cache --rope-head-dim 3
expect_exit 2 mla-cache --tokens 0
expect_exit 2 mla-cache --kv-lora-rank 129
expect_exit 0 mla-cache --tokens 1 --layers 1 --kv-lora-rank 1 --rope-head-dim 2 --format json
expect_exit 2 mla-absorb --model llama-3-70b
expect_stderr_mentions --model mla-absorb --model nosuch
expect_exit 2 mla-absorb --rope-head-dim 5
expect_exit 2 mla-absorb --prefill 0
expect_exit 2 mla-absorb --ctx 0
expect_exit 2 mla-absorb --decode 65
expect_exit 0 mla-absorb --dtype f32 --decode 0 --format csv
expect_exit 0 mla-absorb --q-lora-rank 0 --model deepseek-v3
expect_exit 2 rope-breaks-absorb --max-delta 0
expect_exit 2 rope-breaks-absorb --max-delta 4097
expect_stderr_mentions --theta rope-breaks-absorb --theta inf
expect_exit 0 rope-breaks-absorb --max-delta 1 --pairs 1
expect_exit 2 mla-decoupled --pairs 0
expect_exit 2 mla-decoupled --decode 65
expect_stderr_mentions --prefill mla-decoupled --prefill 0
expect_exit 0 mla-decoupled --prefill 1 --decode 0 --pairs 1
