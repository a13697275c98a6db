#!/usr/bin/env python3
"""Peer test of kvlab's safetensors I/O against the reference `safetensors` package (PyPI).

Not part of `make test` (it needs PyPI). Run (docs/weights.md):
    python3 -m venv /tmp/st-venv && /tmp/st-venv/bin/pip install safetensors numpy
    /tmp/st-venv/bin/python tests/peer/safetensors_peer.py build-cc/bin/kvlab

kvlab -> Python: `kvlab model init` writes one seeded model in F64, F32, F16 and BF16; the
reference loader (safetensors.numpy.load_file, and safe_open for the metadata) reads each; the
tensor names and shapes are the documented layout (docs/weights.md) of the config in the metadata;
F32 and F16 equal the F64 values rounded by numpy, BF16 the F64 values rounded once to 8
significant bits (nearest even, computed here from the double with math.frexp).
Python -> kvlab: a NumPy mini-GPT forward pass (LayerNorm eps 1e-5, erf GELU, causal GQA, written
here from the layout, not from kvlab's code) computes the validation loss of the model on a text;
the model is written with safetensors.numpy.save_file (F64 and F32, kvlab.config metadata; and F32
without metadata, config.json beside it) and `kvlab perplexity --weights F --text T --format json`
must print the same loss (|diff| <= 1e-9 for F64 weights in f64, <= 1e-4 for F32 weights in f32).
Exit 0 when every comparison holds; prints one line per comparison.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def layout(c):
    d, q, kv = c["d_model"], c["n_head"] * c["head_dim"], c["n_kv_head"] * c["head_dim"]
    V, L = c["vocab_size"], c["block_size"]
    out = {"transformer.wte.weight": (V, d)}
    if c.get("positional", "learned") == "learned":
        out["transformer.wpe.weight"] = (L, d)
    for l in range(c["n_layer"]):
        p = f"transformer.h.{l}."
        out[p + "ln_1.weight"] = (d,)
        out[p + "ln_1.bias"] = (d,)
        out[p + "attn.q_proj.weight"] = (q, d)
        out[p + "attn.q_proj.bias"] = (q,)
        if l % c.get("cla_share", 1) == 0:
            for n in ("k_proj", "v_proj"):
                out[p + f"attn.{n}.weight"] = (kv, d)
                out[p + f"attn.{n}.bias"] = (kv,)
        out[p + "attn.out_proj.weight"] = (d, q)
        out[p + "attn.out_proj.bias"] = (d,)
        out[p + "ln_2.weight"] = (d,)
        out[p + "ln_2.bias"] = (d,)
        out[p + "mlp.c_fc.weight"] = (4 * d, d)
        out[p + "mlp.c_fc.bias"] = (4 * d,)
        out[p + "mlp.c_proj.weight"] = (d, 4 * d)
        out[p + "mlp.c_proj.bias"] = (d,)
    out["transformer.ln_f.weight"] = (d,)
    out["transformer.ln_f.bias"] = (d,)
    out["lm_head.weight"] = (V, d)
    return out


def bf16_round(x64):
    """float64 -> bfloat16 value, rounded once (nearest, ties to even) on the exact double: 8
    significant bits, float32's exponent range. Rounding through float32 first (f64 -> f32 -> bf16)
    rounds twice and differs when the float32 rounding lands on a bf16 tie (2 of the 40,768
    elements of the peer model; see bf16_two_step)."""
    def one(x):
        if x == 0.0:
            return 0.0
        _, e = math.frexp(abs(x))
        q = math.ldexp(1.0, max(e - 1, -126) - 7)
        return round(x / q) * q  # Python's round: ties to even
    return np.vectorize(one)(x64)


def bf16_two_step(x64):
    """The double rounding f64 -> f32 -> bf16 (nearest even on the float32 bits), for comparison."""
    f = x64.astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


_erf = np.vectorize(math.erf)


def forward_loss(w, c, tokens):
    """Mean next-token cross-entropy over non-overlapping windows of L+1 tokens (stride L)."""
    L, H, G, hd = c["block_size"], c["n_head"], c["n_kv_head"], c["head_dim"]
    d = c["d_model"]

    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5) * g + b

    total, count = 0.0, 0
    n_windows = (len(tokens) - 1) // L
    for i in range(n_windows):
        seq = tokens[i * L: i * L + L + 1]
        x = w["transformer.wte.weight"][seq[:-1]] + w["transformer.wpe.weight"][:L]
        for l in range(c["n_layer"]):
            p = f"transformer.h.{l}."
            h = ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
            q = h @ w[p + "attn.q_proj.weight"].T + w[p + "attn.q_proj.bias"]
            k = h @ w[p + "attn.k_proj.weight"].T + w[p + "attn.k_proj.bias"]
            v = h @ w[p + "attn.v_proj.weight"].T + w[p + "attn.v_proj.bias"]
            att = np.zeros((L, H * hd))
            mask = np.triu(np.ones((L, L), dtype=bool), 1)
            for hh in range(H):
                g = hh // (H // G)
                qs, ks, vs = q[:, hh * hd:(hh + 1) * hd], k[:, g * hd:(g + 1) * hd], v[:, g * hd:(g + 1) * hd]
                s = qs @ ks.T / math.sqrt(hd)
                s[mask] = -np.inf
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                att[:, hh * hd:(hh + 1) * hd] = s @ vs
            x = x + att @ w[p + "attn.out_proj.weight"].T + w[p + "attn.out_proj.bias"]
            m = ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"].T + w[p + "mlp.c_fc.bias"]
            m = 0.5 * m * (1 + _erf(m / math.sqrt(2)))
            x = x + m @ w[p + "mlp.c_proj.weight"].T + w[p + "mlp.c_proj.bias"]
        logits = ln(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"]) @ w["lm_head.weight"].T
        mx = logits.max(-1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(-1))
        total += float((lse - logits[np.arange(L), seq[1:]]).sum())
        count += L
    assert d > 0
    return total / count


def kvlab_loss(kvlab, weights, text, dtype):
    out = subprocess.run([kvlab, "perplexity", "--weights", weights, "--text", text, "--dtype", dtype,
                          "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kvlab perplexity exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)["loss_nats_per_token"]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    kvlab = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="kvlab_peer_")
    cfg_args = ["--layers", "2", "--d-model", "32", "--heads", "4", "--kv-heads", "2", "--head-dim", "8",
                "--vocab", "256", "--block-size", "32"]

    # kvlab -> Python
    files = {}
    for dt in ("F64", "F32", "F16", "BF16"):
        path = os.path.join(tmp, f"kvlab_{dt}.safetensors")
        subprocess.run([kvlab, "model", "init", "--seed", "7", "--out", path, "--store", dt] + cfg_args,
                       check=True, capture_output=True)
        files[dt] = path
    ref = load_file(files["F64"])
    with safe_open(files["F64"], framework="numpy") as f:
        meta = f.metadata()
    cfg = json.loads(meta["kvlab.config"])
    expected = layout(cfg)
    check(meta.get("format") == "pt", "metadata format = pt")
    check(set(ref) == set(expected), f"F64 file: tensor names = the documented layout ({len(expected)} tensors)")
    check(all(ref[n].shape == s for n, s in expected.items()), "F64 file: every shape as documented")
    check(all(ref[n].dtype == np.float64 for n in ref), "F64 file: dtype float64")
    for dt, npdt, rnd in (("F32", np.float32, lambda a: a.astype(np.float32).astype(np.float64)),
                          ("F16", np.float16, lambda a: a.astype(np.float16).astype(np.float64)),
                          ("BF16", None, bf16_round)):
        if dt == "BF16":
            # numpy has no bfloat16: the reference refuses load_file; read the raw bytes via its header.
            with open(files[dt], "rb") as fh:
                raw = fh.read()
            n = int.from_bytes(raw[:8], "little")
            header = json.loads(raw[8:8 + n])
            data = raw[8 + n:]
            got = {}
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                b, e = info["data_offsets"]
                check(info["dtype"] == "BF16", f"BF16 file: {name} dtype BF16") if name == "lm_head.weight" else None
                u16 = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
                got[name] = u16.view(np.float32).astype(np.float64).reshape(info["shape"])
            try:
                from safetensors.torch import load_file as torch_load  # noqa: F401
                import torch  # noqa: F401
                tl = torch_load(files[dt])
                check(all(np.array_equal(tl[k].float().numpy().astype(np.float64), got[k]) for k in got),
                      "BF16 file: safetensors.torch reads the same values")
            except ImportError:
                print("skip BF16 through safetensors.torch (torch not installed); header and bytes checked")
        else:
            loaded = load_file(files[dt])
            got = {k: v.astype(np.float64) for k, v in loaded.items()}
            check(all(loaded[k].dtype == npdt for k in loaded), f"{dt} file: dtype {np.dtype(npdt).name}")
        check(set(got) == set(ref), f"{dt} file: same tensor names")
        worst = max(float(np.abs(got[k] - rnd(ref[k])).max()) for k in ref)
        check(worst == 0.0, f"{dt} file: values = F64 values rounded to {dt} (max |diff| {worst:g})")
        if dt == "BF16":
            twice = sum(int((got[k] != bf16_two_step(ref[k])).sum()) for k in ref)
            total = sum(ref[k].size for k in ref)
            print(f"note BF16: rounding through float32 first would differ in {twice} of {total} elements")

    # Python -> kvlab
    text = os.path.join(tmp, "text.txt")
    sentence = b"The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n"
    with open(text, "wb") as fh:
        fh.write(sentence * 4)
    tokens = np.frombuffer(open(text, "rb").read(), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(3)
    w64 = {k: (v + 0.05 * rng.standard_normal(v.shape)) for k, v in ref.items()}  # not kvlab's own draw
    loss64 = forward_loss(w64, cfg, tokens)
    p64 = os.path.join(tmp, "py_F64.safetensors")
    save_file(w64, p64, metadata={"kvlab.config": json.dumps(cfg), "format": "np"})
    k64 = kvlab_loss(kvlab, p64, text, "f64")
    check(abs(k64 - loss64) <= 1e-9, f"Python F64 file -> kvlab perplexity f64: {k64:.12f} vs NumPy {loss64:.12f}")
    w32 = {k: v.astype(np.float32) for k, v in w64.items()}
    loss32 = forward_loss({k: v.astype(np.float64) for k, v in w32.items()}, cfg, tokens)
    p32 = os.path.join(tmp, "py_F32.safetensors")
    save_file(w32, p32, metadata={"kvlab.config": json.dumps(cfg)})
    k32 = kvlab_loss(kvlab, p32, text, "f32")
    check(abs(k32 - loss32) <= 1e-4, f"Python F32 file -> kvlab perplexity f32: {k32:.8f} vs NumPy {loss32:.8f}")
    sub = os.path.join(tmp, "beside")
    os.makedirs(sub)
    pb = os.path.join(sub, "model.safetensors")
    save_file(w32, pb)  # no metadata: config.json beside it
    with open(os.path.join(sub, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    kb = kvlab_loss(kvlab, pb, text, "f64")
    check(abs(kb - loss32) <= 1e-9, f"Python F32 file, config.json beside it -> kvlab f64: {kb:.12f} vs {loss32:.12f}")
    w16 = {k: v.astype(np.float16) for k, v in w64.items()}
    p16 = os.path.join(tmp, "py_F16.safetensors")
    save_file(w16, p16, metadata={"kvlab.config": json.dumps(cfg)})
    loss16 = forward_loss({k: v.astype(np.float64) for k, v in w16.items()}, cfg, tokens)
    k16 = kvlab_loss(kvlab, p16, text, "f64")
    check(abs(k16 - loss16) <= 1e-9, f"Python F16 file -> kvlab f64: {k16:.12f} vs NumPy {loss16:.12f}")
    bad = dict(w32)
    bad["transformer.extra.weight"] = np.zeros((2,), dtype=np.float32)
    pbad = os.path.join(tmp, "py_extra.safetensors")
    save_file(bad, pbad, metadata={"kvlab.config": json.dumps(cfg)})
    r = subprocess.run([kvlab, "perplexity", "--weights", pbad, "--text", text], capture_output=True, text=True)
    check(r.returncode == 2 and "unexpected tensor 'transformer.extra.weight'" in r.stderr,
          f"Python file with an extra tensor -> kvlab exit 2 naming it ({r.stderr.strip()[:100]})")
    print(f"{len(FAILS)} failed" if FAILS else "all peer comparisons hold")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
