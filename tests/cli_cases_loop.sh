# Sourced by cli_test.sh: spec-residual and spec-greedy. Bad input is exit 2 with
# one stderr line that names the option; good single cases exit 0.

for bad in 0 -5 abc 1.5 1000001 99999999999999999999; do
  expect_usage_error --pairs spec-residual --pairs "$bad"
done
for bad in 1 0 abc 1025 nan; do
  expect_usage_error --vocab spec-residual --vocab "$bad"
done
# Work budget: named before any work is done.
expect_usage_error budget spec-residual --pairs 1000000 --vocab 1024
expect_exit 0 spec-residual --vocab 2 --pairs 1
expect_exit 0 spec-residual --vocab 1024 --pairs 100 --format json

for bad in 0 -1 abc 65; do
  expect_usage_error --prompts spec-greedy --prompts "$bad"
done
for bad in 0 17 abc; do
  expect_usage_error --k spec-greedy --k "$bad"
done
for bad in 0 65 abc; do
  expect_usage_error --new-tokens spec-greedy --new-tokens "$bad"
done
# The prompt (5) + --new-tokens + --k − 1 must fit block_size 64.
expect_exit 2 spec-greedy --new-tokens 60 --k 1
expect_stderr_mentions block_size spec-greedy --new-tokens 60 --k 16
expect_exit 0 spec-greedy --new-tokens 59 --k 1
expect_exit 0 spec-greedy --k 1 --new-tokens 1 --prompts 1
expect_exit 0 spec-greedy --k 16 --dtype f32 --format json

# spec-exact: the TV bound must be able to fail (--samples minimum), K and N bounded, a budget.
for bad in 0 -1 abc 2000001; do
  expect_usage_error --samples spec-exact --samples "$bad"
done
expect_usage_error "--samples: must be at least 28" spec-exact --samples 27
for bad in 0 4 abc; do
  expect_usage_error --new-tokens spec-exact --new-tokens "$bad"
done
for bad in 0 5 abc; do
  expect_usage_error --k spec-exact --k "$bad"
done
for bad in 0 0.001 nan inf 11; do
  expect_usage_error --temperature spec-exact --temperature "$bad"
done
expect_usage_error budget spec-exact --samples 2000000 --new-tokens 3 --k 4
expect_exit 0 spec-exact --samples 28 --new-tokens 1 --k 1
expect_exit 0 spec-exact --samples 2000 --temperature 10 --dtype f32 --format json
