#!/usr/bin/env bash
# docs/claims.md's `command` column against kvlab's own registry, so that the page cannot drift
# from the command line. Every `kvlab …` in backticks in a claim row's command cell must name a
# registered check (`kvlab list --format json`) or a built-in command (`kvlab --help`), use only
# that command's options (checks: `kvlab list --options`; built-ins: `kvlab CMD --help`) and give
# each option a value its type allows where the type states them (a set {a,b}, a range [lo, hi]);
# `--model` and `--gpu` name catalogue entries (data/models, data/hardware), FILE arguments exist
# in the repository, a required option or positional is there. A backticked fragment that starts
# with `--` or `…` belongs to the command before it in the cell. Upper-case words (NAME, N, B,
# FILE.svg) and `…` are placeholders; {a,b} and a|b list alternatives, each checked. Also: every
# registered check appears in some row (benchmarks too: each is registered with a course source,
# so the claim it measures has a row); a `checked` row names a check; a cell that is not `—` names
# a command; no `kvlab CMD` stands outside backticks. The commands are read, not run.
#   tests/claims_commands.sh path/to/kvlab [path/to/claims.md]
#   tests/claims_commands.sh --self-test path/to/kvlab   broken copies of claims.md must each fail,
#                                                        naming the broken row and command
#   tests/claims_commands.sh --run path/to/kvlab [path/to/claims.md]   also runs, from the
#       repository root, every command with options and no placeholder that is quick and needs
#       nothing first (no benchmark, `machine`, `bench`, `all`, `selftest`, `quiz`, `train`,
#       `model`, env prefix, --gpu local, nor an option that writes a file: --plot, --out, --save,
#       --loss-log, also as --opt=VALUE), and wants exit 0 from each: every claim held, and no
#       exit 2 from a combination of options that reading cannot see.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  if [ $# -ge 1 ]; then exit 0; else exit 2; fi
fi

