# The front end: --plot (checks that sweep) and `kvlab explain`.
# one line says how to install it and the verdict's exit status stands.
# Sourced by tests/cli_test.sh, which defines $kvlab, expect_exit and expect_stderr_mentions.
expect_usage_error --plot roofline --plot roof.png
expect_usage_error "cannot write" roofline --plot /nonexistent-dir/roof.svg
expect_exit 2 kv-invariance --plot term   # a check that draws nothing has no --plot
plot_err=$(KVLAB_GNUPLOT=/nonexistent "$kvlab" roofline --plot term 2>&1 >/dev/null); plot_rc=$?
case "$plot_rc:$plot_err" in
  "0:"*"apt-get install gnuplot-nox"*) echo "ok: --plot without gnuplot says how to install it" ;;
  *) echo "FAIL: --plot without gnuplot: rc $plot_rc, stderr: $plot_err"; failures=$((failures + 1)) ;;
esac
if command -v gnuplot >/dev/null; then
  plot_svg=$(mktemp -d)/roof.svg
  if "$kvlab" roofline --format json --plot "$plot_svg" >/dev/null 2>&1 && grep -q "<svg" "$plot_svg"; then
    echo "ok: roofline --plot FILE.svg writes an SVG"
  else
    echo "FAIL: roofline --plot $plot_svg wrote no SVG"; failures=$((failures + 1))
  fi
  rm -rf "$(dirname "$plot_svg")"
fi

# kvlab explain: the derivation of a named check; an unknown name is exit 2 naming it.
expect_exit 0 explain kv-invariance
expect_usage_error no-such-check explain no-such-check
expect_exit 2 explain
if "$kvlab" explain spec-etau | grep -q "Source: 000 §7.4"; then echo "ok: explain prints the source"
else echo "FAIL: kvlab explain spec-etau does not end with its source"; failures=$((failures + 1)); fi

# kvlab quiz: the worksheet prints with answers and reads nothing; bad flags exit 2 naming them.
expect_exit 0 quiz --answers --seed 1
expect_exit 0 quiz --answers --format md --count 10 --kind etau --kind ridge
expect_usage_error --count quiz --count 0
expect_usage_error --kind quiz --kind kv
if printf '1\n2\n' | "$kvlab" quiz --count 3 | grep -q "score: "; then echo "ok: quiz reads answers and scores"
else echo "FAIL: kvlab quiz with piped answers prints no score"; failures=$((failures + 1)); fi

# kv-size draws the cache over context (the model, and its MHA and MQA variants).
KVLAB_GNUPLOT=/nonexistent expect_exit 0 kv-size --model llama-3-70b --ctx 8192 --plot term

# The serving checks draw KV utilization over time and the latency distribution.
KVLAB_GNUPLOT=/nonexistent expect_exit 0 continuous-batching --plot term
