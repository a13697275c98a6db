# Bad input to the model checks (sourced by cli_test.sh): exit 2, one line naming the option.
expect_exit 2 kv-invariance --tokens 0
expect_exit 2 kv-invariance --tokens -1
expect_exit 2 kv-invariance --tokens 1e9
expect_exit 2 kv-invariance --layers 0
expect_exit 2 kv-invariance --kv-heads 3
expect_exit 2 kv-invariance --positional alibi
expect_exit 2 kv-invariance --tokens ""
expect_stderr_mentions --kv-heads kv-invariance --kv-heads 3
expect_exit 2 incremental-vs-full --prefill 0
expect_exit 2 incremental-vs-full --decode -1
expect_usage_error --chunk incremental-vs-full --chunk 9
expect_exit 2 incremental-vs-full --cache ring
expect_exit 2 cat-vs-prealloc --tokens 0
expect_exit 2 cat-vs-prealloc --tokens 99999999999
expect_exit 2 cat-vs-prealloc --repeats 0
expect_exit 2 cat-vs-prealloc --head-dim nan
expect_usage_error --device kv-invariance --device cuda
expect_exit 0 kv-invariance --dtype f32 --positional rope
expect_exit 0 incremental-vs-full --cache concat --format csv
expect_exit 0 incremental-vs-full --prefill 2
expect_exit 2 incremental-vs-full --prefill 2 --chunk 3
expect_exit 2 kv-invariance --tokens 513
expect_exit 2 kv-size --dtype f32
expect_stderr_mentions --dtype roofline --dtype f64
expect_stderr_mentions "unknown command 'no-such-check'" no-such-check
expect_exit 2 cat-vs-prealloc --kv-heads 64 --head-dim 256
