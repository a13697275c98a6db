#!/usr/bin/env bash
# README.md's check table must be exactly `kvlab list --format md` (between the markers
# <!-- checks:begin --> and <!-- checks:end -->): a check's name, source and summary are written
# once, in its spec. Fails, with the command that refreshes it, when the committed table is stale.
#   tests/readme_fresh.sh path/to/kvlab
#   tests/readme_fresh.sh --refresh path/to/kvlab     rewrites the block from the registry
set -u
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  if [ $# -ge 1 ]; then exit 0; else exit 2; fi
fi
readme="$(dirname "$0")/../README.md"
if [ "$1" = --refresh ]; then
  [ $# -ge 2 ] || { echo "usage: tests/readme_fresh.sh --refresh path/to/kvlab"; exit 2; }
  table=$("$2" list --format md) || { echo "kvlab list --format md failed"; exit 1; }
  TABLE="$table" python3 - "$readme" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
block = "<!-- checks:begin -->\n" + os.environ["TABLE"] + "\n<!-- checks:end -->"
text, n = re.subn(r"<!-- checks:begin -->\n.*?<!-- checks:end -->", lambda m: block, text, flags=re.S)
if n != 1:
    sys.exit("README.md: no single <!-- checks:begin --> ... <!-- checks:end --> block")
open(path, "w", encoding="utf-8").write(text)
PY
  exit $?
fi
kvlab=$1
committed=$(mktemp) fresh=$(mktemp)
trap 'rm -f "$committed" "$fresh"' EXIT
sed -n '/^<!-- checks:begin -->$/,/^<!-- checks:end -->$/p' "$readme" | sed '1d;$d' > "$committed"
if [ ! -s "$committed" ]; then
  echo "FAIL: README.md has no <!-- checks:begin --> ... <!-- checks:end --> block"; exit 1
fi
if ! table=$("$kvlab" list --format md); then  # $( ) drops the blank line after the table
  echo "FAIL: kvlab list --format md exited non-zero"; exit 1
fi
printf '%s\n' "$table" > "$fresh"
if diff -u "$committed" "$fresh"; then
  echo "ok: README.md's check table is up to date"
else
  echo "FAIL: README.md's check table is stale (diff above: committed vs generated)."
  echo "Refresh it with: tests/readme_fresh.sh --refresh build/bin/kvlab  (then commit README.md)"
  exit 1
fi
