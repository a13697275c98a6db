# Work budgets (core/work_budget.hpp): in-range options whose work would run for minutes or hours
# are refused before any work, one line naming the flags and the 60 s budget, exit 2. Each of these
# ran for minutes (or built tens of GB) before the budgets; `tests/sweep.sh --max` covers every
# option at its largest value.
expect_usage_error "--gemm-n 8192" machine --gemm-n 8192 --repeats 100
expect_usage_error "budget" machine --gemm-n 8192 --repeats 100
expect_usage_error "--size-mib 16384" machine --size-mib 16384
expect_usage_error "--d-model 4096" cpu-roofline --d-model 4096 --layers 48
expect_usage_error "--repeats 50" cpu-roofline --repeats 50 --stream-mib 4096
expect_usage_error "--repeats 100" bench decode --d-model 4096 --layers 32 --ctx 8192 --steps 1000 --repeats 100
expect_usage_error "budget of 67108864" model init --out "$(mktemp -u).safetensors" --layers 32 --d-model 1024
# The trained pair and the fortunes text decide whether the trained modes run (they are skipped,
# exit 0, without them); with them, the largest counts are over the budget.
if [ -f "$(dirname "$0")/../data/weights/target.safetensors" ] && [ -d /usr/share/games/fortunes ]; then
  expect_usage_error "--windows 4096" gqa-meanpool --windows 4096
  expect_usage_error "--exact-samples 100000" spec-real --exact-samples 100000
  expect_usage_error "--alpha-windows 4096" spec-real --alpha-windows 4096
fi
# perplexity over every window of a 2 MB text: 15,000 forwards of the target, about 7 minutes.
if [ -f "$(dirname "$0")/../data/weights/target.safetensors" ]; then
  budget_text=$(mktemp)
  head -c 2000000 /dev/urandom > "$budget_text"
  expect_usage_error "--max-windows 0" perplexity --weights "$(dirname "$0")/../data/weights/target.safetensors" \
    --text "$budget_text"
  rm -f "$budget_text"
fi
# The quiz reads one number per line: "1,5" is neither 1 nor silently 1.5 but asked again, and
# nan/inf never reach the score ("+nan%").
quiz_out=$(printf '1,5\nnan\n1\n' | kv quiz --count 1 --seed 3)
case $quiz_out in
  *comma*"not within tolerance"*) echo "ok: quiz asks again after '1,5' and 'nan'" ;;
  *) echo "FAIL: kvlab quiz with '1,5' then 'nan': $quiz_out"; failures=$((failures + 1)) ;;
esac
case $quiz_out in
  *nan%* | *inf%*) echo "FAIL: kvlab quiz printed a non-finite percentage: $quiz_out"; failures=$((failures + 1)) ;;
esac
# The hang limit (cli_test.sh: kv): a run that the wall-clock kills is rerun once, so that a
# machine busy for one run's worth of time does not fail a test; a run that hangs twice is 124.
budget_tmp=$(mktemp -d)
cat > "$budget_tmp/slow-once" <<'FAKE'
#!/usr/bin/env bash
# First call: descheduled for longer than the hang limit; second call: answers at once.
if [ -e "$0.ran" ]; then echo "result"; exit 0; fi
: > "$0.ran"; sleep 5; echo "late"
FAKE
printf '#!/usr/bin/env bash\nsleep 5\n' > "$budget_tmp/hangs"
chmod +x "$budget_tmp/slow-once" "$budget_tmp/hangs"
rerun_out=$(kvlab=$budget_tmp/slow-once hang_limit=1 kv 2>/dev/null 3>/dev/null); rerun_rc=$?
if [ "$rerun_rc" = 0 ] && [ "$rerun_out" = result ]; then echo "ok: a run past the hang limit once is rerun and passes"
else echo "FAIL: kv after one slow run: exit $rerun_rc, output '$rerun_out'"; failures=$((failures + 1)); fi
kvlab=$budget_tmp/hangs hang_limit=1 kv >/dev/null 2>&1 3>/dev/null; hang_rc=$?
if [ "$hang_rc" = 124 ]; then echo "ok: a run past the hang limit twice is a hang (124)"
else echo "FAIL: kv on a hang: exit $hang_rc, want 124"; failures=$((failures + 1)); fi
rm -rf "$budget_tmp"
# Found by `tests/sweep.sh --max`: --batch 256 left no decode point within --max-cached-tokens
# (an internal error after minutes of building); gqa-meanpool --long refused its uptraining only
# after the evaluation's seconds of work.
expect_usage_error --max-cached-tokens cpu-roofline --batch 256

# KVLAB_WORK_BUDGET: the refusal says how to raise the budget on purpose; a value that is not
# seconds from 1 to 86400 is one line naming the variable.
expect_usage_error "KVLAB_WORK_BUDGET=SECONDS" machine --gemm-n 8192 --repeats 100
KVLAB_WORK_BUDGET=abc expect_usage_error KVLAB_WORK_BUDGET machine --gemm-n 8192 --repeats 100
KVLAB_WORK_BUDGET=0 expect_usage_error KVLAB_WORK_BUDGET machine --gemm-n 8192 --repeats 100
KVLAB_WORK_BUDGET=nan expect_usage_error KVLAB_WORK_BUDGET machine --gemm-n 8192 --repeats 100
KVLAB_WORK_BUDGET="$(printf '9\033[2J')" expect_usage_error KVLAB_WORK_BUDGET machine --gemm-n 8192 --repeats 100
