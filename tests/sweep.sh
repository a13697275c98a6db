#!/usr/bin/env bash
# Bad-input sweep (issue 3): every option of every registered check, from `kvlab list --options`,
# gets hostile values. A new check joins by registering; nothing here lists checks by hand.
#
# For each run it asserts: no crash, no sanitizer report; and either
#   - rejected: exit 2, exactly one line on stderr that names the option, nothing on stdout,
#     within KVLAB_SWEEP_SECONDS (default 1); or
#   - accepted (the value is legal, e.g. --decode 0): exit 0 or 1, a result on stdout with no
#     nan/inf in it, within 10 × KVLAB_SWEEP_SECONDS (the whole check runs).
# usage: tests/sweep.sh path/to/kvlab   (KVLAB_SWEEP_VERBOSE=1 lists the accepted values)
set -u
kvlab=$1
limit=${KVLAB_SWEEP_SECONDS:-1}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/a-directory"
: > "$tmp/empty.json"
printf '{"num_hidden_layers": 2' > "$tmp/truncated.json"
printf '\xff\xfe\x00garbage' > "$tmp/binary.json"
long=$(printf 'x%.0s' $(seq 1 3000))

numeric_values=(0 -1 99999999999999999999 1e30 -1e30 1e-30 nan inf -inf abc "" 0x10 1.5 " 7" 7abc)
text_values=("" nosuch ../../../../etc/passwd "$long" -1 nan "a b" "é")
# KVLAB_SWEEP_QUICK=1 (the sanitizer stage of `make test`): one value of each kind, and the front
# end's options on one check only (below). Under ASan+UBSan each run pays ~0.25 s of start-up, and
# the full sweep took 12 minutes; the Release stage runs every value on every check.
if [ -n "${KVLAB_SWEEP_QUICK:-}" ]; then
  numeric_values=(0 -1 99999999999999999999 nan abc)
  text_values=("" nosuch "$long")
fi
file_values=(/nonexistent/config.json "$tmp/a-directory" "$tmp/empty.json" "$tmp/truncated.json"
             "$tmp/binary.json")
# Hostile safetensors files for --weights (docs/weights.md lists the reader's rules): truncated,
# header length 2^64 - 1, overlapping offsets, NaN data, trailing bytes, and a valid file that is
# not a model (no kvlab.config, no config.json beside it).
le64() { local n=$1 i; for i in 0 1 2 3 4 5 6 7; do printf "\\$(printf '%03o' $(( (n >> (8 * i)) & 255 )))"; done; }
st_header='{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
st_overlap='{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
{ le64 ${#st_header}; printf '%s' "$st_header"; printf '\0\0\0\0'; } > "$tmp/st_truncated.safetensors"
{ printf '\377\377\377\377\377\377\377\377'; printf '%s' "$st_header"; } > "$tmp/st_huge_header.safetensors"
{ le64 ${#st_overlap}; printf '%s' "$st_overlap"; printf '\0\0\0\0\0\0\0\0'; } > "$tmp/st_overlap.safetensors"
{ le64 ${#st_header}; printf '%s' "$st_header"; printf '\0\0\300\177\0\0\0\0'; } > "$tmp/st_nan.safetensors"
{ le64 ${#st_header}; printf '%s' "$st_header"; printf '\0\0\0\0\0\0\0\0\0'; } > "$tmp/st_trailing.safetensors"
{ le64 ${#st_header}; printf '%s' "$st_header"; printf '\0\0\0\0\0\0\0\0'; } > "$tmp/st_not_a_model.safetensors"
file_values+=("$tmp"/st_*.safetensors)
for f in "$here"/data/configs/*.json; do
  case $(basename "$f") in hf_*) ;; *) file_values+=("$f") ;; esac  # the valid ones are hf_*.json
done

# Benchmarks (Check::is_bench(), "bench": true in `kvlab list --format json`) run with --quick, so an
# accepted value times a tiny model rather than a minute of this machine.
bench_checks=" $("$kvlab" list --format json | python3 -c 'import json, sys
print(" ".join(c["check"] for c in json.load(sys.stdin) if c.get("bench")))') "

# A run is killed only after the longest budget below (10 × the limit; at least 30 s): an accepted
# value under ASan+UBSan on a loaded machine (e.g. spec-real, ~12 s of CPU) must fail on its budget,
# not on a shorter kill (it was a fixed 30 s, below the 100 s budget of the sanitizer stage).
kill_after=$(( limit * 10 > 30 ? limit * 10 + 1 : 30 ))
runs=0 rejected=0 accepted=0 failures=0
fail() { echo "FAIL: kvlab $*"; failures=$((failures + 1)); }

# The front end's options (main.cpp adds them to every check, or every model check) take one path
# whatever the check; the quick sweep tries each on its first check only.
front_end=" --format --seed --dtype --device --plot --weights --draft-weights "
declare -A front_end_seen=()

while IFS=$'\t' read -r check option type; do
  if [ -n "${KVLAB_SWEEP_QUICK:-}" ]; then
    case $front_end in *" $option "*)
      [ -n "${front_end_seen[$option]:-}" ] && continue
      front_end_seen[$option]=1 ;;
    esac
  fi
  case $type in
    FLAG) continue ;;
    INT* | FLOAT*) values=("${numeric_values[@]}") ;;
    FILE*) values=("${file_values[@]}") ;;
    *) values=("${text_values[@]}") ;;
  esac
  name=${option#--}
  for value in "${values[@]}"; do
    runs=$((runs + 1))
    start=$(date +%s%N)
    extra=()
    case $bench_checks in *" $check "*) extra=(--quick) ;; esac
    timeout "$kill_after" "$kvlab" "$check" "${extra[@]}" "$option" "$value" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    shown="$check $option '${value:0:40}'"
    if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$tmp/err"; then
      fail "$shown: sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error' "$tmp/err")"; continue
    fi
    # A rejection must come within the limit; a legal value (e.g. --seed 0) runs the whole check,
    # which may take longer on a loaded machine, so it only has to finish within 10 × the limit.
    budget=$limit
    case $rc in 0 | 1) budget=$((limit * 10)) ;; esac
    if [ "$elapsed_ms" -gt $((budget * 1000)) ]; then
      fail "$shown: took ${elapsed_ms} ms (limit ${budget} s)"; continue
    fi
    case $rc in
      2)
        rejected=$((rejected + 1))
        lines=$(wc -l < "$tmp/err")
        if [ "$lines" != 1 ] || [ -s "$tmp/out" ]; then
          fail "$shown: exit 2 wants one stderr line and no stdout; got $lines lines: $(head -c 300 "$tmp/err")"
        elif ! grep -q -- "$name" "$tmp/err"; then
          fail "$shown: the error does not name '$name': $(cat "$tmp/err")"
        fi ;;
      0 | 1)
        accepted=$((accepted + 1))
        [ -n "${KVLAB_SWEEP_VERBOSE:-}" ] && echo "accepted: $shown -> exit $rc"
        if ! [ -s "$tmp/out" ]; then
          fail "$shown: accepted (exit $rc) but printed no result"
        elif grep -qiwE "nan|-?inf" "$tmp/out"; then
          fail "$shown: accepted (exit $rc) but the result contains nan/inf: $(grep -m1 -iwE 'nan|-?inf' "$tmp/out")"
        fi ;;
      *) fail "$shown: exit $rc: $(head -c 300 "$tmp/err")" ;;
    esac
  done
done < <("$kvlab" list --options)

echo "sweep: $runs runs, $rejected rejected (exit 2), $accepted accepted, $failures failures"
[ "$runs" -gt 0 ] && [ "$failures" -eq 0 ]
