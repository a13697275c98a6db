#!/usr/bin/env bash
# docs/claims.md's "Document errata" and `kvlab errata` (data/errata.json) agree: the same ids with
# the same sources, and its table of ERRATUM lines names for each check exactly the entries the
# catalogue marks as flagged by it (tests/lib/errata/errata_test.cpp proves the checks flag those).
#   tests/claims_errata.sh path/to/kvlab [path/to/claims.md]
set -u
kvlab=$1
doc="${2:-$(dirname "$0")/../docs/claims.md}"
[ -r "$doc" ] || { echo "FAIL: cannot read $doc"; exit 1; }
json=$("$kvlab" errata --format json) || { echo "FAIL: kvlab errata --format json exited $?"; exit 1; }
printf '%s' "$json" | python3 -c '
import json, re, sys
doc = open(sys.argv[1], encoding="utf-8").read()
cat = json.load(sys.stdin)["errata"]
fail = 0
section = doc.split("## Document errata", 1)[1].split("\n## ", 1)[0]
# Entries: "- **E1 (003 Q5).** ..."
page = {m.group(1): m.group(2) for m in re.finditer(r"^- \*\*(E\d+) \((.*?)\)\.\*\*", section, re.M)}
kv = {e["id"]: e["source"] for e in cat}
for i in sorted(set(page) | set(kv), key=lambda s: int(s[1:])):
    if i not in page:
        print(f"FAIL: {i} is in kvlab errata ({kv[i]}) but not in docs/claims.md"); fail = 1
    elif i not in kv:
        print(f"FAIL: {i} is in docs/claims.md ({page[i]}) but not in kvlab errata"); fail = 1
    elif page[i] != kv[i]:
        print(f"FAIL: {i}: docs/claims.md says ({page[i]}), kvlab errata says ({kv[i]})"); fail = 1
# The table of ERRATUM lines: "| source — quantity | `check` | E20 … |"
pairs = set()
for line in section.splitlines():
    m = re.match(r"^\| .* \| `([a-z0-9-]+)` \| (E\d+)\b.*\|$", line)
    if m: pairs.add((m.group(1), m.group(2)))
flagged = {(c, e["id"]) for e in cat for c in e["flagged_by"]}
for c, i in sorted(pairs - flagged):
    print(f"FAIL: docs/claims.md lists an ERRATUM line of {c} as {i}; kvlab errata does not mark {i} flagged by {c}"); fail = 1
for c, i in sorted(flagged - pairs):
    print(f"FAIL: kvlab errata marks {i} flagged by {c}; the ERRATUM table of docs/claims.md has no such line"); fail = 1
if not fail:
    print(f"ok: docs/claims.md and kvlab errata list the same {len(kv)} entries with the same sources, "
          f"and the same {len(flagged)} (check, entry) pairs of ERRATUM lines")
sys.exit(fail)
' "$doc"
