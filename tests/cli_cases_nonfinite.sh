# Nothing passes on NaN (sourced by cli_test.sh): a weights file whose values are finite but whose
# forward overflows (every weight times 1e200 in float64, 1e30 in float32) is refused by every check
# that takes --weights with one line naming the file, exit 2, never PASS; kv-invariance refuses a
# bidirectional file as the other cache checks do.
ndir=$(mktemp -d)
# rewrite_safetensors IN OUT SCALE CAUSAL: IN's F64 tensors times SCALE, and the config's causal
# field set to CAUSAL (true|false), written as a valid safetensors file OUT.
rewrite_safetensors() {
  python3 - "$@" <<'PY'
import json, struct, sys
src, dst, scale, causal = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "true"
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
for name, t in header.items():
    if name == "__metadata__":
        continue
    assert t["dtype"] == "F64", t["dtype"]
    lo, hi = t["data_offsets"]
    vals = struct.unpack(f"<{(hi - lo) // 8}d", data[lo:hi])
    data[lo:hi] = struct.pack(f"<{len(vals)}d", *(v * scale for v in vals))
cfg = json.loads(header["__metadata__"]["kvlab.config"])
cfg["causal"] = causal
header["__metadata__"]["kvlab.config"] = json.dumps(cfg, sort_keys=True, separators=(",", ":"))
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
PY
}
expect_exit 0 model init --seed 3 --out "$ndir/m.safetensors" --vocab 256 --block-size 96 --d-model 32 --heads 4 \
  --kv-heads 2 --head-dim 8 --store F64
rewrite_safetensors "$ndir/m.safetensors" "$ndir/big.safetensors" 1e200 true
rewrite_safetensors "$ndir/m.safetensors" "$ndir/big32.safetensors" 1e30 true
rewrite_safetensors "$ndir/m.safetensors" "$ndir/bidir.safetensors" 1 false
for c in kv-invariance incremental-vs-full query-not-cached paged-vs-contiguous position-offset bidirectional \
         jacobi prefix-cache parallel-sampling greedy-generate ragged-batch sliding-window bench-generate; do
  expect_usage_error "--weights $ndir/big.safetensors: the forward gives non-finite values" \
    "$c" --weights "$ndir/big.safetensors"
done
for c in kv-invariance paged-vs-contiguous prefix-cache parallel-sampling greedy-generate jacobi; do
  expect_usage_error "overflow float32" "$c" --weights "$ndir/big32.safetensors" --dtype f32
done
for c in spec-greedy spec-speedup; do
  expect_usage_error "the forward gives non-finite values" \
    "$c" --weights "$ndir/big.safetensors" --draft-weights "$ndir/m.safetensors"
done
expect_usage_error "--draft-weights $ndir/big.safetensors: the forward gives non-finite values" \
  spec-greedy --weights "$ndir/m.safetensors" --draft-weights "$ndir/big.safetensors"
expect_stderr_mentions "non-finite" perplexity --weights "$ndir/big.safetensors" --text "$ndir/m.safetensors" \
  --dtype f64
# A bidirectional file: refused with the field and the reason, as incremental-vs-full refuses it.
expect_usage_error "causal = false, kv-invariance needs true" kv-invariance --weights "$ndir/bidir.safetensors"
expect_usage_error "causal = false" incremental-vs-full --weights "$ndir/bidir.safetensors"
rm -rf "$ndir"
