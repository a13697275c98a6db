# The readers under attack (sourced by cli_test.sh): files that are not regular files, empty paths,
# nesting a recursive dump cannot print, sizes beyond the work budget, a KVLAB_DATA without a
# catalogue. Each case failed before its rule (a hang past the 60 s timeout, a crash, exit 3, or
# a run on the default model); docs/reliability.md, "The readers under attack".
rdir=$(mktemp -d)
mkfifo "$rdir/fifo"
expect_exit 0 model init --out "$rdir/m.safetensors" --seed 2

# Not a regular file: one line naming the option and what the path is; nothing is opened.
expect_usage_error "--weights: $rdir/fifo: is a FIFO" greedy-generate --weights "$rdir/fifo"
expect_usage_error "is a FIFO" perplexity --weights "$rdir/fifo" --text "$rdir/fifo"
expect_usage_error "--draft-weights: $rdir/fifo: is a FIFO" spec-greedy --weights "$rdir/m.safetensors" --draft-weights "$rdir/fifo"
expect_usage_error "is a FIFO" spec-real --target "$rdir/fifo"
expect_usage_error "/dev/zero: is a character device" kv-invariance --weights /dev/zero
expect_usage_error "is a directory" perplexity --weights "$rdir"

# An empty path is refused, not read as "no file" (which ran the default model).
expect_usage_error "--weights" kv-invariance --weights ''
expect_usage_error "--weights" spec-greedy --weights '' --draft-weights ''
expect_usage_error "--draft-weights" spec-greedy --weights "$rdir/x" --draft-weights ''
expect_usage_error "--weights" perplexity --weights ''
expect_usage_error "--text" perplexity --weights "$rdir/x" --text ''
expect_usage_error "--target" spec-real --target ''
expect_usage_error "--fortunes" spec-real --fortunes ''
expect_usage_error "empty path" gqa-meanpool --weights ''
expect_usage_error "--config" kv-size --config ''
expect_usage_error "--fortunes" train --fortunes '' --steps 1

# A path with a newline and a terminal escape is shown as one line of printable ASCII.
expect_usage_error "--text: '$rdir/a?[31mb?c' is not a readable file" perplexity --weights "$rdir/m.safetensors" \
  --text "$rdir/a"$'\e'"[31mb"$'\n'"c"
expect_usage_error "no fortune files in the directory '$rdir/a?b'" spec-real --fortunes "$rdir/a"$'\n'"b"

# Nesting: 16 MB of '[' in a weights file's kvlab.config, 4 MB in a config.json.
python3 - "$rdir" <<'EOF'
import json, struct, sys
d = sys.argv[1]
deep = '[' * (16 << 20) + ']' * (16 << 20)
header = json.dumps({"__metadata__": {"kvlab.config": '{"n_layer": ' + deep + '}'}}).encode()
open(d + "/deep.safetensors", "wb").write(struct.pack("<Q", len(header)) + header)
shallower = '[' * (4 << 20) + ']' * (4 << 20)  # 8 MB: within the 16 MiB limit of a config.json
open(d + "/deep.json", "w").write('{"num_hidden_layers": ' + shallower + '}')
EOF
expect_usage_error "nesting deeper than 64 levels" greedy-generate --weights "$rdir/deep.safetensors"
expect_usage_error "nesting deeper than 64 levels" kv-size --config "$rdir/deep.json"

# A small file that declares block_size 2^20 under RoPE (no position table to pay for): refused
# with the budget, before the hours of perplexity or the gigabytes of a cache.
python3 - "$rdir" <<'EOF'
import json, struct, sys
d = sys.argv[1]
cfg = {"n_layer": 1, "d_model": 4, "n_head": 1, "n_kv_head": 1, "head_dim": 4, "vocab_size": 256,
       "block_size": 1 << 20, "positional": "rope"}
shapes = {"transformer.wte.weight": [256, 4], "lm_head.weight": [256, 4],
          "transformer.ln_f.weight": [4], "transformer.ln_f.bias": [4]}
for n, s in [("ln_1.weight", [4]), ("ln_1.bias", [4]), ("attn.q_proj.weight", [4, 4]), ("attn.q_proj.bias", [4]),
             ("attn.k_proj.weight", [4, 4]), ("attn.k_proj.bias", [4]), ("attn.v_proj.weight", [4, 4]),
             ("attn.v_proj.bias", [4]), ("attn.out_proj.weight", [4, 4]), ("attn.out_proj.bias", [4]),
             ("ln_2.weight", [4]), ("ln_2.bias", [4]), ("mlp.c_fc.weight", [16, 4]), ("mlp.c_fc.bias", [16]),
             ("mlp.c_proj.weight", [4, 16]), ("mlp.c_proj.bias", [4])]:
    shapes["transformer.h.0." + n] = s
header, at = {"__metadata__": {"kvlab.config": json.dumps(cfg)}}, 0
for name, shape in shapes.items():
    n = 1
    for x in shape: n *= x
    header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [at, at + 2 * n]}
    at += 2 * n
h = json.dumps(header).encode()
open(d + "/block.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes(at))
EOF
expect_usage_error "block_size 1048576 exceeds the budget of 65536" perplexity --weights "$rdir/block.safetensors"
expect_usage_error "block_size 1048576 exceeds the budget of 65536" kv-invariance --weights "$rdir/block.safetensors"

# perplexity's work budget (lib/core/work_budget.hpp): windows × one forward of block_size tokens.
expect_exit 0 model init --out "$rdir/long.safetensors" --positional rope --block-size 65536 --vocab 256 --d-model 8 \
  --heads 1 --kv-heads 1 --head-dim 8 --n-layer 1
head -c 1100000 /dev/urandom > "$rdir/text.bin"
expect_usage_error "--max-windows" perplexity --weights "$rdir/long.safetensors" --text "$rdir/text.bin"

# KVLAB_DATA that holds no catalogue: the commands that do not need it work, the others say so.
export KVLAB_DATA="$rdir"
expect_exit 0 --version
expect_exit 0 --help
expect_exit 0 info
expect_exit 0 list
expect_exit 0 explain kv-size
expect_usage_error KVLAB_DATA cheatsheet
expect_usage_error KVLAB_DATA cheatsheet --gpu a100-80gb
expect_usage_error KVLAB_DATA kv-size
expect_usage_error KVLAB_DATA roofline --model llama-2-7b
unset KVLAB_DATA

rm -rf "$rdir"
