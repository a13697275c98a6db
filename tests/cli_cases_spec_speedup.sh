# Sourced by cli_test.sh: spec-sampler and spec-speedup, and spec-etau's plot. Bad input
# is exit 2 with one stderr line naming the option; good cases exit 0 with the json keys.

# spec-speedup
for bad in 0 -1 abc 33 1.5; do
  expect_usage_error --prompts spec-speedup --prompts "$bad"
done
for bad in 0 54 abc; do
  expect_usage_error --new-tokens spec-speedup --new-tokens "$bad"
done
for bad in 0 0.001 nan inf 11; do
  expect_usage_error --temperature spec-speedup --temperature "$bad"
done
# Too small for the Freedman bounds to be able to fail: refused, naming the options.
expect_usage_error "could not fail" spec-speedup --prompts 1 --new-tokens 1
expect_exit 0 spec-speedup --dtype f32
speed_json=$("$kvlab" spec-speedup --format json)
if printf '%s' "$speed_json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["metrics"]
assert d["check"] == "spec-speedup" and d["status"] == "pass"
for k in range(1, 9):
    assert 0 <= m["alpha_observed_k%d" % k] <= 1 and 1 <= m["tokens_per_step_k%d" % k] <= k + 1
    assert "seconds_speedup_measured_k%d" % k in m
assert m["cost_ratio_flops"] < 1 and "seconds_cost_ratio_measured" in m and "best_k_flops" in m
assert any(t["title"].startswith("timing") for t in d["tables"])'; then
  echo "ok: spec-speedup --format json has α, tokens/step and the timing metrics for K = 1..8"
else
  echo "FAIL: spec-speedup --format json keys"; failures=$((failures + 1))
fi
expect_usage_error --plot spec-speedup --plot speed.png

# spec-sampler
for bad in 0 -1 abc 28 20001; do
  expect_usage_error --samples spec-sampler --samples "$bad"
done
for bad in -1 9 abc; do
  expect_usage_error --top-k spec-sampler --top-k "$bad"
done
for bad in 0 1.5 nan 0.001; do
  expect_usage_error --top-p spec-sampler --top-p "$bad"
done
for bad in 0 nan 11; do
  expect_usage_error --temperature spec-sampler --temperature "$bad"
done
expect_exit 0 spec-sampler --samples 29 --top-k 1
expect_exit 0 spec-sampler --top-k 0 --top-p 1 --temperature 10 --format json
expect_exit 2 spec-sampler --plot term   # draws nothing: no --plot
sampler_json=$("$kvlab" spec-sampler --format json)
if printf '%s' "$sampler_json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["metrics"]
assert d["check"] == "spec-sampler" and d["status"] == "pass"
for key in ("greedy", "t005", "t_same", "t1", "same"):
    assert m["tv_" + key] < m["tv_bound"] and 0 <= m["alpha_observed_" + key] <= 1
assert m["alpha_first_greedy"] < m["alpha_first_same"]'; then
  echo "ok: spec-sampler --format json has TV and α for every draft sampler"
else
  echo "FAIL: spec-sampler --format json keys"; failures=$((failures + 1))
fi

# --plot term draws spec-speedup's speedups and spec-etau's E[τ] over K (when gnuplot is here).
if command -v gnuplot >/dev/null; then
  for case in "spec-speedup:measured (wall-clock)" "spec-etau:simulated (every α)"; do
    check=${case%%:*} want=${case#*:}
    if "$kvlab" "$check" --plot term 2>/dev/null | grep -qF "$want"; then
      echo "ok: $check --plot term draws '$want'"
    else
      echo "FAIL: $check --plot term does not draw '$want'"; failures=$((failures + 1))
    fi
  done
fi
