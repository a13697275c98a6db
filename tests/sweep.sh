#!/usr/bin/env bash
# Bad-input sweep: every option of every registered check, from `kvlab list --options`,
# gets hostile values. A new check joins by registering; nothing here lists checks by hand.
#
# For each run it asserts: no crash, no sanitizer report; and either
#   - rejected: exit 2, exactly one line on stderr that names the option, nothing on stdout,
#     within KVLAB_SWEEP_SECONDS of CPU (default 1); or
#   - accepted (the value is legal, e.g. --decode 0): exit 0 or 1, a result on stdout with no
#     nan/inf in it, within 60 × KVLAB_SWEEP_SECONDS of CPU (the work budget of 60 s,
#     core/work_budget.hpp, times the build's slowdown: 10 under the sanitizers).
# Time is CPU time (user + sys, bash's `time`), which a loaded machine does not stretch the way it
# stretches wall-clock time; wall-clock only kills a run that hangs without using the CPU (after
# KVLAB_HANG_SECONDS, default 600: 10 × the work budget), and such a run is rerun once before it
# fails, so no verdict depends on how busy the machine is.
#
# usage: tests/sweep.sh path/to/kvlab          the bad-input sweep (ctest: sweep)
#        tests/sweep.sh --max path/to/kvlab    the work-budget sweep (developers; minutes): every
#          numeric option of every check and command at its largest accepted value, then each
#          with all of them at their largest at once; each run must end within the work budget
#          of CPU or be refused cleanly (exit 2, one line). KVLAB_SWEEP_REPORT=FILE keeps the
#          table of runs (CPU seconds, command, outcome); KVLAB_SWEEP_BUDGET=10 flags every run
#          over 10 s of CPU instead of 60 (a quicker first pass).
# KVLAB_SWEEP_VERBOSE=1 lists the accepted values.
set -u
# The fast path's OpenMP threads spin while they wait (libgomp's default). On a machine busier than
# its cores, that spinning is CPU time the runs below are judged by (spec-wallclock --quick measured
# 80-100 s of CPU at load 3 against 10 s with passive waiting): wait passively, as a shared machine should.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# kvlab calls OpenBLAS on one thread (openblas_set_num_threads(1) at first use), but the pthread
# build starts its pool of workers when the library loads, in each of the sweep's thousands of runs;
# with 1 it starts none. The results are the same.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
mode=bad-input
if [ "${1:-}" = --max ]; then mode=max; shift; fi
kvlab=$1
limit=${KVLAB_SWEEP_SECONDS:-1}
hang_limit=${KVLAB_HANG_SECONDS:-600}
budget=${KVLAB_SWEEP_BUDGET:-60}  # core/work_budget.hpp: kWorkBudgetSeconds (lower it to find slow runs fast)
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
  case $(basename "$f") in hf_*|real_*) ;; *) file_values+=("$f") ;; esac  # valid: hf_*.json, real_*.json
done

# Benchmarks (Check::is_bench(), "bench": true in `kvlab list --format json`) run with --quick, so an
# accepted value times a tiny model rather than a minute of this machine.
bench_checks=" $("$kvlab" list --format json | python3 -c 'import json, sys
print(" ".join(c["check"] for c in json.load(sys.stdin) if c.get("bench")))') "

runs=0 rejected=0 accepted=0 failures=0
fail() { echo "FAIL: kvlab $*"; failures=$((failures + 1)); }

