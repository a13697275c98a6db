# attn-params, cache-shape and linear-attention (sourced by cli_test.sh): bad input exits 2 with one
# line naming the option; small and edge inputs pass.
expect_exit 0 attn-params --heads 1 --head-dim 1 --groups 1 --layers 1
expect_exit 0 attn-params --heads 32 --head-dim 16 --groups 4 --layers 4 --format json
expect_usage_error --head-dim attn-params --heads 32 --head-dim 32
expect_usage_error --groups attn-params --groups 3
expect_usage_error --head-dim attn-params --heads 64 --head-dim 64
expect_exit 2 attn-params --layers 0
expect_exit 2 attn-params --dtype f32
expect_exit 0 cache-shape --heads 1 --head-dim 1 --groups 1 --layers 1 --batch 1 --ctx 1
expect_exit 0 cache-shape --heads 8 --groups 4 --ctx 64 --format csv
expect_exit 0 cache-shape --heads 32 --head-dim 8 --layers 4 --batch 8 --ctx 64 --format json
expect_usage_error --head-dim cache-shape --heads 32 --head-dim 32
expect_usage_error --head-dim cache-shape --head-dim 33
expect_usage_error --groups cache-shape --groups 5
expect_exit 2 cache-shape --ctx 65
expect_exit 2 cache-shape --batch 0
expect_exit 0 linear-attention --steps 2 --head-dim 1
expect_exit 0 linear-attention --steps 1024 --head-dim 128 --format json
expect_exit 2 linear-attention --steps 1
expect_usage_error --head-dim linear-attention --head-dim 129
