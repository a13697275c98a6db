# Sourced by cli_test.sh: bad input to spec-alpha and spec-etau is exit 2 with one stderr line
# that names the option; good single cases exit 0.

# spec-etau: alpha outside [0, 1], NaN and inf; K negative, not a number, or beyond the bound
for bad in 1.5 -0.1 nan inf -inf abc; do
  expect_usage_error --alpha spec-etau --alpha "$bad"
done
for bad in -1 abc 4.5 257 99999999999999999999; do
  expect_usage_error --k spec-etau --k "$bad"
done
for bad in 0 -5 abc 1000000001; do
  expect_usage_error --samples spec-etau --samples "$bad"
  expect_usage_error --samples spec-alpha --samples "$bad"
done
expect_usage_error --grid-samples spec-etau --grid-samples 0
expect_exit 2 spec-etau --cost-ratio -0.5
expect_stderr_mentions --cost-ratio spec-etau --cost-ratio nan
expect_usage_error --vocab spec-alpha --vocab 1
expect_exit 2 spec-alpha --alpha-target nan
expect_stderr_mentions --alpha-target spec-alpha --alpha-target 1.01

# One case at a time, including both ends of alpha and K = 0.
expect_exit 0 spec-etau --alpha 0.8 --k 4
expect_exit 0 spec-etau --alpha 1 --k 0
expect_exit 0 spec-etau --alpha 0 --k 8
expect_exit 0 spec-etau --k 16 --format json
expect_exit 0 spec-alpha --alpha-target 1 --vocab 2 --samples 1000

# Runs whose statistical comparison could not fail are refused, naming the option and the minimum.
expect_exit 2 spec-alpha --samples 17
expect_stderr_mentions "--samples: must be at least 18" spec-alpha --samples 1
expect_exit 0 spec-alpha --samples 18
expect_usage_error "--samples: must be at least 17" spec-etau --alpha 0.7 --k 4 --samples 10
expect_usage_error "--grid-samples: must be at least 37" spec-etau --grid-samples 36
expect_exit 0 spec-etau --alpha 1 --k 4 --samples 1
# Work budgets: one line naming the options and the budget, before any work is done.
expect_usage_error "--vocab" spec-alpha --samples 10000000 --vocab 1024
expect_stderr_mentions "budget" spec-alpha --samples 1000000000
expect_usage_error "--k" spec-etau --k 256 --alpha 0.999 --samples 1000000
expect_usage_error "budget" spec-etau --grid-samples 1000000
