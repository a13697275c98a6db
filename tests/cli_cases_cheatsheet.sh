# kvlab cheatsheet: tables by name, --list, the four formats, overrides validated.
# Sourced by tests/cli_test.sh, which defines $kvlab, expect_exit and expect_stderr_mentions.
expect_exit 0 cheatsheet
expect_exit 0 cheatsheet --list
expect_exit 0 cheatsheet --list --format json
expect_exit 0 cheatsheet 000-9.1 004-2.5 --ctx 32768 --batch 4 --kv-dtype fp8 --gpu h100-sxm
expect_exit 0 cheatsheet --format csv
expect_exit 0 cheatsheet --ctx 2097152 --batch 65536
expect_usage_error no-such-table cheatsheet no-such-table
for bad in "--ctx 0" "--ctx 2097153" "--ctx -1" "--ctx 1e3" "--batch 0" "--batch 65537" "--batch abc" \
           "--kv-dtype fp4" "--gpu tpu" "--format yaml"; do
  # shellcheck disable=SC2086
  expect_exit 2 cheatsheet $bad
  # shellcheck disable=SC2086
  expect_stderr_mentions "${bad%% *}" cheatsheet $bad
done
cs_json=$("$kvlab" cheatsheet --format json)
if printf '%s' "$cs_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["tables"]) >= 15 and all(t["source"] and t["assumptions"] for t in d["tables"])'; then
  echo "ok: cheatsheet --format json parses, every table with source and assumptions"
else
  echo "FAIL: cheatsheet --format json"; failures=$((failures + 1))
fi
if "$kvlab" cheatsheet 000-2.2 --ctx 8192 | grep -q "ctx 8192"; then echo "ok: cheatsheet states an override"
else echo "FAIL: cheatsheet 000-2.2 --ctx 8192 does not state ctx 8192"; failures=$((failures + 1)); fi
