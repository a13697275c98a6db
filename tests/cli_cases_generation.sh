# Bad input to the checks greedy-generate, bench-generate, complexity, intensity,
# ragged-batch, max-batch (sourced by cli_test.sh): exit 2, one line naming the option.
expect_exit 2 greedy-generate --prompt 0
expect_exit 2 greedy-generate --new-tokens 257
expect_exit 2 greedy-generate --block-size nan
expect_usage_error --kv-heads greedy-generate --kv-heads 3
expect_exit 0 greedy-generate --kv-heads 1 --dtype f32
expect_exit 0 greedy-generate --prompt 40 --block-size 16 --new-tokens 8
expect_exit 2 max-batch --gpus 0
expect_exit 2 max-batch --gpus 99999999999999999999
expect_exit 2 max-batch --ctx nan
expect_exit 2 max-batch --model no-such-model
expect_stderr_mentions --model max-batch --model deepseek-v2
expect_stderr_mentions --kv-budget-gb max-batch --kv-budget-gb 600
expect_stderr_mentions weights max-batch --model llama-3.1-405b --gpus 1
expect_exit 2 max-batch --ctx 4294967296 --gpus 4096 --kv-budget-gb 1e9
expect_exit 2 max-batch --dtype f32
expect_exit 0 max-batch --model llama-2-70b --gpus 4 --ctx 8192 --kv-dtype fp8 --format json
expect_exit 2 ragged-batch --requests 0
expect_exit 2 ragged-batch --max-len 129
expect_stderr_mentions --requests ragged-batch --requests 0x10
expect_exit 2 ragged-batch --dtype f32
expect_exit 0 ragged-batch --requests 32 --max-len 128 --format csv
expect_exit 2 complexity --d-model 7
expect_exit 2 complexity --new-tokens 1
expect_stderr_mentions --new-tokens complexity --d-model 16384 --new-tokens 4096
expect_exit 0 complexity --d-model 64 --new-tokens 16 --format json
expect_usage_error --heads intensity --heads 3
expect_exit 2 intensity --kv-heads 64
expect_exit 2 intensity --ctx 0
expect_usage_error --gpu intensity --gpu no-such-gpu
expect_exit 0 intensity --d-model 8192 --heads 64 --kv-heads 8 --gpu h100-sxm
expect_exit 2 bench-generate --repeats 0
expect_exit 2 bench-generate --repeats 10
expect_stderr_mentions --repeats bench-generate --repeats 1e3
expect_exit 0 bench-generate --repeats 1 --format csv
