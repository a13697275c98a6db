#!/usr/bin/env bash
# Hostile-input attack on the whole command line: file types, sizes, encodings, signals,
# concurrent writers, full disks, environment variables and weights that overflow in the forward.
# It goes beyond tests/sweep.sh (every option with hostile values) and the fuzz corpora (the
# readers' bytes): here the hostility is in the files, the paths, the process and its environment.
#
# Every case asserts kvlab's contract (docs/reliability.md, "The attack"):
#   - no crash: the exit status is 0, 1 or 2 (never 3, an internal error, nor a signal), except
#     where a case sends the signal itself;
#   - no hang: each run is killed after KVLAB_ATTACK_SECONDS (default 120) and counts as a hang
#     only if it times out again when rerun alone;
#   - a refusal (exit 2) is exactly one line on stderr with no escape or control bytes;
#   - no PASS on a non-finite value: a run on a weights file that overflows never prints PASS;
#   - no data loss: a file that was there before is there after, with the same bytes, unless the
#     command was asked to replace it and succeeded; no temporary is left behind.
# usage: tests/attack.sh path/to/kvlab     (KVLAB_ATTACK_VERBOSE=1 prints every case)
# Ends with "attack: N cases, M failures"; exit 1 on any failure.
set -u
kvlab=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
limit=${KVLAB_ATTACK_SECONDS:-120}
verbose=${KVLAB_ATTACK_VERBOSE:-}
tmp=$(mktemp -d)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
cases=0
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run_bounded CMD...: runs CMD with the time limit; a time-out is retried once (the machine may
# just have been busy), and only a second time-out is a hang. Sets rc; output in out.txt/err.txt.
run_bounded() {
  timeout -k 5 "$limit" "$@" >out.txt 2>err.txt; rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    timeout -k 5 "$limit" "$@" >out.txt 2>err.txt; rc=$?
  fi
}

# contract NAME ALLOWED: the generic assertions on the last run (rc, out.txt, err.txt).
# ALLOWED is a regex of allowed exit statuses, e.g. '2' or '0|1|2'.
contract() {
  local name=$1 allowed=$2
  cases=$((cases + 1))
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail "$name: hang (timed out twice after ${limit} s)"; return 1; fi
  if ! [[ "$rc" =~ ^($allowed)$ ]]; then
    fail "$name: exit $rc, want $allowed; stderr: $(head -c 300 err.txt)"; return 1
  fi
  if [ "$rc" = 2 ]; then
    local lines; lines=$(wc -l < err.txt)
    if [ "$lines" != 1 ]; then fail "$name: exit 2 with $lines stderr lines: $(head -c 300 err.txt)"; return 1; fi
    if LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n\t' < err.txt); then
      fail "$name: control or escape bytes in the error line"; return 1
    fi
  fi
  [ -n "$verbose" ] && echo "ok: $name -> $rc $(head -c 160 err.txt)"
  return 0
}

# attack NAME ALLOWED CMD...: runs kvlab CMD and checks the contract.
attack() {
  local name=$1 allowed=$2; shift 2
  run_bounded "$kvlab" "$@"
  contract "$name" "$allowed"
}

# no_pass NAME: the last run printed no passing verdict (text "verdict: HELD", JSON "pass").
no_pass() {
  if grep -q -e 'PASS' -e 'verdict: HELD' -e '"status": *"pass"' out.txt; then fail "$1: PASS on a non-finite forward"; fi
}

# keep FILE / kept NAME FILE: remember a file's bytes, then assert they are unchanged.
keep() { sha256sum "$1" > "$1.sum.keep"; }
kept() {
  if [ ! -e "$2" ]; then fail "$1: $2 was lost"; return; fi
  sha256sum --status -c "$2.sum.keep" || fail "$1: $2 was changed"
}
# no_temps NAME DIR: no temporary of kvlab's left in DIR (anything but what the case made).
no_temps() {
  local left
  left=$(find "$2" -mindepth 1 -maxdepth 1 -newer "$tmp/.stamp" \( -name '*tmp*' -o -name '.*' \) ! -name '*.keep' \
         ! -name out.safetensors.tmp ! -name .stamp 2>/dev/null | head -3)
  [ -z "$left" ] || fail "$1: temporaries left behind: $left"
}

small=(--vocab 256 --block-size 96 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8)
"$kvlab" model init --seed 3 --out m.safetensors "${small[@]}" >/dev/null 2>&1 || { echo "attack: cannot make a model"; exit 1; }
"$kvlab" model init --seed 4 --out d.safetensors "${small[@]}" --layers 1 >/dev/null 2>&1 || exit 1
"$kvlab" model init --seed 3 --out m64.safetensors "${small[@]}" --store F64 >/dev/null 2>&1 || exit 1
"$kvlab" model init --seed 3 --out rope.safetensors "${small[@]}" --positional rope >/dev/null 2>&1 || exit 1
for _ in $(seq 1 20); do echo "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs."; done > text.txt
touch "$tmp/.stamp"

# ---------------------------------------------------------------------------------------------
# 1. File types behind every file-taking flag: never a hang on a FIFO or /dev/zero, one line.
mkdir adir; : > empty; mkfifo fifo; ln -s nowhere dangling; ln -s loop1 loop2; ln -s loop2 loop1
ln -s adir linkdir
long=$(printf 'p%.0s' $(seq 1 5000))
bad_paths=(adir fifo /dev/zero /dev/null /dev/full /dev/urandom empty dangling loop1 linkdir "adir/"
           "$long" "$(printf 'n\xffo')" "$(printf 'new\nline')" "")
readers=("greedy-generate --weights"
         "spec-greedy --weights m.safetensors --draft-weights"
         "kv-size --config"
         "perplexity --weights m.safetensors --text"
         "perplexity --weights")
for reader in "${readers[@]}"; do
  for p in "${bad_paths[@]}"; do
    # shellcheck disable=SC2086
    attack "$reader '$(printf '%q' "$p" | head -c 40)'" 2 $reader "$p"
  done
done
for p in adir fifo /dev/zero empty dangling "$long"; do
  attack "train --fortunes '${p:0:40}'" 2 train --steps 1 --fortunes "$p"
done

# ---------------------------------------------------------------------------------------------
# 2. Crafted safetensors files for --weights.
python3 - <<'EOF'
import json, struct
def st(name, header, data=b"", hlen=None, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(name, "wb") as f:
        f.write(struct.pack("<Q", len(h) if hlen is None else hlen)); f.write(h); f.write(data)
t = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
st("st_len0.safetensors", {}, hlen=0)
st("st_len_huge.safetensors", {"t": t}, b"\0" * 8, hlen=2**63)
st("st_len_past_end.safetensors", {"t": t}, b"\0" * 8, hlen=10**6)
open("st_short.safetensors", "wb").write(b"\x05\0\0")
st("st_array.safetensors", None, raw_header=b"[1,2,3]")
st("st_not_json.safetensors", None, raw_header=b"{not json")
st("st_deep.safetensors", None, raw_header=b"[" * 100000 + b"]" * 100000)
st("st_deep_meta.safetensors", None, raw_header=b'{"__metadata__":{"a":' + b'{"a":' * 50000 + b"1" + b"}" * 50001 + b"}")
st("st_many.safetensors", {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(40000)}, b"\0" * 160000)
st("st_dup.safetensors", None, raw_header=b'{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', data=b"\0" * 8)
st("st_dtype.safetensors", {"t": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8)
st("st_shape_neg.safetensors", {"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8)
st("st_shape_overflow.safetensors", {"t": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, b"\0" * 8)
st("st_offsets_reversed.safetensors", {"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8)
st("st_offsets_past.safetensors", {"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 2**62]}}, b"\0" * 8)
st("st_bom.safetensors", None, raw_header=b"\xef\xbb\xbf" + json.dumps({"t": t}).encode(), data=b"\0" * 8)
st("st_utf16.safetensors", None, raw_header=json.dumps({"t": t}).encode("utf-16"), data=b"\0" * 8)
st("st_meta_type.safetensors", {"__metadata__": [1, 2], "t": t}, b"\0" * 8)
st("st_meta_values.safetensors", {"__metadata__": {"kvlab.config": 7}, "t": t}, b"\0" * 8)
st("st_inf.safetensors", {"t": t}, struct.pack("<2f", float("inf"), 1.0))
st("st_nan.safetensors", {"t": t}, struct.pack("<2f", float("nan"), 1.0))

# Models whose config is hostile: take m.safetensors and rewrite kvlab.config's fields.
def _unused(): pass
def load(path):
    b = open(path, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]
def save(path, header, data):
    h = json.dumps(header).encode(); open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
hr, dr = load("rope.safetensors")
for value in (2**20, 2**31 - 1, 2**40):
    m = dict(hr["__metadata__"]); cfg = json.loads(m["kvlab.config"]); cfg["block_size"] = value
    m["kvlab.config"] = json.dumps(cfg); h = dict(hr); h["__metadata__"] = m
    save(f"rope_block_{value}.safetensors", h, dr)
header, data = load("m.safetensors")
meta = header["__metadata__"]
cfg_key = "kvlab.config"
for field, value in [("vocab_size", 2**20), ("block_size", 2**20), ("n_layer", 2**16), ("d_model", 2**20),
                     ("n_head", 0), ("n_kv_head", 0), ("n_kv_head", 3), ("head_dim", 2**31),
                     ("vocab_size", 2**64 - 1), ("vocab_size", -1), ("vocab_size", 1.5), ("n_layer", "2"),
                     ("rope_theta", float("nan")), ("rope_theta", float("inf")), ("positional", "alibi")]:
    cfg = json.loads(meta[cfg_key])
    cfg[field] = value
    m = dict(meta); m[cfg_key] = json.dumps(cfg, allow_nan=True)
    h = dict(header); h["__metadata__"] = m
    save(f"cfg_{field}_{str(value).replace('.', 'p').replace('-', 'm')}.safetensors", h, data)

# Weights that are finite but overflow in the forward (float64 storage: every value 1e200), and
# only the output head or only one layer's query weights at 1e200.
h64, d64 = load("m64.safetensors")
def scaled(name, pick, value):
    out = bytearray(d64)
    for k, v in h64.items():
        if k == "__metadata__" or not pick(k): continue
        a, b = v["data_offsets"]
        out[a:b] = struct.pack(f"<{(b - a) // 8}d", *([value] * ((b - a) // 8)))
    save(name, h64, bytes(out))
scaled("over_all.safetensors", lambda k: True, 1e200)
scaled("over_head.safetensors", lambda k: "head" in k or "wte" in k or "embed" in k, 1e200)
scaled("over_attn.safetensors", lambda k: ("attn" in k or "q_proj" in k or "qkv" in k) and ".0." in k, 1e200)
EOF
for f in st_*.safetensors cfg_*.safetensors; do
  attack "greedy-generate --weights $f" 2 greedy-generate --weights "$f"
done
for f in rope_block_*.safetensors; do
  attack "greedy-generate --weights $f" '0|1|2' greedy-generate --weights "$f"
  attack "kv-invariance --weights $f" '0|1|2' kv-invariance --weights "$f"
  attack "perplexity --weights $f" '0|1|2' perplexity --weights "$f" --text text.txt
done
for f in st_len_huge st_many st_deep cfg_vocab_size_1048576 cfg_block_size_1048576; do
  attack "perplexity --weights $f" 2 perplexity --weights "$f.safetensors"
done

# ---------------------------------------------------------------------------------------------
# 3. Crafted config.json files for --config.
python3 - <<'EOF'
import json
base = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096,
        "intermediate_size": 11008}
def w(name, text): open(name, "wb").write(text if isinstance(text, bytes) else text.encode())
w("c_bom.json", b"\xef\xbb\xbf" + json.dumps(base).encode())
w("c_utf16.json", json.dumps(base).encode("utf-16"))
w("c_deep_array.json", "[" * 200000 + "]" * 200000)
w("c_deep_field.json", json.dumps(base)[:-1] + ', "x": ' + "[" * 200000 + "]" * 200000 + "}")
w("c_deep_object.json", '{"a":' * 100000 + "1" + "}" * 100000)
w("c_infinity.json", json.dumps(base)[:-1] + ', "rope_theta": Infinity}')
w("c_nan_size.json", json.dumps(base).replace('"hidden_size": 4096', '"hidden_size": NaN'))
w("c_float_layers.json", json.dumps({**base, "num_hidden_layers": 2.5}))
w("c_huge_layers.json", json.dumps(base).replace("32,", "1e400,", 1))
w("c_neg_heads.json", json.dumps({**base, "num_attention_heads": -32}))
w("c_zero_kv.json", json.dumps({**base, "num_key_value_heads": 0}))
w("c_kv_not_dividing.json", json.dumps({**base, "num_key_value_heads": 7}))
w("c_string_size.json", json.dumps({**base, "hidden_size": "4096"}))
w("c_null.json", json.dumps({**base, "num_hidden_layers": None}))
w("c_2_64.json", json.dumps({**base, "vocab_size": 2**64 - 1}))
w("c_control_name.json", json.dumps({**base, "model_type": "lla\u001b[31mma"}))
w("c_latin1.json", json.dumps(base)[:-1].encode() + b', "name": "caf\xe9"}')
w("c_trailing.json", json.dumps(base) + " garbage")
w("c_two_objects.json", json.dumps(base) + json.dumps(base))
w("c_empty_object.json", "{}")
w("c_huge_string.json", json.dumps({**base, "model_type": "x" * (20 * 2**20)}))
w("c_many_keys.json", json.dumps({**base, **{f"k{i}": i for i in range(200000)}}))
EOF
for f in c_*.json; do
  attack "kv-size --config $f" '0|1|2' kv-size --config "$f"   # 1: a layout kvlab cannot vouch for
  LC_ALL=C grep -q $'\033' out.txt && fail "kv-size --config $f: an escape byte reached the report"
  attack "roofline --config $f" '0|1|2' roofline --config "$f"
done

# ---------------------------------------------------------------------------------------------
# 4. Outputs: never replace what is not a regular file, never lose a user's file.
echo "the user's notes" > notes.txt; keep notes.txt
echo "the user's own temporary" > out.safetensors.tmp; keep out.safetensors.tmp
attack "model init --out /dev/null" 2 model init --out /dev/null "${small[@]}"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
attack "model init --out /dev/full" 2 model init --out /dev/full "${small[@]}"
attack "model init --out adir" 2 model init --out adir "${small[@]}"
attack "model init --out fifo" 2 model init --out fifo "${small[@]}"
attack "model init --out missing/dir/x" 2 model init --out missing/dir/x.safetensors "${small[@]}"
attack "model init --out ''" 2 model init --out "" "${small[@]}"
attack "model init --out out.safetensors (a user's .tmp beside it)" 0 model init --out out.safetensors "${small[@]}"
kept "model init beside a user's .tmp" out.safetensors.tmp
ln -s notes.txt note-link
attack "model init --out symlink-to-file" 0 model init --out note-link "${small[@]}"
[ -L note-link ] || fail "model init --out note-link: the symlink was replaced by a file"
ln -s /dev/null null-link
attack "model init --out symlink-to-/dev/null" 2 model init --out null-link "${small[@]}"
[ -L null-link ] && [ -c /dev/null ] || fail "model init --out null-link replaced the link or /dev/null"
echo "the user's notes" > notes.txt; keep notes.txt
attack "train --loss-log X --out X" 2 train --steps 2 --loss-log notes.txt --out notes.txt
kept "train --loss-log X --out X" notes.txt
attack "model init --out with backquotes" 0 model init --out 'a`touch pwned1`.safetensors' "${small[@]}"
attack "model init --out with \$()" 0 model init --out 'b$(touch pwned2).safetensors' "${small[@]}"
attack "model init --out non-UTF-8" 0 model init --out "$(printf 'c\xff.safetensors')" "${small[@]}"
attack "kv-size --format json --config non-UTF-8 name" '0|2' kv-size --format json --config "$(printf 'c\xff.json')"
for name in 'p`touch pwned3`.svg' 'q$(touch pwned4).svg' "r'\"quote.svg" 'y;touch pwned5;.svg' "$(printf 's\nline.svg')" \
            "$(printf 't\xff.svg')" '@macro.svg' 'sub/none.svg'; do
  attack "--plot $(printf '%q' "$name")" '0|2' spec-etau --plot "$name"
done
ln -s /dev/null null.svg
attack "--plot through a symlink to /dev/null" 2 spec-etau --plot null.svg
[ -L null.svg ] && [ -c /dev/null ] || fail "--plot null.svg replaced the link or /dev/null"
attack "--plot adir.svg (a directory)" 2 spec-etau --plot adir
mkdir plotdir.svg
attack "--plot onto a directory named .svg" 2 spec-etau --plot plotdir.svg
ls pwned* >/dev/null 2>&1 && fail "--plot or --out ran a command: $(ls pwned*)"
echo "a plot the user keeps" > keep.svg; keep keep.svg
KVLAB_GNUPLOT=/bin/false attack "--plot with a failing gnuplot keeps the old file" '1|2' spec-etau --plot keep.svg
kept "--plot with a failing gnuplot" keep.svg
echo "old entry" > local.json; keep local.json
KVLAB_LOCAL_HARDWARE=/dev/full attack "machine --save to /dev/full" 2 machine --save --size-mib 16 --repeats 1 --gemm-n 64
# shellcheck disable=SC2016
# ulimit -f 0 holds for every file the process writes, its stderr file too: the error line goes
# through a pipe to a process outside the limit. (LLVM's OpenMP runtime cannot start under it: a
# clang build skips the case.)
ldd "$kvlab" 2>/dev/null | grep -q 'libomp\.so' || run_bounded env KVLAB_LOCAL_HARDWARE="$tmp/local.json" bash -c \
  'bash -c "ulimit -f 0; exec \"\$0\" machine --save --size-mib 16 --repeats 1 --gemm-n 64 >/dev/null" "$0" 2>&1 | cat >&2
   exit "${PIPESTATUS[0]}"' "$kvlab"
if ! ldd "$kvlab" 2>/dev/null | grep -q 'libomp\.so'; then
  contract "machine --save, full disk, existing entry" 2
  kept "machine --save, full disk, existing entry" local.json
fi
keep m.safetensors
run_bounded bash -c 'ulimit -f 8; exec "$0" model init --seed 9 --out m.safetensors --vocab 256 --block-size 96 --d-model 32 --heads 4 --kv-heads 2 --head-dim 8' "$kvlab"
contract "model init --out EXISTING on a full disk" 2
kept "model init on a full disk" m.safetensors
if command -v gnuplot >/dev/null; then  # without gnuplot, --plot writes nothing (one line says so)
  run_bounded bash -c 'ulimit -f 8; exec "$0" spec-etau --plot big.svg >/dev/null' "$kvlab"
  contract "--plot on a full disk" '2'
  [ -e big.svg ] && fail "--plot on a full disk left a partial big.svg"
fi
no_temps "outputs" "$tmp"

# ---------------------------------------------------------------------------------------------
# 5. stdout that cannot be written.
run_bounded "$kvlab" kv-size; cp out.txt kv-size.txt
run_bounded bash -c '"$0" all > /dev/full' "$kvlab"; contract "all > /dev/full" 2
run_bounded bash -c '"$0" kv-size --format json > /dev/full' "$kvlab"; contract "kv-size --format json > /dev/full" 2
run_bounded bash -c '"$0" list >&-' "$kvlab"; contract "list with stdout closed" 2
run_bounded bash -c '"$0" kv-size >&-' "$kvlab"; contract "kv-size with stdout closed" 2
run_bounded bash -c 'ulimit -f 1; "$0" all > all.txt' "$kvlab"; contract "all into a full disk (ulimit -f)" 2
run_bounded bash -c '"$0" cheatsheet > /dev/full' "$kvlab"; contract "cheatsheet > /dev/full" 2
run_bounded bash -c '"$0" explain kv-invariance > /dev/full' "$kvlab"; contract "explain > /dev/full" 2
run_bounded bash -c '"$0" quiz --answers > /dev/full' "$kvlab"; contract "quiz --answers > /dev/full" 2

# ---------------------------------------------------------------------------------------------
# 6. Signals and concurrent writers.
for sig in INT TERM; do
  timeout -k 5 "$limit" "$kvlab" train --steps 100000 --out "sig-$sig.safetensors" --loss-log "sig-$sig.tsv" \
      >/dev/null 2>err.txt &
  pid=$!; sleep 3; kill -"$sig" "$pid" 2>/dev/null; wait "$pid"; rc=$?
  cases=$((cases + 1))
  [ -e "sig-$sig.safetensors" ] && fail "train killed by SIG$sig left sig-$sig.safetensors"
  [ -e "sig-$sig.tsv" ] && fail "train killed by SIG$sig left a partial loss log"
  [ "$rc" = 0 ] && fail "train killed by SIG$sig exited 0"
done
cp m.safetensors old.safetensors; keep old.safetensors
timeout -k 5 "$limit" "$kvlab" train --steps 100000 --out old.safetensors >/dev/null 2>&1 &
pid=$!; sleep 3; kill -INT "$pid"; wait "$pid"
cases=$((cases + 1)); kept "train --out EXISTING interrupted" old.safetensors
for s in 11 12 13 14; do "$kvlab" model init --seed $s --out "ref$s.safetensors" "${small[@]}" >/dev/null 2>&1; done
for s in 11 12 13 14; do "$kvlab" model init --seed $s --out race.safetensors "${small[@]}" >"race$s.out" 2>&1 & done
wait
cases=$((cases + 1))
match=0
for s in 11 12 13 14; do cmp -s race.safetensors "ref$s.safetensors" && match=1; done
[ "$match" = 1 ] || fail "four writers of one path: the file is none of the four models"
"$kvlab" greedy-generate --weights race.safetensors >/dev/null 2>&1 || fail "four writers: the file does not load"
no_temps "signals and writers" "$tmp"

# ---------------------------------------------------------------------------------------------
# 7. The environment.
mkdir emptydata; echo not-a-folder > datafile
mkdir -p baddata/models baddata/hardware; echo '{"num_hidden_layers": ' > baddata/models/broken.json
for data in /nonexistent "$tmp/emptydata" "$tmp/datafile" "$tmp/baddata" ""; do
  KVLAB_DATA=$data attack "KVLAB_DATA='$data' --version" 0 --version
  KVLAB_DATA=$data attack "KVLAB_DATA='$data' --help" 0 --help
  KVLAB_DATA=$data attack "KVLAB_DATA='$data' list" 0 list
  KVLAB_DATA=$data attack "KVLAB_DATA='$data' kv-size" '0|2' kv-size
done
KVLAB_GNUPLOT=/bin/false attack "KVLAB_GNUPLOT=/bin/false --plot term" '0|2' spec-etau --plot term
printf '#!/bin/sh\nprintf "\\033[2J\\033]0;owned\\007"\nexit 3\n' > fake-gnuplot; chmod +x fake-gnuplot
KVLAB_GNUPLOT=$tmp/fake-gnuplot attack "a gnuplot that prints escapes and fails" '2' spec-etau --plot x.svg
KVLAB_GNUPLOT=$tmp/adir attack "KVLAB_GNUPLOT is a directory" '0|1' spec-etau --plot term
TMPDIR=/nonexistent attack "TMPDIR=/nonexistent --plot" '0|1|2' spec-etau --plot t-dir.svg
run_bounded env PATH=/nonexistent "$kvlab" spec-etau --plot term; contract "PATH without gnuplot --plot" '0|1'
env -u HOME -u XDG_CONFIG_HOME "$kvlab" roofline --gpu local >out.txt 2>err.txt; rc=$?
contract "roofline --gpu local with HOME unset" '0|2'
for loc in C C.UTF-8 de_DE.UTF-8 tr_TR.UTF-8 fr_FR; do
  run_bounded env LC_ALL="$loc" "$kvlab" kv-size; contract "LC_ALL=$loc kv-size" 0
  cmp -s out.txt kv-size.txt || fail "LC_ALL=$loc changes kv-size's output"
done
COLUMNS=3 attack "COLUMNS=3 --help" 0 --help
KVLAB_LOCAL_HARDWARE=$tmp/adir attack "KVLAB_LOCAL_HARDWARE is a directory" '0|2' roofline --gpu local
KVLAB_LOCAL_HARDWARE=$tmp/fifo attack "KVLAB_LOCAL_HARDWARE is a FIFO" '0|2' roofline --gpu local
KVLAB_LOCAL_HARDWARE=/dev/zero attack "KVLAB_LOCAL_HARDWARE=/dev/zero" '0|2' roofline --gpu local
printf 'x' > stray.txt; printf '1,5\n1,5\n1,5\n' > commas.txt
attack "quiz with one stray byte of input" '0|1|2' quiz --count 2 < stray.txt
attack "quiz with no input" '0|1|2' quiz --count 2 </dev/null
attack "quiz with decimal commas" '0|1|2' quiz --count 2 < commas.txt
grep -q 'nan' out.txt && fail "quiz prints nan"

# ---------------------------------------------------------------------------------------------
# 8. Weights that overflow in the forward: never PASS, one line and exit 2.
model_checks=$("$kvlab" list --options | awk -F'\t' '$2 == "--weights" {print $1}' | sort -u)
# over_head is huge but finite (LayerNorm cancels a constant embedding; logits near 1e201 stay
# finite): any honest verdict, but a PASS must show no nan or inf.
for check in $model_checks; do
  case $("$kvlab" list --options | awk -F'\t' -v c="$check" '$1 == c && $2 == "--draft-weights" {print "pair"}') in
    pair) attack "$check on over_head" '0|1|2' "$check" --weights over_head.safetensors --draft-weights d.safetensors ;;
    *) attack "$check on over_head" '0|1|2' "$check" --weights over_head.safetensors ;;
  esac
  if grep -q -e PASS -e 'verdict: HELD' out.txt && grep -qiw -e nan -e inf out.txt; then fail "$check on over_head: PASS beside nan/inf"; fi
done
for f in over_all over_attn; do
  for check in $model_checks; do
    case $("$kvlab" list --options | awk -F'\t' -v c="$check" '$1 == c && $2 == "--draft-weights" {print "pair"}') in
      pair) attack "$check on $f" '2' "$check" --weights "$f.safetensors" --draft-weights d.safetensors ;;
      *) attack "$check on $f" '2' "$check" --weights "$f.safetensors" ;;
    esac
    no_pass "$check on $f"
  done
  attack "perplexity on $f" 2 perplexity --weights "$f.safetensors" --text text.txt
done

echo "attack: $cases cases, $failures failures"
[ "$failures" = 0 ]
