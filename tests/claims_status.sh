#!/usr/bin/env bash
# docs/claims.md: no claim row may be "shown (not judged)" or planned (for a GPU run or proposed), and the count
# line at the end of "How this page is kept true" must match the status column, recounted here
# (a row counts by the first words of its status: checked, shown (not judged), planned (GPU),
# planned (proposed), not checkable).
#   tests/claims_status.sh [path/to/claims.md]
set -u
doc="${1:-$(dirname "$0")/../docs/claims.md}"
[ -r "$doc" ] || { echo "FAIL: cannot read $doc"; exit 1; }
# Claim rows: | 000-… | … | status |. The status is the last cell.
rows=$(grep -E '^\| (000|003|004)-[^ |]+ \|' "$doc")
fail=0
bad=$(printf '%s\n' "$rows" | awk -F' \\| ' '{s=$NF; sub(/ \|$/, "", s); if (s ~ /shown \(not judged\)|planned \((proposed|GPU)\)/) print $1}' | sed 's/^| //')
if [ -n "$bad" ]; then
  echo "FAIL: rows with status 'shown (not judged)', 'planned (GPU)' or 'planned (proposed)' (judge them, or argue 'not checkable'):"
  printf '  %s\n' $bad
  fail=1
fi
count() {  # count DOC PREFIX-REGEX
  printf '%s\n' "$rows" | grep -E "^\| $1-" | awk -F' \\| ' -v re="$2" '{s=$NF; sub(/ \|$/, "", s); if (s ~ re) n++} END {print n + 0}'
}
line=""
for d in 000 003 004; do
  total=$(printf '%s\n' "$rows" | grep -cE "^\| $d-")
  c=$(count $d '^checked'); sh=$(count $d '^shown \\(not judged\\)'); pi=$(count $d '^planned \\(GPU\\)')
  pp=$(count $d '^planned \\(proposed\\)'); nc=$(count $d '^not checkable')
  if [ $((c + sh + pi + pp + nc)) != "$total" ]; then
    echo "FAIL: $d: $total rows, but only $((c + sh + pi + pp + nc)) start with a known status"; fail=1
  fi
  if [ $d = 000 ]; then
    line="000: $total claims ($c checked, $sh shown (not judged), $pi planned for a GPU run, $pp proposed, $nc not checkable)"
  else
    line="$line; $d: $total claims ($c, $sh, $pi, $pp, $nc)"
  fi
done
want="*Counts: $line.*"
if ! grep -qxF "$want" "$doc"; then
  echo "FAIL: the count line of docs/claims.md does not match its status column. Recounted:"
  echo "  $want"
  echo "  on the page: $(grep -E '^\*Counts:' "$doc")"
  fail=1
fi
[ $fail = 0 ] && echo "ok: docs/claims.md has no shown-only or proposed claim, and its count line matches ($line)"
exit $fail
