# Bad input to the issue-4 checks greedy-generate, bench-generate, complexity, intensity,
# ragged-batch, max-batch (sourced by cli_test.sh): exit 2, one line naming the option.
expect_exit 2 greedy-generate --prompt 0
expect_exit 2 greedy-generate --new-tokens 257
expect_exit 2 greedy-generate --block-size nan
expect_exit 2 greedy-generate --kv-heads 3
expect_stderr_mentions --kv-heads greedy-generate --kv-heads 3
expect_exit 0 greedy-generate --kv-heads 1 --dtype f32
expect_exit 0 greedy-generate --prompt 40 --block-size 16 --new-tokens 8
