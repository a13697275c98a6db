# Sourced by cli_test.sh: the files kvlab writes (--plot, --out, --save, --loss-log) and its stdout.
# A name is never interpreted by gnuplot or a shell; an output appears only complete (through a
# temporary in its directory, renamed); a target that is not a regular file (a device, a FIFO, a
# directory) is refused; a failed write or a full stdout is one line and exit 2, not exit 0.
files_dir=$(mktemp -d)

# files_check DESCRIPTION COMMAND... : a shell test that passes or fails with DESCRIPTION.
files_check() {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
# files_no_temporaries DIR : no .kvlab-*.tmp left in DIR.
files_no_temporaries() { ! ls -A "$1" | grep -q '^\.kvlab-.*\.tmp$'; }
# files_expect_fail WORD ARGS... : exit 2 with one stderr line naming WORD, after a report on
# stdout (a write that fails at the end of a run: the report was already printed).
files_expect_fail() {
  local word=$1; shift
  local err rc
  "$kvlab" "$@" >/dev/null 2>"$files_dir/err"; rc=$?
  err=$(cat "$files_dir/err")
  if [ "$rc" = 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && [ -z "${err##*"$word"*}" ]; then
    echo "ok: kvlab $* -> 2 ($err)"
  else
    echo "FAIL: kvlab $*: want exit 2 and one line naming $word; rc $rc: $err"; failures=$((failures + 1))
  fi
}
# files_full BLOCKS CASE ARGS... : runs the case (expect_usage_error ...) with kvlab under a file
# size limit (ulimit -f BLOCKS: a write past it fails as on a full disk); kvlab's stderr goes
# through a pipe, which the limit does not cover, so its one line still arrives.
cat > "$files_dir/limited" <<'EOF'
#!/usr/bin/env bash
{ (ulimit -f "$KVLAB_TEST_FSIZE" && exec "$KVLAB_TEST_BIN" "$@") 2>&1 1>&3 3>&- | cat >&2; exit "${PIPESTATUS[0]}"; } 3>&1
EOF
chmod +x "$files_dir/limited"
files_full() {
  local blocks=$1 saved=$kvlab; shift
  kvlab=$files_dir/limited
  KVLAB_TEST_FSIZE=$blocks KVLAB_TEST_BIN=$saved "$@"
  kvlab=$saved
}

# ---- --plot: no shell, no gnuplot interpretation of the name ------------------------------------
expect_usage_error --plot roofline --plot ""   # an unset shell variable is not "no plot"
expect_usage_error --plot roofline --plot "$files_dir/a
b.svg"
expect_usage_error --plot roofline --plot "$files_dir/"$'\e[2J'".svg"
mkdir "$files_dir/dir.svg"
expect_usage_error --plot roofline --plot "$files_dir/dir.svg"
mkfifo "$files_dir/fifo.svg"
expect_usage_error --plot roofline --plot "$files_dir/fifo.svg"
files_check "--plot on a FIFO leaves the FIFO" test -p "$files_dir/fifo.svg"
if command -v gnuplot >/dev/null; then
  plot_dir="$files_dir/plots"
  mkdir "$plot_dir"
  files_here=$PWD
  cd "$plot_dir" || exit 1  # a command in a name would run here (names cannot hold '/')
  for name in '`touch ran1`.svg' '$(touch ran2).svg' "it's \"q\" \\ .svg" "\`touch ran3\`'\"\$(touch ran4)\".svg" \
              '@m.svg' '-dash.svg' "$(printf 'caf\xc3\xa9 \xff.svg')"; do
    expect_exit 0 roofline --format json --plot "$plot_dir/$name"
    files_check "--plot writes exactly the name $name" grep -q "<svg" "$plot_dir/$name"
  done
  # A directory whose name holds backquotes and quotes.
  odd_dir="$plot_dir/\`touch ran5\` \$(touch ran6) it's"
  mkdir "$odd_dir"
  expect_exit 0 roofline --plot "$odd_dir/r.svg"
  files_check "--plot in a directory named with backquotes" grep -q "<svg" "$odd_dir/r.svg"
  files_check "--plot names ran no command" test -z "$(ls "$plot_dir" | grep '^ran')"
  files_check "--plot leaves no temporary" files_no_temporaries "$plot_dir"
  cd "$files_here" || exit 1
  echo old > "$plot_dir/real.svg"
  ln -s real.svg "$plot_dir/link.svg"
  expect_exit 0 roofline --plot "$plot_dir/link.svg"
  files_check "--plot through a symlink keeps the link" test -L "$plot_dir/link.svg"
  files_check "... and writes the file it names" grep -q "<svg" "$plot_dir/real.svg"
  # gnuplot fails: exit 2, the old file is intact, no temporary.
  echo old > "$plot_dir/keep.svg"
  KVLAB_GNUPLOT=/bin/false files_expect_fail "--plot: gnuplot failed" roofline --plot "$plot_dir/keep.svg"
  files_check "a failed --plot keeps the old file" grep -qx old "$plot_dir/keep.svg"
  files_check "... and leaves no temporary" files_no_temporaries "$plot_dir"
  # A full disk (a file size limit): one line, exit 2, the old file intact.
  files_full 12 files_expect_fail "--plot: cannot write '$plot_dir/keep.svg': File too large" \
    roofline --plot "$plot_dir/keep.svg"
  files_check "a --plot that does not fit keeps the old file" grep -qx old "$plot_dir/keep.svg"
  files_check "... and leaves no temporary" files_no_temporaries "$plot_dir"
fi

# ---- --out of model init ------------------------------------------------------------------------
files_model=(--seed 3 --vocab 256 --block-size 96 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8)
expect_usage_error --out model init --out "" "${files_model[@]}"
expect_usage_error --out model init --out "$files_dir/fifo.svg" "${files_model[@]}"
files_check "model init --out FIFO leaves the FIFO" test -p "$files_dir/fifo.svg"
expect_usage_error --out model init --out "$files_dir/dir.svg" "${files_model[@]}"
# A device node (made here, never /dev/null itself: a broken build would replace it).
if mknod "$files_dir/full" c 1 7 2>/dev/null; then
  expect_usage_error "a character device" model init --out "$files_dir/full" "${files_model[@]}"
  files_check "model init --out DEVICE leaves the device" test -c "$files_dir/full"
fi
# The user's own FILE.tmp is not the temporary; a symlink is written through.
echo mine > "$files_dir/m.safetensors.tmp"
expect_exit 0 model init --out "$files_dir/m.safetensors" "${files_model[@]}"
files_check "model init keeps the user's FILE.tmp" grep -qx mine "$files_dir/m.safetensors.tmp"
ln -s m.safetensors "$files_dir/m-link.safetensors"
expect_exit 0 model init --out "$files_dir/m-link.safetensors" --seed 4 --vocab 256 --block-size 96 --d-model 32 \
  --heads 4 --kv-heads 2 --head-dim 8
files_check "model init --out through a symlink keeps the link" test -L "$files_dir/m-link.safetensors"
files_check "... and replaces the file it names" cmp -s "$files_dir/m-link.safetensors" "$files_dir/m.safetensors"
# A write that fails (file size limit: a full disk) is one line and exit 2; the old model stays.
cp "$files_dir/m.safetensors" "$files_dir/before"
files_full 8 expect_usage_error "--out: cannot write" model init --out "$files_dir/m.safetensors" --seed 9 \
  --vocab 256 --block-size 96 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8
files_check "a model init that does not fit keeps the old model" cmp -s "$files_dir/m.safetensors" "$files_dir/before"
files_full 8 expect_usage_error "--out: cannot write" model init --out "$files_dir/new.safetensors" "${files_model[@]}"
files_check "... and creates no new one" test ! -e "$files_dir/new.safetensors"
files_check "... and leaves no temporary" files_no_temporaries "$files_dir"

# ---- train: --out and --loss-log ----------------------------------------------------------------
files_text="$files_dir/text"
mkdir "$files_text"
for i in $(seq 1 40); do printf 'Fortune %d: the quick brown fox jumps over the lazy dog.\n%%\n' "$i"; done > "$files_text/sample"
files_train=(--fortunes "$files_text" --steps 2 --batch 2 --n-layer 1 --d-model 16 --n-head 2 --block-size 32)
expect_usage_error "--out, --loss-log" train "${files_train[@]}" --loss-log "$files_dir/same" --out "$files_dir/same"
files_check "--loss-log X --out X creates nothing" test ! -e "$files_dir/same"
echo precious > "$files_dir/model"
ln -s model "$files_dir/model-link"
expect_usage_error "--out, --loss-log" train "${files_train[@]}" --loss-log "$files_dir/model-link" --out "$files_dir/model"
files_check "... nor overwrites the model" grep -qx precious "$files_dir/model"
expect_usage_error --out train "${files_train[@]}" --out ""
expect_usage_error --loss-log train "${files_train[@]}" --loss-log "$files_dir/fifo.svg"
# An error before training (no corpus) leaves no 0-byte model.
expect_usage_error fortunes train --fortunes "$files_dir/no-such-dir" --out "$files_dir/never.safetensors"
files_check "train --out NEW that fails creates no file" test ! -e "$files_dir/never.safetensors"
# A --loss-log that does not fit: exit 2, not a truncated log with exit 0.
files_full 0 expect_usage_error "--loss-log: cannot write" train "${files_train[@]}" --loss-log "$files_dir/loss.tsv"
files_check "... and no log" test ! -e "$files_dir/loss.tsv"
expect_exit 0 train "${files_train[@]}" --loss-log "$files_dir/loss.tsv" --out "$files_dir/t.safetensors"
files_check "train writes the loss log" test "$(grep -vc '^#' "$files_dir/loss.tsv")" = 2
# Killed in the middle of a run (SIGTERM; a background job of a script ignores SIGINT, which the
# unit tests cover): neither output exists, no temporary is left.
"$kvlab" train --fortunes "$files_text" --steps 10000000 --batch 2 --n-layer 1 --d-model 16 --n-head 2 \
  --block-size 32 --loss-log "$files_dir/int.tsv" --out "$files_dir/int.safetensors" >"$files_dir/int.out" 2>/dev/null &
files_pid=$!
for _ in $(seq 1 6000); do grep -q '^run:' "$files_dir/int.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$files_pid"
for _ in $(seq 1 600); do kill -0 "$files_pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$files_pid" 2>/dev/null  # only if SIGTERM did not end it (then the case fails below)
wait "$files_pid"
files_rc=$?
files_check "train killed by SIGTERM dies of it (rc $files_rc)" test "$files_rc" = 143
files_check "... and leaves no model, no log, no temporary" \
  test -z "$(ls -A "$files_dir" | grep -e '^int\.tsv$' -e '^int\.safetensors$' -e '^\.kvlab-')"

# ---- machine --save -----------------------------------------------------------------------------
files_machine=(--size-mib 16 --repeats 1 --gemm-n 64 --save)
KVLAB_LOCAL_HARDWARE="$files_dir/fifo.svg" expect_usage_error --save machine "${files_machine[@]}"
echo '{"old": true}' > "$files_dir/local.json"
# The entry is 692 bytes, so only `ulimit -f 0` makes its write fail; LLVM's OpenMP runtime (the
# clang sanitizer build) registers itself through a 1 KiB shared-memory file at start-up and aborts
# when that limit refuses it, before kvlab runs. That build skips the case; g++'s libgomp stage
# (Release) runs it.
if ldd "$kvlab" 2>/dev/null | grep -q 'libomp\.so'; then
  echo "ok: machine --save on a full disk: skipped under LLVM's OpenMP (ulimit -f 0 stops its start-up)"
else
  KVLAB_LOCAL_HARDWARE="$files_dir/local.json" files_full 0 files_expect_fail "--save: cannot write" \
    machine "${files_machine[@]}"
  files_check "machine --save that does not fit keeps the old entry" grep -q '"old"' "$files_dir/local.json"
fi
KVLAB_LOCAL_HARDWARE="$files_dir/local.json" expect_exit 0 machine "${files_machine[@]}"
files_check "machine --save replaces the entry" grep -q '"name": "local"' "$files_dir/local.json"

# ---- stdout: a full disk or a closed stdout is exit 2, one line ---------------------------------
for args in "kv-size" "list" "info" "cheatsheet" "--version" "explain kv-invariance" "quiz --answers --seed 1"; do
  # shellcheck disable=SC2086
  err=$("$kvlab" $args 2>&1 >/dev/full); rc=$?
  files_check "kvlab $args > /dev/full: exit 2 with one line (rc $rc: $err)" \
    test "$rc" = 2 -a "$(printf '%s\n' "$err" | wc -l)" = 1
  # shellcheck disable=SC2086
  err=$("$kvlab" $args 2>&1 >&-); rc=$?
  files_check "kvlab $args >&-: exit 2 with one line (rc $rc: $err)" \
    test "$rc" = 2 -a "$(printf '%s\n' "$err" | wc -l)" = 1
done
err=$("$kvlab" kv-size --format json 2>&1 >/dev/full); rc=$?
files_check "kv-size --format json > /dev/full names standard output (rc $rc: $err)" \
  test "$rc" = 2 -a -n "$(printf '%s' "$err" | grep 'standard output')"

# ---- a file name that is not UTF-8, with --format json -------------------------------------------
files_bad_name="$files_dir/"$'\xff\xfe'".safetensors"
expect_exit 0 model init --out "$files_bad_name" "${files_model[@]}"
out=$("$kvlab" perplexity --weights "$files_bad_name" --text "$files_text/sample" --max-windows 2 --format json); rc=$?
files_check "perplexity --format json on a non-UTF-8 name: exit 0 and valid JSON (rc $rc)" \
  sh -c 'test "$1" = 0 && printf "%s" "$2" | python3 -c "import json,sys; json.load(sys.stdin)"' _ "$rc" "$out"
out=$("$kvlab" kv-invariance --weights "$files_bad_name" --format json); rc=$?
files_check "kv-invariance --weights NON-UTF-8 --format json: exit 0 and valid JSON (rc $rc)" \
  sh -c 'test "$1" = 0 && printf "%s" "$2" | python3 -c "import json,sys; json.load(sys.stdin)"' _ "$rc" "$out"
expect_usage_error --out model init --out "$files_dir/"$'\xff'"/x.safetensors" "${files_model[@]}"

rm -rf "$files_dir"
