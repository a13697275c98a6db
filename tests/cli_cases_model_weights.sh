# Sourced by cli_test.sh: --weights on every model check (a file
# pair with --draft-weights for the speculative ones, refusals with the reason), gqa-meanpool's
# --weights, and the shared model-shape flag names of `model init` and `train`.
w2dir=$(mktemp -d)
w2root=$(cd "$(dirname "$0")/.." && pwd)
w2t="$w2dir/t.safetensors"; w2d="$w2dir/d.safetensors"
# Both spellings of the shape flags make the same file (HF-style and model init's first names).
expect_exit 0 model init --seed 4 --out "$w2t" --n-layer 2 --d-model 32 --n-head 4 --n-kv-head 2 --head-dim 8 --vocab-size 16 --block-size 96
expect_exit 0 model init --seed 4 --out "$w2dir/t2.safetensors" --layers 2 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8 --vocab 16 --block-size 96
if cmp -s "$w2t" "$w2dir/t2.safetensors"; then echo "ok: --n-layer/--layers etc. give the same file"
else echo "FAIL: model init --n-layer ... and --layers ... differ"; failures=$((failures + 1)); fi
expect_exit 0 model init --seed 5 --out "$w2d" --n-layer 1 --d-model 16 --n-head 2 --n-kv-head 1 --head-dim 8 --vocab-size 16 --block-size 96
expect_exit 2 model init --out "$w2dir/x.safetensors" --n-layer 0
expect_stderr_mentions --n-layer model init --out "$w2dir/x.safetensors" --layers 0
expect_exit 2 train --kv-heads -1
expect_stderr_mentions --n-kv-head train --kv-heads -1
# The speculative checks on a file pair; one without the other, or two vocabularies: exit 2.
expect_exit 0 spec-exact --weights "$w2t" --draft-weights "$w2d" --samples 1000
expect_exit 0 spec-greedy --weights "$w2t" --draft-weights "$w2d" --prompts 2
expect_exit 0 spec-speedup --weights "$w2t" --draft-weights "$w2d"
expect_exit 2 spec-exact --weights "$w2t"
expect_stderr_mentions "--draft-weights" spec-exact --weights "$w2t"
expect_exit 2 spec-greedy --draft-weights "$w2d"
expect_stderr_mentions "--weights" spec-greedy --draft-weights "$w2d"
expect_exit 0 model init --seed 6 --out "$w2dir/v32.safetensors" --n-layer 1 --d-model 16 --n-head 2 --head-dim 8 --n-kv-head 2 --vocab-size 32
expect_exit 2 spec-exact --weights "$w2t" --draft-weights "$w2dir/v32.safetensors"
expect_stderr_mentions "has 32" spec-exact --weights "$w2t" --draft-weights "$w2dir/v32.safetensors"
expect_exit 2 spec-exact --weights "$w2t" --draft-weights /nonexistent/d.safetensors
expect_stderr_mentions "--draft-weights" spec-exact --weights "$w2t" --draft-weights /nonexistent/d.safetensors
# Checks that apply --weights to the file's model.
expect_exit 0 sliding-window --weights "$w2t" --window 4 --tokens 20
expect_exit 0 ragged-batch --weights "$w2t"
expect_exit 0 bench-generate --weights "$w2t" --repeats 1
expect_exit 2 sliding-window --weights "$w2t" --tokens 100
expect_stderr_mentions "block_size = 96" sliding-window --weights "$w2t" --tokens 100
# Checks whose claim a file cannot hold: one line saying why.
for c in cla abs-pos-window cache-flops spec-sampler tree-verify typical-acceptance; do
  expect_exit 2 "$c" --weights "$w2t"
  expect_stderr_mentions "does not run on a weights file" "$c" --weights "$w2t"
done
expect_exit 2 cpu-roofline --quick --weights "$w2t"
# gqa-meanpool: --weights is --trained-weights.
expect_exit 2 gqa-meanpool --weights /nonexistent/kvlab/t.safetensors
expect_stderr_mentions --trained-weights gqa-meanpool --weights /nonexistent/kvlab/t.safetensors
# The trained pair of data/weights (when committed): spec-exact's distribution test runs on it
# (200 samples: about 22 s under ASan + UBSan, inside the case's 60 s; the bound follows n).
if [ -f "$w2root/data/weights/target.safetensors" ] && [ -f "$w2root/data/weights/draft.safetensors" ]; then
  expect_exit 0 spec-exact --weights "$w2root/data/weights/target.safetensors" \
    --draft-weights "$w2root/data/weights/draft.safetensors" --dtype f32 --samples 200 --temperature 1
fi
# spec-real: --weights/--draft-weights are --target/--draft.
expect_exit 2 spec-real --weights /nonexistent/kvlab/t.safetensors
expect_stderr_mentions --target spec-real --weights /nonexistent/kvlab/t.safetensors
rm -rf "$w2dir"
