# What the front end tells a user who typed something wrong: the help to read, why --plot is
# refused, a number beyond a double's range; and what --help shows.
# Sourced by tests/cli_test.sh, which defines $kvlab, failures, expect_exit and expect_usage_error.

# A refused option points at the help of the command it was given to, where its options are.
expect_usage_error "(see kvlab spec-speedup --help)" spec-speedup --no-such-option
expect_usage_error "(see kvlab spec-speedup --help)" spec-speedup --prompts
expect_usage_error "(see kvlab model init --help)" model init --no-such-option
expect_usage_error "(see kvlab --help)" --no-such-option
# The unknown option is named first, before a missing required one; options before the command's
# name are told where they go.
expect_usage_error "--bogus: not an option of kvlab model init" model init --bogus
expect_usage_error "--colour: not an option of kvlab kv-size" kv-size --colour=red
expect_usage_error "options go after the command's name: kvlab kv-size [options] (got '--seed' before 'kv-size')" --seed 3 kv-size

# --plot on a check that draws nothing: one line naming the check and the checks that draw.
expect_usage_error "--plot: kv-invariance draws no plot" kv-invariance --plot x.svg
expect_usage_error "roofline" kv-invariance --plot=term
expect_usage_error "--plot: max-batch draws no plot" max-batch --seed 1 --plot term
if "$kvlab" list --format json | python3 -c '
import json, sys
plot = {c["check"]: c["plot"] for c in json.load(sys.stdin)}
assert plot["roofline"] and not plot["kv-invariance"], plot'; then
  echo "ok: list --format json says which checks draw (\"plot\")"
else
  echo "FAIL: list --format json has no \"plot\" trait"; failures=$((failures + 1))
fi

# A decimal beyond a double is a number out of range (the range said), not "not a decimal number".
expect_usage_error "--alpha-target: must be a finite number in [0, 1] (got 1e400, beyond the range of a double)" \
  spec-alpha --alpha-target 1e400
expect_usage_error "must be a finite number in [0.01, 10] (got -1e400, beyond the range of a double)" \
  spec-speedup --temperature -1e400
expect_usage_error "(got 1e-400, too close to 0 for a double)" spec-alpha --alpha-target 1e-400
expect_usage_error "'1e4x' is not a decimal number; must be a finite number in [0, 1]" spec-alpha --alpha-target 1e4x

# max-batch --help shows its defaults as the other checks' help does (CLI11's =VALUE).
mb_help=$("$kvlab" max-batch --help)
mb_missing=""
for shown in "TEXT=llama-3-70b" "TEXT=a100-80gb" "INT in [1, 4096]=8" "=4096" "}=fp16" "64]=2"; do
  printf '%s' "$mb_help" | grep -qF -- "$shown" || mb_missing="$mb_missing '$shown'"
done
if [ -z "$mb_missing" ]; then echo "ok: max-batch --help shows its defaults"
else echo "FAIL: max-batch --help does not show$mb_missing"; failures=$((failures + 1)); fi

# In Chinese a check's erratum lines read "勘误", and `kvlab errata --lang zh` greps for that.
if "$kvlab" errata --lang zh | grep -qF '`kvlab all --full --lang zh | grep 勘误`' &&
   "$kvlab" all --only max-batch --full --lang zh | grep -q '^  - 勘误 E4 '; then
  echo "ok: errata --lang zh names the grep that finds the Chinese erratum lines"
else
  echo "FAIL: errata --lang zh and the Chinese erratum lines disagree"; failures=$((failures + 1))
fi

# --dtype and --device in a check's --help: a check that would refuse them says so there.
case "$("$kvlab" kv-size --help)" in
  *"Not taken: kv-size offers no choice of model dtype"*"kv-size has no CUDA implementation (cuda is refused)"*)
    echo "ok: kv-size --help says --dtype is not taken and --device is the CPU" ;;
  *) echo "FAIL: kv-size --help offers --dtype and --device as if it used them"; failures=$((failures + 1)) ;;
esac
case "$("$kvlab" incremental-vs-full --help)" in
  *"Not taken"*|*"no CUDA implementation"*)
    echo "FAIL: incremental-vs-full --help refuses --dtype or --device, which it uses"; failures=$((failures + 1)) ;;
  *"Model arithmetic: f64"*) echo "ok: incremental-vs-full --help offers --dtype and --device" ;;
  *) echo "FAIL: incremental-vs-full --help lacks --dtype's help"; failures=$((failures + 1)) ;;
esac
expect_usage_error "--dtype: kv-size offers no choice of model dtype" kv-size --dtype f32
expect_usage_error "(see kvlab cpu-roofline --help)" cpu-roofline --dtype f32
# --device cuda on a check without a CUDA path says so on any machine, before whether a GPU is here.
expect_usage_error "--device cuda: kv-size has no CUDA implementation" kv-size --device cuda
# An integer with leading zeros is read in base 10, as its range was checked: 010 is ten, not
# octal eight (CLI11 converts with strtoll's base 0 after the validator accepted the digits).
if [ "$("$kvlab" max-batch --gpus 010 --format json)" = "$("$kvlab" max-batch --gpus 10 --format json)" ] &&
   [ "$("$kvlab" spec-alpha --seed 010 --format json)" = "$("$kvlab" spec-alpha --seed 10 --format json)" ] &&
   [ "$("$kvlab" max-batch --gpus 08 --format json)" = "$("$kvlab" max-batch --format json)" ]; then
  echo "ok: --gpus 010 is ten, --seed 010 is ten, --gpus 08 is eight"
else
  echo "FAIL: a leading zero changed an integer option's value"; failures=$((failures + 1))
fi

# A KV budget beyond what the weights leave blames --kv-budget-gb alone, with the figures.
expect_usage_error "--kv-budget-gb: must be in [0, 498.892587], the GB that 8 × a100-80gb (640 GB) leave after 141.107 GB of weights (got 500)" \
  max-batch --kv-budget-gb 500

# An option's value that starts with "--" is its value, not an unknown option; options before the
# command's value are not taken for a command; what a user typed reaches stderr as one safe line.
expect_usage_error "--seed" kv-size --model --bogus --seed abc
expect_usage_error "options go after the command's name: kvlab all [options] (got '--only' before 'all')" --only kv-size all
expect_usage_error "--bo?gus: not an option of kvlab kv-size" kv-size $'--bo\ngus'
