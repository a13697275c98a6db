# The serving checks (fragmentation, continuous-batching, chunked-prefill): bad options, legal
# extremes, the csv export of the series, determinism. Sourced by tests/cli_test.sh, which defines
# $kvlab, expect_exit and expect_stderr_mentions.

serve_usage_error() { expect_usage_error "$@"; }  # exit 2, one line naming the word (cli_test.sh)

# fragmentation
serve_usage_error --block fragmentation --block 0
serve_usage_error --block fragmentation --block 513
serve_usage_error --kv-tokens fragmentation --kv-tokens 2047
serve_usage_error --kv-tokens fragmentation --block 300 --kv-tokens 2048
serve_usage_error --requests fragmentation --requests 0
serve_usage_error --rate fragmentation --rate 1e-320
serve_usage_error --requests fragmentation --requests 2001
serve_usage_error --rate fragmentation --rate nan
serve_usage_error --rate fragmentation --rate -1
serve_usage_error --model fragmentation --model nosuch
serve_usage_error --gpu fragmentation --gpu nosuch
expect_exit 0 fragmentation --block 1
expect_exit 0 fragmentation --block 512 --kv-tokens 2048 --requests 50
expect_exit 0 fragmentation --rate 4 --requests 50
expect_exit 0 fragmentation --requests 1

# continuous-batching
serve_usage_error --rate continuous-batching --rate 0
serve_usage_error --rate continuous-batching --rate inf
serve_usage_error --max-batch continuous-batching --max-batch 0
serve_usage_error --max-batch continuous-batching --max-batch 1025
serve_usage_error --requests continuous-batching --requests 1e3
expect_exit 0 continuous-batching --requests 1
expect_exit 0 continuous-batching --max-batch 1 --requests 50
expect_exit 0 continuous-batching --rate 1000 --requests 300 --max-batch 1024
expect_exit 0 continuous-batching --model llama-3-8b --gpu h100-sxm

# chunked-prefill
serve_usage_error --chunk chunked-prefill --chunk 0
serve_usage_error --long-prompt chunked-prefill --long-prompt 32769
serve_usage_error --decoder-output chunked-prefill --decoder-output 1
serve_usage_error --decoder-output chunked-prefill --decoder-output 2
expect_exit 0 chunked-prefill --decoder-output 16
serve_usage_error --decoders chunked-prefill --decoders 256 --decoder-prompt 4096 --decoder-output 4096
expect_exit 0 chunked-prefill --chunk 512 --decoders 32
expect_exit 0 chunked-prefill --chunk 32768
expect_exit 0 chunked-prefill --long-prompt 1
expect_exit 0 chunked-prefill --model llama-3-8b --gpu h100-sxm --long-prompt 8192

# The per-request and per-step series are csv tables: bounded by default, every row with --long.
for check in fragmentation continuous-batching chunked-prefill; do
  rows=$("$kvlab" "$check" --format csv | grep -c '^# steps')
  if [ "$rows" -ge 2 ]; then echo "ok: $check exports its step series as csv tables"
  else echo "FAIL: $check --format csv has $rows step tables"; failures=$((failures + 1)); fi
  if cmp -s <("$kvlab" "$check" --format json) <("$kvlab" "$check" --format json); then
    echo "ok: $check is byte-identical run to run"
  else echo "FAIL: $check differs between two runs"; failures=$((failures + 1)); fi
  if "$kvlab" "$check" --long 2>&1 >/dev/null | grep -q '%'; then
    echo "FAIL: $check --long drew a progress bar on a non-terminal"; failures=$((failures + 1))
  else echo "ok: $check --long draws no progress bar off a terminal"; fi
done
full=$("$kvlab" fragmentation --long --format csv | grep -c '^# steps.*(all ')
if [ "$full" = 3 ]; then echo "ok: fragmentation --long exports every step"
else echo "FAIL: fragmentation --long: $full full step tables"; failures=$((failures + 1)); fi
