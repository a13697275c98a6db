# `kvlab errata`: the contract's JSON keys, --id, --lang zh aligned by display width, every entry's
# command a real kvlab command, and bad input one line naming its flag. Sourced by
# tests/cli_test.sh, which defines $kvlab, kv, expect_exit and expect_usage_error.
expect_exit 0 errata
expect_exit 0 errata --format md
expect_exit 0 errata --lang zh
expect_usage_error --format errata --format xml
expect_usage_error --lang errata --lang fr
expect_usage_error --id errata --id E999
err=$(KVLAB_LANG=fr kv errata 2>&1 >/dev/null); rc=$?
case "$rc:$err" in
  2:*KVLAB_LANG*) echo "ok: KVLAB_LANG=fr kvlab errata -> 2 ($err)" ;;
  *) echo "FAIL: KVLAB_LANG=fr kvlab errata exited $rc: $err"; failures=$((failures + 1)) ;;
esac

# JSON: {"errata": [{"id", "source", "document", "kvlab", "arithmetic", "command"}...]}, ids unique,
# and --id E3,E31 gives those two, in the catalogue's order.
if kv errata --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
ids = [e["id"] for e in d["errata"]]
assert len(ids) == len(set(ids)) >= 35, ids
for e in d["errata"]:
    for k in ("id", "source", "document", "kvlab", "arithmetic", "command"):
        assert isinstance(e[k], str) and e[k], (e["id"], k)
'; then echo "ok: errata --format json has the contract keys"; else echo "FAIL: errata --format json lacks a contract key"; failures=$((failures + 1)); fi
if [ "$(kv errata --format json --id E31,E3 | python3 -c 'import json,sys; print(",".join(e["id"] for e in json.load(sys.stdin)["errata"]))')" = "E3,E31" ]; then
  echo "ok: errata --id E31,E3 gives E3 and E31"
else
  echo "FAIL: errata --id E31,E3 does not give exactly E3, E31"; failures=$((failures + 1))
fi

# --lang zh (and KVLAB_LANG=zh): Chinese labels, and every label's text starts at one display column.
zh=$(kv errata --lang zh --id E1,E31)
if [ "$zh" = "$(KVLAB_LANG=zh kv errata --id E1,E31)" ] && printf '%s\n' "$zh" | python3 -c '
import sys, unicodedata
def width(s): return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
cols = set()
for line in sys.stdin.read().splitlines():
    for label in ("文档原文", "计算", "说明", "命令", "约定"):
        if line.startswith("  " + label):
            rest = line[2 + len(label):]
            cols.add(width("  " + label) + len(rest) - len(rest.lstrip(" ")))
assert len(cols) == 1, cols
'; then echo "ok: errata --lang zh aligns its labels by display width"; else echo "FAIL: errata --lang zh is not aligned (or KVLAB_LANG=zh differs)"; failures=$((failures + 1)); fi

# Every entry's command is a kvlab command that runs: exit 0 or 1, never 2.
while IFS= read -r cmd; do
  # shellcheck disable=SC2086
  kv ${cmd#kvlab } >/dev/null 2>&1; rc=$?
  if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then echo "ok: $cmd -> $rc"; else echo "FAIL: errata command '$cmd' exited $rc"; failures=$((failures + 1)); fi
done < <(kv errata --format json | python3 -c 'import json,sys; print("\n".join(sorted({e["command"] for e in json.load(sys.stdin)["errata"]})))')
