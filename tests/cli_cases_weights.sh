# Weights files (sourced by cli_test.sh): `model init`, `perplexity`, and
# `--weights` on the model checks: accepted files run, bad files and unsuitable shapes exit 2 with
# one line naming the option or the config field.
wdir=$(mktemp -d)
wm="$wdir/m.safetensors"
expect_exit 0 model init --seed 3 --out "$wm" --vocab 256 --block-size 96 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8
expect_exit 0 greedy-generate --weights "$wm" --new-tokens 40
case $("$kvlab" greedy-generate --weights "$wm" --new-tokens 8 2>&1) in
  *"generated (naive = cached): \""*) echo "ok: greedy-generate --weights prints the generated text" ;;
  *) echo "FAIL: greedy-generate --weights does not print the generated text"; failures=$((failures + 1)) ;;
esac
expect_exit 0 greedy-generate --weights "$wm" --dtype f32 --format json
expect_exit 0 kv-invariance --weights "$wm"
expect_exit 0 incremental-vs-full --weights "$wm" --prefill 8 --decode 12
expect_exit 0 query-not-cached --weights "$wm"
expect_exit 0 paged-vs-contiguous --weights "$wm"
expect_exit 0 position-offset --weights "$wm"
expect_exit 0 bidirectional --weights "$wm"
expect_exit 0 jacobi --weights "$wm" --prompts 2
expect_exit 0 prefix-cache --weights "$wm"
expect_exit 0 parallel-sampling --weights "$wm"
# block_size 96 cannot hold 101 positions: the error names the field.
expect_usage_error "block_size = 96" kv-invariance --weights "$wm" --tokens 100
expect_usage_error --weights greedy-generate --weights /nonexistent/m.safetensors
expect_exit 2 greedy-generate --weights "$wdir"
expect_exit 0 model init --seed 3 --out "$wdir/win.safetensors" --window 8 --store F16
expect_stderr_mentions sliding_window greedy-generate --weights "$wdir/win.safetensors"
expect_exit 0 model init --seed 3 --out "$wdir/rope.safetensors" --positional rope --store BF16
expect_exit 0 incremental-vs-full --weights "$wdir/rope.safetensors"
expect_stderr_mentions positional greedy-generate --weights "$wdir/rope.safetensors"
for _ in 1 2 3 4; do printf 'The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n'; done > "$wdir/t.txt"
expect_exit 0 perplexity --weights "$wm" --text "$wdir/t.txt"
expect_exit 0 perplexity --weights "$wm" --text "$wdir/t.txt" --format json --dtype f64
expect_exit 2 perplexity --weights "$wm" --text /nonexistent/t.txt
expect_stderr_mentions vocab_size perplexity --weights "$wdir/win.safetensors" --text "$wdir/t.txt"
expect_exit 2 perplexity --weights "$wdir/t.txt" --text "$wdir/t.txt"
expect_exit 2 perplexity
head -c 50 "$wdir/t.txt" > "$wdir/short.txt"
expect_stderr_mentions "block_size + 1 = 97" perplexity --weights "$wm" --text "$wdir/short.txt"
expect_usage_error n_kv_head model init --out "$wdir/x.safetensors" --kv-heads 3
expect_exit 2 model init --out /nonexistent/dir/x.safetensors
expect_exit 2 model init --seed 1
expect_exit 2 model init --out "$wdir/x.safetensors" --store I8
expect_exit 2 model
rm -rf "$wdir"