# run_timed CPU_LIMIT ARGS...: runs kvlab ARGS, stdout to $tmp/out and stderr to $tmp/err, with at
# most CPU_LIMIT seconds of CPU (ulimit -t: SIGXCPU past it, exit 152) and KVLAB_HANG_SECONDS of
# wall-clock (exit 124). Sets rc and cpu_ms (user + sys of the run). A run the wall-clock killed is
# rerun once: a correct run can be descheduled that long on a busy machine; twice is a hang.
# Thousands of runs: the harness forks only the subshell that becomes `timeout` (bash's `time`
# writes to $tmp/time; its last line is the figure, after any message of the shell's).
run_timed() {
  local cpu_limit=$1 attempt line u=0.000 s=0.000
  shift
  for attempt in 1 2; do
    { TIMEFORMAT='%3U %3S'
      time ( ulimit -t "$cpu_limit"; exec timeout "$hang_limit" "$kvlab" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" ); } 2>"$tmp/time"
    rc=$?
    while read -r line; do [ -n "$line" ] && u=${line% *} s=${line#* }; done < "$tmp/time"
    cpu_ms=$(( 10#${u/./} + 10#${s/./} ))
    [ "$rc" = 124 ] || break
    [ "$attempt" = 1 ] && echo "note: kvlab $*: no end after ${hang_limit} s of wall-clock; rerunning it once"
  done
}

# Checks the outcome of run_timed for the command shown as SHOWN whose option is NAME (the error
# must name it): a clean refusal within REJECT_MS of CPU, or a result within ACCEPT_MS of CPU.
judge() {
  local shown=$1 name=$2 reject_ms=$3 accept_ms=$4 err="" newlines lines
  IFS= read -r -d '' err < "$tmp/err"  # the whole of stderr, read by the shell itself
  if [[ $err == *AddressSanitizer* || $err == *LeakSanitizer* || $err == *"runtime error:"* ||
        $err == *UndefinedBehaviorSanitizer* ]]; then
    fail "$shown: sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error' "$tmp/err")"; return
  fi
  case $rc in
    2)
      rejected=$((rejected + 1))
      newlines=${err//[!$'\n']/}
      lines=${#newlines}  # as wc -l counts them
      if [ "$cpu_ms" -gt "$reject_ms" ]; then
        fail "$shown: refused after ${cpu_ms} ms of CPU (limit ${reject_ms} ms): work before the check"
      elif [ "$lines" != 1 ] || [ -s "$tmp/out" ]; then
        fail "$shown: exit 2 wants one stderr line and no stdout; got $lines lines: ${err:0:300}"
      elif [[ $err != *"$name"* ]]; then
        fail "$shown: the error does not name '$name': $err"
      fi ;;
    0 | 1)
      accepted=$((accepted + 1))
      [ -n "${KVLAB_SWEEP_VERBOSE:-}" ] && echo "accepted: $shown -> exit $rc (${cpu_ms} ms of CPU)"
      if [ "$cpu_ms" -gt "$accept_ms" ]; then
        fail "$shown: ${cpu_ms} ms of CPU, over the ${accept_ms} ms budget"
      elif ! [ -s "$tmp/out" ]; then
        fail "$shown: accepted (exit $rc) but printed no result"
      elif grep -qiwE "nan|-?inf" "$tmp/out"; then
        fail "$shown: accepted (exit $rc) but the result contains nan/inf: $(grep -m1 -iwE 'nan|-?inf' "$tmp/out")"
      fi ;;
    124) fail "$shown: no end after ${hang_limit} s of wall-clock, twice (a hang)" ;;
    152 | 137) fail "$shown: killed past ${accept_ms} ms of CPU (exit $rc): over the work budget" ;;
    *) fail "$shown: exit $rc: $(head -c 300 "$tmp/err")" ;;
  esac
}

if [ "$mode" = max ]; then
  # ---- the work-budget sweep -----------------------------------------------------------------
  # Each run: at most the budget of CPU (60 s; × KVLAB_SWEEP_SECONDS for a slower build), or a
  # refusal within 1 s of CPU; memory capped at 8 GiB of address space (the budget is 4 GiB of
  # data, core/work_budget.hpp), so that a run over it fails here instead of swapping the machine.
  accept_ms=$((budget * limit * 1000))
  report=${KVLAB_SWEEP_REPORT:-$tmp/report.tsv}
  : > "$report"
  ulimit -v $((8 * 1024 * 1024))
  # largest_value CMD... OPTION TYPE: the upper end of the range the option's error names
  # ("... in [1, 4096] ..."), from one run with a value far above any range; empty when none.
  largest_value() {
    local type=${*: -1} option=${*: -2:1} probe=99999999999999999999
    case $type in FLOAT*) probe=1e300 ;; esac
    "$kvlab" "${@:1:$#-2}" "$option" "$probe" 2>&1 >/dev/null | head -1 |
      sed -nE 's/.*in \[[^],]+, ?([-+0-9.e]+)\].*/\1/p'
  }
  measure() {  # measure ARGS...: one run (a benchmark's too: no --quick), judged and recorded
    runs=$((runs + 1))
    run_timed $((budget * limit * 3 / 2)) "$@"
    # A refusal may name another option than the one at its largest (--threshold 100 is refused
    # for the --outlier-magnitude it implies): any one-line "kvlab: ..." refusal is clean here.
    judge "$*" "kvlab" $((limit * 1000)) "$accept_ms"
    local verdict=ran
    [ "$rc" = 2 ] && verdict="refused: $(head -c 160 "$tmp/err")"
    printf '%d.%03d\t%s\t%s\n' $((cpu_ms / 1000)) $((cpu_ms % 1000)) "kvlab $*" "exit $rc, $verdict" >> "$report"
  }
  # The commands besides the checks, with their numeric options from --help (CLI11 prints
  # "--name INT" or "--name FLOAT ..."); each needs the arguments it cannot run without.
  declare -A needs=(
    [machine]="machine" [bench-decode]="bench decode" [bench-kernels]="bench kernels"
    [perplexity]="perplexity --weights $here/../data/weights/target.safetensors"
    [train]="train --out $tmp/model.safetensors" [model-init]="model init --out $tmp/init.safetensors"
    [quiz]="quiz --answers" [selftest]="selftest --answers" [cheatsheet]="cheatsheet")
  declare -A max_args=()
  while IFS=$'\t' read -r check option type; do
    read -r -a cmd <<< "$check"
    if [ "$type" = FLAG ]; then  # a check's switch (--long): alone, and with the largest values
      case $option in --quick) continue ;; esac  # the smoke-test switch only shrinks the work
      measure "${cmd[@]}" "$option"
      max_args[$check]+=" $option"
      continue
    fi
    case $type in INT* | FLOAT*) ;; *) continue ;; esac
    case $option in --seed) continue ;; esac  # any seed is one draw: no work of its own
    value=$(largest_value "${cmd[@]}" "$option" "$type")
    [ -z "$value" ] && { echo "note: $check $option: no range in its error; skipped"; continue; }
    measure "${cmd[@]}" "$option" "$value"
    max_args[$check]+=" $option $value"
  done < <("$kvlab" list --options
           for key in "${!needs[@]}"; do
             read -r -a cmd <<< "${needs[$key]}"
             help=("${cmd[0]}")
             case ${cmd[0]} in bench | model) help+=("${cmd[1]}") ;; esac
             "$kvlab" "${help[@]}" --help 2>/dev/null | sed -nE 's/^ +(-[a-z],)?(--[a-z0-9-]+)[^ ]* +(INT|FLOAT|UINT)\b.*/\2\t\3/p' |
               while IFS=$'\t' read -r option type; do printf '%s\t%s\t%s\n' "${needs[$key]}" "$option" "$type"; done
           done)
  # Every check and command with all its numeric options at their largest at once.
  for check in "${!max_args[@]}"; do
    read -r -a cmd <<< "$check"
    read -r -a opts <<< "${max_args[$check]}"
    measure "${cmd[@]}" "${opts[@]}"
  done
  echo "the slowest runs (CPU seconds, command, outcome):"
  sort -t$'\t' -k1,1 -g -r "$report" | head -20
  echo "sweep --max: $runs runs, $rejected refused (exit 2), $accepted within the budget, $failures failures"
  [ "$runs" -gt 0 ] && [ "$failures" -eq 0 ]
  exit
fi

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
    extra=()
    case $bench_checks in *" $check "*) extra=(--quick) ;; esac
    # A rejection must come before any work (KVLAB_SWEEP_SECONDS of CPU); a legal value (e.g.
    # --seed 0) runs the whole check, within the work budget (× the build's slowdown).
    run_timed $((budget * limit + 1)) "$check" "${extra[@]}" "$option" "$value"
    judge "$check $option '${value:0:40}'" "$name" $((limit * 1000)) $((budget * limit * 1000))
  done
done < <("$kvlab" list --options)

echo "sweep: $runs runs, $rejected rejected (exit 2), $accepted accepted, $failures failures"
[ "$runs" -gt 0 ] && [ "$failures" -eq 0 ]
