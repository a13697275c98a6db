# kvlab selftest: the worksheet's JSON (every question has id and source, every explanation names
# a command that exists), bad flags as one line and exit 2, and an interactive session through a
# pseudo-terminal (python3's pty): a wrong unit, then junk, then the right answer, then Ctrl-D and
# the score. Sourced by tests/cli_test.sh, which defines $kvlab, kv, expect_exit and
# expect_usage_error.
st_tmp=$(mktemp -d)

expect_exit 0 selftest --answers --seed 1
expect_exit 0 selftest --answers --seed 1 --lang zh --format md
expect_exit 0 selftest --help
expect_usage_error --lang selftest --answers --lang fr
expect_usage_error --seed selftest --answers --seed -1
expect_usage_error --seed selftest --answers --seed 99999999999999999999
expect_usage_error --format selftest --answers --format yaml
expect_usage_error --format selftest --format json
expect_usage_error --format selftest --format md
expect_usage_error --only selftest --answers --only motive
expect_usage_error --count selftest --answers --count 0
expect_usage_error --count selftest --answers --only intuition --count 99
# The sheet's repeat hint names what picked its questions: --count (and --only) as well as the seed.
if kv selftest --answers --count 3 --seed 4 --only derivation | grep -q -- '--answers --seed 4 --count 3 --only derivation'; then
  echo "ok: selftest's repeat hint names --seed, --count and --only"
else
  echo "FAIL: selftest's repeat hint leaves out --count or --only"; failures=$((failures + 1))
fi
# Without --seed the seed comes from the random device and is printed, so the session can be repeated.
kv selftest --answers --count 3 > "$st_tmp/drawn.txt"
st_seed=$(sed -nE '1s/.*seed ([0-9]+)$/\1/p' "$st_tmp/drawn.txt")
if [ -n "$st_seed" ] && kv selftest --answers --count 3 --seed "$st_seed" | cmp -s - "$st_tmp/drawn.txt"; then
  echo "ok: selftest prints its drawn seed ($st_seed), and --seed repeats it"
else
  echo "FAIL: selftest without --seed prints no seed"; failures=$((failures + 1))
fi
if KVLAB_LANG=xx "$kvlab" selftest --answers --seed 1 >/dev/null 2>"$st_tmp/err"; then
  echo "FAIL: KVLAB_LANG=xx kvlab selftest was accepted"; failures=$((failures + 1))
else
  echo "ok: KVLAB_LANG=xx refused ($(cat "$st_tmp/err"))"
fi

# The contract's JSON: {"questions": [{"id", "source", ...}]}, one per question, ids unique; each
# command an explanation names is a kvlab subcommand (`kvlab NAME --help` exits 0).
if kv selftest --answers --format json --seed 7 > "$st_tmp/sheet.json" &&
   python3 - "$st_tmp/sheet.json" > "$st_tmp/commands.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
qs = doc["questions"]
assert len(qs) >= 31, len(qs)
ids = [q["id"] for q in qs]
assert len(set(ids)) == len(ids), "duplicate ids"
for q in qs:
    assert isinstance(q["id"], str) and q["id"], q
    assert isinstance(q["source"], str) and q["source"][:3] in ("004", "003", "000"), q
    assert q["command"].startswith("kvlab "), q
for item in [f"004 §C {i}" for i in range(1, 17)] + [f"004 §B {i}" for i in range(1, 6)] + \
            [f"003 review {i}" for i in range(1, 11)] + ["000 §7.2", "000 §7.3", "000 §7.4", "000 §7.5"]:
    assert any(q["source"] == item or q["source"].startswith(item + " (") for q in qs), item
print("\n".join(sorted({q["command"].split()[1] for q in qs})))
PY
then
  echo "ok: selftest --answers --format json: every question has id and source; the documents are covered"
  while read -r name; do
    if "$kvlab" "$name" --help > /dev/null 2>&1; then :; else
      echo "FAIL: selftest names 'kvlab $name', which is no command"; failures=$((failures + 1))
    fi
  done < "$st_tmp/commands.txt"
  echo "ok: every command selftest names exists ($(wc -l < "$st_tmp/commands.txt") of them)"
else
  echo "FAIL: selftest --answers --format json"; failures=$((failures + 1))
fi

# The interactive loop through a pseudo-terminal. --only derivation --seed 5: the first question
# is 004 §C 7 (a choice), the second 004 §C 8 (a KV cache in GiB); the JSON gives their answers.
if python3 - "$kvlab" <<'PY'
import json, os, pty, select, subprocess, sys, time
kvlab = sys.argv[1]
args = ["selftest", "--seed", "5", "--only", "derivation", "--lang", "en"]
sheet = json.loads(subprocess.run([kvlab] + args + ["--answers", "--format", "json"], check=True,
                                  capture_output=True, text=True).stdout)
q1, q2 = sheet["questions"][0], sheet["questions"][1]
assert q1["kind"] == "choice" and q2["id"] == "004C-08" and q2["unit"] == "GiB", (q1, q2)
pid, fd = pty.fork()
if pid == 0:
    os.environ["KVLAB_LANG"] = "en"
    os.execv(kvlab, [kvlab] + args)
seen = b""
def wait_for(what, ready, limit=120):  # a hang guard only: no verdict depends on the time taken
    global seen
    end = time.monotonic() + limit
    while not ready():
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            sys.exit(f"no {what} in: {seen.decode(errors='replace')[-2000:]}")
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            sys.exit(f"output ended before {what}: {seen.decode(errors='replace')[-2000:]}")
        seen += chunk
def read_until(token):
    wait_for(repr(token), lambda: token.encode() in seen)
def wait_prompts(n):  # until the n-th "your answer" prompt has been printed
    wait_for(f"prompt {n}", lambda: seen.count(b"your answer") >= n)
def answer(line, prompts):
    wait_prompts(prompts)
    os.write(fd, line.encode() + b"\n")
answer(q1["answer"], 1)
gb = q2["answer"] * 2**30 / 1e9
answer(f"{gb:.6g} GB", 2)        # the right size in the wrong unit: feedback, asked again
answer("junk", 3)                # unparsable: asked again
answer(f"{q2['answer']:.6g} GiB", 4)
wait_prompts(5)
os.write(fd, b"\x04")            # Ctrl-D at the start of a line: end of input
read_until("exit criteria met:")
try:
    while chunk := os.read(fd, 65536):  # the rest, up to the end of the output (EIO on Linux)
        seen += chunk
except OSError:
    pass
_, status = os.waitpid(pid, 0)
text = seen.decode()
assert os.waitstatus_to_exitcode(status) == 0, status
for want in ["seed 5", "you answered in GB; the question asks GiB", "answer again",
             "does not start with a number", "✓ accepted", "end of input",
             f"score: 2 / {len(sheet['questions'])} right", "derivation and estimation", "exit criteria (004 §C):"]:
    assert want in text, (want, text[-3000:])
PY
then
  echo "ok: selftest through a pty: wrong unit and junk asked again, right answer accepted, Ctrl-D ends with the score"
else
  echo "FAIL: selftest through a pty"; failures=$((failures + 1))
fi

rm -rf "$st_tmp"
