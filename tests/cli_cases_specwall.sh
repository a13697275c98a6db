# CLI cases of spec-wallclock (sourced by cli_test.sh): bad options exit 2 naming the option;
# --quick runs (a benchmark: its verdict depends on this machine, exit 0 or 1), with the
# long-context case at a short context, and its JSON carries the contract's metrics and the window
# draft's. Under the sanitizers --quick times a tiny model once (seconds).
tmp_specwall=$(mktemp -d)
expect_exit 2 spec-wallclock --k 9
expect_usage_error skip-layers spec-wallclock --skip-layers 6
expect_usage_error d-model spec-wallclock --d-model 800
expect_usage_error "--d-model 4096" spec-wallclock --d-model 4096 --layers 48   # the work budget, before any weight
expect_usage_error context spec-wallclock --context 1024                 # the long-context case's option alone
expect_usage_error context spec-wallclock --long-context --context 100
expect_usage_error recent spec-wallclock --long-context --context 512 --recent 510   # the window covers the context
kv spec-wallclock --quick --long-context --context 512 --format json > "$tmp_specwall/q.json"; rc=$?
if { [ $rc = 0 ] || [ $rc = 1 ]; } && python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
for k in ("speedup_measured_best", "speedup_predicted_at_best", "best_k", "alpha", "verify_cost", "c",
          "speedup_measured_best_window", "alpha_window", "c_window", "long_context_kv_bytes_per_step"):
    assert k in j["metrics"], k' "$tmp_specwall/q.json"; then
  echo "ok: spec-wallclock --quick --long-context -> $rc, json with the contract metrics and the window draft's"
else
  echo "FAIL: spec-wallclock --quick exited $rc or its json lacks the metrics"; failures=$((failures + 1))
fi
rm -rf "$tmp_specwall"
