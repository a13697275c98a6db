# CLI cases of the CUDA commands (sourced by cli_test.sh): kvlab parity and kvlab bench kernels. On a
# machine without a GPU (CI) both print "skipped: ..." and exit 0; on a GPU they run.

# parity: exit 0 (all passed or skipped); the text says what it skipped when it skipped.
expect_exit 0 parity
if out=$(kv parity 2>&1); then
  case "$out" in
    "skipped: built without CUDA"*|"skipped: no CUDA device"*|*"passed, 0 failed"*) echo "ok: parity -> ${out%%$'\n'*}" ;;
    *) echo "FAIL: parity printed neither a skip line nor a passing table: ${out:0:200}"; failures=$((failures + 1)) ;;
  esac
else
  echo "FAIL: kvlab parity exited non-zero: ${out:0:300}"; failures=$((failures + 1))
fi
# The comparison itself, through the float32 CPU stand-in: every row passes; json carries the rows.
expect_exit 0 parity --runner cpu-f32
if kv parity --runner cpu-f32 --format json |
   python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["rows"]; assert j["failed"]==0 and len(r)>=30; assert {x["kernel"] for x in r}=={"kv_append","rope","decode_attention","layer_norm","gelu","softmax"}; assert all(x["error"]<=x["bound"] for x in r)'; then
  echo "ok: parity --runner cpu-f32 --format json: every kernel, every row within its bound"
else
  echo "FAIL: parity --runner cpu-f32 --format json"; failures=$((failures + 1))
fi
kv parity --format json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert "skipped" in j or j["failed"]==0' \
  && echo "ok: parity --format json parses" || { echo "FAIL: parity --format json"; failures=$((failures + 1)); }
expect_exit 2 parity --runner gpu
expect_exit 2 parity --seed -1
expect_exit 2 parity --format yaml
expect_stderr_mentions runner parity --runner gpu

# bench kernels: bad values exit 2 naming the option (checked before the device is looked for).
expect_exit 2 bench kernels --heads 32/5
expect_stderr_mentions heads bench kernels --heads 32/5
expect_exit 2 bench kernels --heads abc
expect_exit 2 bench kernels --heads 64/1 --head-dim 256
expect_exit 2 bench kernels --head-dim 0
expect_exit 2 bench kernels --kv-ctx 0
expect_exit 2 bench kernels --block-size 2000
expect_exit 2 bench kernels --cache f16
expect_exit 2 bench kernels --copy-mib 1
expect_stderr_mentions kv-ctx bench kernels --kv-ctx -3
# Without a GPU: one skip line, exit 0 (with one: a small run).
if out=$(kv bench kernels --batch 1 --kv-ctx 256 --heads 8/2 --gemm-m 8 --gemm-d 256 --copy-mib 64 --repeats 2 2>&1); then
  case "$out" in
    "skipped: "*|*"decode attention on"*) echo "ok: bench kernels -> ${out%%$'\n'*}" ;;
    *) echo "FAIL: bench kernels printed: ${out:0:200}"; failures=$((failures + 1)) ;;
  esac
else
  echo "FAIL: bench kernels exited non-zero: ${out:0:300}"; failures=$((failures + 1))
fi
kv bench kernels --batch 1 --kv-ctx 256 --heads 8/2 --gemm-m 8 --gemm-d 256 --copy-mib 64 --repeats 2 --format json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert "skipped" in j or (j["attention"] and j["copy"]["gb_per_s"] > 0)' \
  && echo "ok: bench kernels --format json parses" || { echo "FAIL: bench kernels --format json"; failures=$((failures + 1)); }
expect_exit 2 bench kernels --heads 256/1 --head-dim 16

# --device for the model checks. A check without a CUDA path, or with --dtype f64 on the device,
# is refused on any machine (exit 2, naming the option).
expect_usage_error device bidirectional --device cuda
expect_exit 2 kv-invariance --device cuda --dtype f64
expect_exit 2 kv-invariance --device gpu
if kv parity 2>&1 | head -1 | grep -q '^skipped'; then
  # No GPU here: every check's --device cuda, and all --device cuda, is one clear refusal.
  for c in kv-invariance incremental-vs-full paged-vs-contiguous greedy-generate spec-greedy; do
    expect_usage_error device "$c" --device cuda
  done
  expect_usage_error device all --device cuda
  expect_exit 0 kv-invariance --device auto   # auto falls back to the CPU
else
  # A GPU: the device paths run and hold (float32 tolerances).
  for c in kv-invariance incremental-vs-full paged-vs-contiguous greedy-generate spec-greedy; do
    expect_exit 0 "$c" --device cuda
  done
fi