if [ "$1" = --self-test ]; then
  [ $# -ge 2 ] || { echo "usage: tests/claims_commands.sh --self-test path/to/kvlab"; exit 2; }
  kvlab=$2 doc="$root/docs/claims.md"
  out=$("$0" "$kvlab" "$doc") || { echo "FAIL: the committed docs/claims.md does not pass:"; echo "$out"; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fail=0 n=0
  # ROW<TAB>TEXT IN THAT ROW<TAB>ITS REPLACEMENT<TAB>A LINE THE CHECK MUST PRINT[<TAB>--run] (ROW
  # "-": the replacement applies to every row; --run: the case is seen only by running the
  # commands). Each case breaks one thing in a copy of the page.
  cases=$(cat <<'EOF'
000-0.3	`kvlab fragmentation`	`kvlab fragmentaton`	FAIL: 000-0.3: `kvlab fragmentaton`: 'fragmentaton' is neither a check (kvlab list) nor a built-in command (kvlab --help)
000-1.1a	--gpu h100-sxm	--gpus h100-sxm	FAIL: 000-1.1a: `kvlab roofline --model llama-3-70b --params 70e9 --gpus h100-sxm --batch 1 --ctx 4096`: --gpus is not an option of `kvlab roofline`
003-Q6d	--ctx 100	--ctx 0	FAIL: 003-Q6d: `kvlab kv-size --model llama-2-7b --ctx 0 --kv-dtype fp16`: --ctx 0 is outside [1, 9223372036854775807]
000-0.1a	--kv-dtype fp16`	--kv-dtype fp12`	FAIL: 000-0.1a: `kvlab kv-size --model llama-3-70b --ctx 4096 --kv-dtype fp12`: --kv-dtype fp12 is not one of {fp32,fp16,bf16,fp8,int8,int4}
000-1.1a	--params 70e9	--params 0.5	FAIL: 000-1.1a: `kvlab roofline --model llama-3-70b --params 0.5 --gpu h100-sxm --batch 1 --ctx 4096`: --params 0.5 is outside [1, 1000000000000000]
000-7.4d	--k 4	--k four	FAIL: 000-7.4d: `kvlab spec-etau --alpha 0.6 --k four`: --k four is not an integer (INT:INT in [0, 256])
004-1.4f	`… --kv-heads 1`	`… --kv-head 1`	FAIL: 004-1.4f: `… --kv-head 1`: --kv-head is not an option of `kvlab kv-size`
004-B2b	--model llama-3-8b	--model llama-3-8x	FAIL: 004-B2b: `kvlab kv-size --model llama-3-8x --batch 16 --ctx 8192 --kv-dtype bf16`: --model llama-3-8x is not a catalogue model (data/models)
004-A2	hf_llama_2_7b.json	hf_llama_2_7x.json	FAIL: 004-A2: `kvlab kv-size --config tests/data/configs/hf_llama_2_7x.json`: --config tests/data/configs/hf_llama_2_7x.json: no such file in the repository
000-4.1	| `kvlab cheatsheet 000-4.1` (judged	| `kvlab cheatsheet 000-4.7` (judged	FAIL: 000-4.1: `kvlab cheatsheet 000-4.7`: table 000-4.7 is not one of
004-1.2b	; `kvlab explain kv-invariance` (the proof)	; `kvlab explain kv-invariants` (the proof)	FAIL: 004-1.2b: `kvlab explain kv-invariants`: check kv-invariants is not a registered check (kvlab list)
004-B4	KVLAB_WORK_BUDGET=900	KVLAB_WORK_BUDGT=900	FAIL: 004-B4: `KVLAB_WORK_BUDGT=900 kvlab gqa-meanpool --long`: KVLAB_WORK_BUDGT is an environment variable kvlab does not read
004-B2c	| `kvlab machine --save` then	| `kvlab machine --saved` then	FAIL: 004-B2c: `kvlab machine --saved`: --saved is not an option of `kvlab machine`
000-6.2b	`kvlab bench kernels`	`kvlab bench`	FAIL: 000-6.2b: `kvlab bench`: what is required
000-0.5	`kvlab rope-breaks-absorb`	—	FAIL: 000-0.5: status 'checked', but the command cell names no registered check
-	`kvlab jacobi`	`kvlab tree-verify`	FAIL: check 'jacobi' (registered, source
000-8.6	`kvlab spec-wallclock` (a benchmark)	kvlab spec-wallclock (a benchmark)	FAIL: 000-8.6: the command cell names no `kvlab` command in backticks
004-1.5g	--model llama-2-7b --params 7e9 --batch 64	--batch 64	FAIL: 004-1.5g: `kvlab roofline --batch 64 --ctx 4096`: exit 2, want 0 (every claim held) kvlab: --batch: needs --model or --config	--run
EOF
)
  while IFS=$'\t' read -r row old new want mode; do
    n=$((n + 1))
    broken="$tmp/claims_$n.md"
    if ! python3 - "$doc" "$broken" "$row" "$old" "$new" <<'PY'
import re, sys
src, dst, row, old, new = sys.argv[1:]
lines = open(src, encoding="utf-8").read().split("\n")
hits = 0
for i, line in enumerate(lines):
    if (row == "-" and re.match(r"^\| (000|003|004)-", line)) or line.startswith(f"| {row} |"):
        hits += line.count(old)
        lines[i] = line.replace(old, new)
if hits == 0 or (row != "-" and hits != 1):
    sys.exit(f"self-test case {row}: '{old}' occurs {hits} times in the row, want once")
open(dst, "w", encoding="utf-8").write("\n".join(lines))
PY
    then fail=1; continue; fi
    got=$("$0" $mode "$kvlab" "$broken"); rc=$?
    if [ "$rc" != 1 ] || ! printf '%s\n' "$got" | grep -qF -- "$want"; then
      echo "FAIL: self-test case $n ($row: '$old' -> '$new'): exit $rc, want 1 with the line"
      echo "  $want"
      echo "  got:"; printf '%s\n' "$got" | sed 's/^/    /'
      fail=1
    else
      echo "ok: case $n ($row: '$old' -> '$new') fails: $(printf '%s\n' "$got" | grep -F -- "$want" | head -1)"
    fi
  done <<< "$cases"
  [ $fail = 0 ] && echo "ok: the committed page passes and all $n broken copies fail, each naming its row"
  exit $fail
fi

run=""
if [ "$1" = --run ]; then run=run; shift; [ $# -ge 1 ] || { echo "usage: tests/claims_commands.sh --run path/to/kvlab [path/to/claims.md]"; exit 2; }; fi
kvlab=$1
doc="${2:-$root/docs/claims.md}"
[ -x "$kvlab" ] || { echo "usage: tests/claims_commands.sh path/to/kvlab [path/to/claims.md] ($kvlab: not an executable)"; exit 2; }
[ -r "$doc" ] || { echo "FAIL: cannot read $doc"; exit 1; }
exec python3 - "$kvlab" "$doc" "$root" "$run" <<'PY'
import json, math, os, re, subprocess, sys

kvlab, doc_path, root, mode = sys.argv[1:5]
fails = []


def fail(msg):
    fails.append("FAIL: " + msg)


def kv(*args):
    r = subprocess.run([kvlab, *args], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"FAIL: kvlab {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        sys.exit(1)
    return r.stdout


class Spec:
    """One command's interface: options by each of their names (type string, takes many values,
    required, a key shared by its names), positionals in order, and nested subcommands."""
    def __init__(self, path):
        self.path = path
        self.opts = {"--help": ("FLAG", False, False, "--help"), "-h": ("FLAG", False, False, "--help")}
        self.pos = []    # (name, type, many, required)
        self.subs = set()


# A CLI11 type as `--help` and `list --options` print it: INT:INT in [1, 8], TEXT:{a,b},
# INT:TOKENS in [1, 64] (4k, 128k, 1M), NAME|FILE, TEXT:GPU, FILE, RATE, ...
TYPE = r"[A-Z][A-Z|]*(?::(?:\{[^}]*\}|[A-Z]+))?(?: in \[[^\]]*\])?(?: \([^)]*\))?"
OPT_LINE = re.compile(r"^  ((?:-\w,)?--[\w-]+(?:,--[\w-]+)*)(?: (" + TYPE + r"))?(?=\s|$)(.*)$")
POS_LINE = re.compile(r"^  ([a-z][\w-]*)(?: (" + TYPE + r"))?(?=\s|$)(.*)$")


def parse_help(path):
    spec, section = Spec(path), None
    for line in kv(*path, "--help").splitlines():
        if re.match(r"^\w[\w ]*:$", line):
            section = line[:-1]
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue
        m = (OPT_LINE if section == "Options" else POS_LINE).match(line)
        if not m:
            continue
        rest = m.group(3)
        many, required = bool(re.match(r" \.\.\.", rest)), bool(re.match(r"( \.\.\.)? REQUIRED\b", rest))
        if section == "Options":
            names = m.group(1).split(",")
            for name in names:
                spec.opts[name] = (m.group(2) or "FLAG", many, required, names[-1])
        elif section == "Positionals":
            spec.pos.append((m.group(1), m.group(2) or "TEXT", many, required))
        elif section == "Subcommands":
            spec.subs.add(m.group(1))
    return spec


checks = {c["check"]: c for c in json.loads(kv("list", "--format", "json"))}
check_specs = {}
for line in kv("list", "--options").splitlines():
    name, opt, typ = line.split("\t")
    check_specs.setdefault(name, Spec((name,))).opts[opt] = (typ, False, False, opt)
builtins = parse_help(()).subs - set(checks)
builtin_specs = {}


def stems(folder):
    return {f[:-5] for f in os.listdir(os.path.join(root, "data", folder)) if f.endswith(".json")}


models, gpus = stems("models"), stems("hardware") | {"local"}  # `kvlab machine --save` writes local
env_read = set()
for top in ("apps", "checks", "lib"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".cpp", ".hpp", ".cu")):
                env_read |= set(re.findall(r'getenv\("(\w+)"\)', open(os.path.join(d, f), encoding="utf-8").read()))

# Values that must name a registered check: explain's positional, all's --only.
NAMES_A_CHECK = {("explain", "check"), ("all", "--only")}


def placeholder(v):
    return v in ("…", "...") or re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[a-z0-9]+)?", v) is not None


def check_value(where, path, name, typ, value):
    """Each alternative of VALUE ({a,b} or a|b) against TYP; placeholders pass."""
    if value.startswith("{") and value.endswith("}"):
        alts = value[1:-1].split(",")
    else:
        alts = value.split("|")
    if (path[0], name) == ("all", "--only"):
        alts = [a for v in alts for a in v.split(",")]
    for v in alts:
        if placeholder(v):
            continue
        m_set = re.fullmatch(r"TEXT:\{(.*)\}", typ)
        m_num = re.fullmatch(r"(INT|FLOAT):(\w+) in \[([^,\]]+), ([^\]]+)\]( \(.*\))?", typ)
        if (path[0], name) in NAMES_A_CHECK:
            if v not in checks:
                fail(f"{where}: {name} {v} is not a registered check (kvlab list)")
        elif m_set:
            allowed = m_set.group(1).split(",")
            if v not in allowed:
                fail(f"{where}: {name} {v} is not one of {{{m_set.group(1)}}}")
        elif m_num:
            kind, lo, hi = m_num.group(1), m_num.group(3), m_num.group(4)
            try:
                if kind == "INT":
                    t = re.fullmatch(r"(\d+)([kKmM]?)", v) if m_num.group(2) == "TOKENS" else re.fullmatch(r"(\d+)()", v)
                    x = int(t.group(1)) * {"": 1, "k": 1024, "K": 1024, "m": 1 << 20, "M": 1 << 20}[t.group(2)]
                    ok = int(lo) <= x <= int(hi)
                else:
                    x = float(v)
                    ok = math.isfinite(x) and float(lo) <= x <= float(hi)
            except (AttributeError, ValueError):
                fail(f"{where}: {name} {v} is not {'an integer' if kind == 'INT' else 'a number'} ({typ})")
                continue
            if not ok:
                fail(f"{where}: {name} {v} is outside [{lo}, {hi}] ({typ})")
        elif name == "--model":
            if v not in models:
                fail(f"{where}: --model {v} is not a catalogue model (data/models)")
        elif name == "--gpu" or typ in ("NAME|FILE", "TEXT:GPU"):
            if v not in gpus and not os.path.isfile(os.path.join(root, v)):
                fail(f"{where}: {name} {v} is neither a catalogue GPU (data/hardware), `local`, nor a file in the repository")
        elif typ == "FILE":
            if not os.path.exists(os.path.join(root, v)):
                fail(f"{where}: {name} {v}: no such file in the repository")


def is_flag(tok):
    return re.match(r"^--?[A-Za-z]", tok) is not None


def check_args(where, spec, args, fragment):
    """ARGS against SPEC; a fragment (`--flag` mentioned in prose) may omit values and required ones."""
    given, npos, i = set(), 0, 0
    shown = " ".join(("kvlab",) + spec.path)
    while i < len(args):
        a = args[i]
        if is_flag(a):
            name, eq, val = a.partition("=")
            j = i + 1
            if name not in spec.opts:
                fail(f"{where}: {name} is not an option of `{shown}`")
                while j < len(args) and not is_flag(args[j]):
                    j += 1
                i = j
                continue
            typ, many, _, key = spec.opts[name]
            given.add(key)
            if typ == "FLAG":
                if eq:
                    fail(f"{where}: {name} takes no value")
                i += 1
                continue
            vals = [val] if eq else []
            while not eq and j < len(args) and not is_flag(args[j]) and (many or not vals):
                vals.append(args[j])
                j += 1
            if not vals and not fragment:
                fail(f"{where}: {name} needs a value ({typ})")
            for v in vals:
                check_value(where, spec.path, name, typ, v)
            i = j
        elif npos < len(spec.pos):
            pname, typ, many, _ = spec.pos[npos]
            given.add(pname)
            check_value(where, spec.path, pname, typ, a)
            npos += 0 if many else 1
            i += 1
        else:
            fail(f"{where}: unexpected argument '{a}' (`{shown}` takes no positional argument here)")
            i += 1
    if not fragment:
        for _, _, required, key in set(spec.opts.values()):
            if required and key not in given:
                fail(f"{where}: {key} is required")
        for pname, _, _, required in spec.pos:
            if required and pname not in given:
                fail(f"{where}: {pname} is required")


def command_spec(where, tokens):
    """The Spec of `kvlab TOKENS…` and the arguments after the (sub)command names; None if unknown."""
    if not tokens or is_flag(tokens[0]):
        fail(f"{where}: no subcommand")
        return None, []
    sub = tokens[0]
    if sub in check_specs:
        return check_specs[sub], tokens[1:]
    if sub not in builtins:
        fail(f"{where}: '{sub}' is neither a check (kvlab list) nor a built-in command (kvlab --help)")
        return None, []
    path, rest = (sub,), tokens[1:]
    while True:
        if path not in builtin_specs:
            builtin_specs[path] = parse_help(path)
        spec = builtin_specs[path]
        if rest and rest[0] in spec.subs:
            path, rest = path + (rest[0],), rest[1:]
        else:
            return spec, rest


# Built-ins that are quick and write nothing; every other built-in is left to its own tests.
RUN_BUILTINS = {"cheatsheet", "explain", "errata", "plan", "list", "info"}
to_run = {}  # kvlab's arguments -> the first row that names them


def runnable(spec, args, span):
    """A command --run runs: options given, no placeholder, quick, and needing nothing first."""
    sub = spec.path[0]
    writes = ("--plot", "--out", "--save", "--loss-log")  # never write into the repository
    if not args or span.split()[0] != "kvlab" or "local" in args:
        return False
    if any(a == w or a.startswith(w + "=") for a in args for w in writes):
        return False
    if any(placeholder(a) or "{" in a or "|" in a for a in args):
        return False
    return (sub in checks and not checks[sub]["bench"]) or sub in RUN_BUILTINS


# The claim rows and, from each table's header, the columns `command` and `status`.
cols, rows, named, ncmd = None, 0, set(), 0
for line in open(doc_path, encoding="utf-8").read().split("\n"):
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
    if line.startswith("| # |"):
        cols = {c: k for k, c in enumerate(cells)}
        continue
    m = re.match(r"^\| ((?:000|003|004)-[^ |]+) \|", line)
    if not m:
        continue
    rid = m.group(1)
    rows += 1
    if cols is None or "command" not in cols or "status" not in cols or len(cells) != len(cols):
        fail(f"{rid}: {len(cells)} cells, the table's header has {len(cols or {})} (a | in a cell must be written \\|)")
        continue
    cell, status = cells[cols["command"]], cells[cols["status"]]
    outside = re.sub(r"`[^`]*`", "", cell)
    if re.search(r"\bkvlab [a-z]", outside):
        fail(f"{rid}: a kvlab command outside backticks is not checked: {cell}")
    row_checks, last, commands = set(), None, 0
    for span in re.findall(r"`([^`]+)`", cell):
        tokens = span.replace("\\|", "|").split()
        where = f"{rid}: `{span}`"
        while tokens and re.fullmatch(r"[A-Za-z_]\w*=\S*", tokens[0]):
            var = tokens.pop(0).split("=")[0]
            if var.startswith("KVLAB_") and var not in env_read:
                fail(f"{where}: {var} is an environment variable kvlab does not read")
        if tokens and tokens[0] == "kvlab":
            commands += 1
            spec, args = command_spec(where, tokens[1:])
            last = spec
            if spec is None:
                continue
            if spec.path[0] in checks:
                row_checks.add(spec.path[0])
            check_args(where, spec, args, fragment=False)
            if runnable(spec, args, span):
                to_run.setdefault(tuple(tokens[1:]), f"{rid}: `{span}`")
        elif tokens and (tokens[0] == "…" or is_flag(tokens[0])):
            if last is None:
                fail(f"{where}: an option with no `kvlab` command before it in the cell")
                continue
            check_args(where, last, tokens[1:] if tokens[0] == "…" else tokens, fragment=True)
        # other spans (a metric name such as `weight_bytes`) are not commands
    ncmd += commands
    named |= row_checks
    if not cell.startswith("—") and commands == 0:
        fail(f"{rid}: the command cell names no `kvlab` command in backticks (or starts with —)")
    if status.startswith("checked") and not row_checks:
        fail(f"{rid}: status 'checked', but the command cell names no registered check")

if rows == 0:
    fail(f"no claim rows in {doc_path}")
for name in sorted(set(checks) - named):
    fail(f"check '{name}' (registered, source {checks[name]['source']}) appears in no row's command cell")
for f in fails:
    print(f)
if fails:
    print(f"{len(fails)} problem(s) in the command column of {doc_path}")
    sys.exit(1)
print(f"ok: docs/claims.md: {ncmd} commands in {rows} rows name registered checks or built-in commands "
      f"with their own options and allowed values; all {len(checks)} checks appear")
if mode == "run":
    bad = 0
    for args, where in to_run.items():
        r = subprocess.run([kvlab, *args], cwd=root, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or [""])[-1]
            print(f"FAIL: {where}: exit {r.returncode}, want 0 (every claim held) {err}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"ok: the {len(to_run)} commands with options that run quickly exit 0 from the repository root")
PY
