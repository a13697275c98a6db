# Bad input to the issue-5 checks (sourced by cli_test.sh): exit 2, one line naming the option.
expect_exit 2 rope-relative --head-dim 7
expect_stderr_mentions --head-dim rope-relative --head-dim 7
expect_exit 2 rope-relative --pairs 0
expect_exit 2 rope-relative --pairs 257
expect_exit 2 rope-relative --theta 1
expect_exit 2 rope-relative --theta nan
expect_exit 2 rope-relative --max-offset 1000000001
expect_exit 2 rope-relative --dtype f32
expect_exit 0 rope-relative --max-offset 0
expect_exit 0 rope-relative --max-pos 0 --head-dim 2
