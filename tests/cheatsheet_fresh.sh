#!/usr/bin/env bash
# docs/cheatsheet.md must be exactly `kvlab cheatsheet --format md`: regenerates it and
# fails, with the command that refreshes it, when the committed file is stale.
#   tests/cheatsheet_fresh.sh path/to/kvlab
set -u
kvlab=$1
doc="$(dirname "$0")/../docs/cheatsheet.md"
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
if ! "$kvlab" cheatsheet --format md > "$fresh"; then
  echo "FAIL: kvlab cheatsheet --format md exited non-zero"; exit 1
fi
if diff -u "$doc" "$fresh"; then
  echo "ok: docs/cheatsheet.md is up to date"
else
  echo "FAIL: docs/cheatsheet.md is stale (diff above: committed vs generated)."
  echo "Refresh it with: build/bin/kvlab cheatsheet --format md > docs/cheatsheet.md  (then commit it)"
  exit 1
fi
