#!/usr/bin/env python3
"""Peer test of docs/weights.md: a NumPy forward written from that page alone against kvlab.

Optional. Without NumPy it prints "skipped: ..." and exits 77 (ctest's skip code), so `make test`
never needs NumPy. Run by hand:
    python3 -m venv /tmp/np-venv && /tmp/np-venv/bin/pip install numpy
    /tmp/np-venv/bin/python tests/peer/forward_peer.py build/bin/kvlab

For several shapes (MHA with learned positions; GQA with RoPE; MQA with a sliding window; CLA with
GQA), `kvlab model init --store F64` writes a seeded model with a byte vocabulary. This script
reads the file with its own safetensors reader (docs/weights.md, "The format kvlab reads"), runs
the forward of "The forward, from the file alone" in float64 and compares, on a fixed text, the
mean next-token cross-entropy with `kvlab perplexity --dtype f64` (the only kvlab command that
exposes a file model's logits: through the loss of every position of every window), to 1e-10
nats relative. A wrong head mapping, RoPE layout, scale, epsilon, GELU or window moves the loss by
far more. Exit 0 when every comparison holds, 1 otherwise.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed (pip install numpy to run this peer test)")
    sys.exit(77)

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def read_safetensors(path):
    """The tensors (float64 arrays) and the metadata of a safetensors file (F64 and F32 only)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    kinds = {"F64": "<f8", "F32": "<f4"}
    tensors = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype=kinds[t["dtype"]]).astype(np.float64).reshape(t["shape"])
    return tensors, meta


def layer_norm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def gelu(u):
    from math import erf
    return 0.5 * u * (1.0 + np.vectorize(erf)(u / np.sqrt(2.0)))


def rope(x, n_heads, d, positions, theta):
    """Rotate-half RoPE: pairs (i, i + d/2) of each head, angle p * theta^(-2i/d)."""
    x = x.copy()
    half = d // 2
    i = np.arange(half)
    ang = positions[:, None] * theta ** (-2.0 * i / d)  # [T, half]
    c, s = np.cos(ang), np.sin(ang)
    for h in range(n_heads):
        a = x[:, h * d:h * d + half].copy()
        b = x[:, h * d + half:(h + 1) * d].copy()
        x[:, h * d:h * d + half] = a * c - b * s
        x[:, h * d + half:(h + 1) * d] = a * s + b * c
    return x


def forward(w, c, tokens):
    """Logits [T, V] of tokens at positions 0..T-1, as docs/weights.md describes the forward."""
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    x = w["transformer.wte.weight"][tokens].copy()
    if c["positional"] == "learned":
        x += w["transformer.wpe.weight"][:T]
    H, G, D = c["n_head"], c["n_kv_head"], c["head_dim"]
    share, window, causal = c.get("cla_share", 1), c.get("sliding_window", 0), c.get("causal", True)
    k = v = None
    for layer in range(c["n_layer"]):
        p = f"transformer.h.{layer}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        q = h @ w[p + "attn.q_proj.weight"].T + w[p + "attn.q_proj.bias"]
        if layer % share == 0:  # the first layer of a CLA group computes the group's K/V
            k = h @ w[p + "attn.k_proj.weight"].T + w[p + "attn.k_proj.bias"]
            v = h @ w[p + "attn.v_proj.weight"].T + w[p + "attn.v_proj.bias"]
            if c["positional"] == "rope":
                k = rope(k, G, D, pos, c["rope_theta"])
        if c["positional"] == "rope":
            q = rope(q, H, D, pos, c["rope_theta"])
        out = np.zeros((T, H * D))
        group = H // G
        for hh in range(H):
            g = hh // group
            s = q[:, hh * D:(hh + 1) * D] @ k[:, g * D:(g + 1) * D].T / np.sqrt(D)  # [T, T]
            visible = np.ones((T, T), dtype=bool)
            if causal:
                visible &= np.tril(visible)
            if window > 0:
                qi, kj = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
                visible &= kj >= qi - window + 1
            s = np.where(visible, s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, hh * D:(hh + 1) * D] = (s / s.sum(axis=1, keepdims=True)) @ v[:, g * D:(g + 1) * D]
        x = x + out @ w[p + "attn.out_proj.weight"].T + w[p + "attn.out_proj.bias"]
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"].T + w[p + "mlp.c_fc.bias"]
        x = x + gelu(m) @ w[p + "mlp.c_proj.weight"].T + w[p + "mlp.c_proj.bias"]
    return layer_norm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"]) @ w["lm_head.weight"].T


def loss(w, c, tokens):
    """kvlab perplexity's definition (docs/weights.md): non-overlapping windows of block_size + 1."""
    L = c["block_size"]
    total = (len(tokens) - 1) // L
    s = 0.0
    for i in range(total):
        start = i * L
        lg = forward(w, c, tokens[start:start + L])
        m = lg.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(lg - m).sum(axis=1, keepdims=True)))[:, 0]
        s += float((lse - lg[np.arange(L), tokens[start + 1:start + L + 1]]).sum())
    return s / (total * L)


SHAPES = [
    ("MHA, learned positions", ["--n-head", "4", "--n-kv-head", "4"]),
    ("GQA 4/2, RoPE", ["--n-head", "4", "--n-kv-head", "2", "--positional", "rope", "--rope-theta", "500"]),
    ("MQA, RoPE, sliding window 5", ["--n-head", "4", "--n-kv-head", "1", "--positional", "rope", "--window", "5"]),
    ("GQA 4/2, CLA 2 of 3 layers", ["--n-head", "4", "--n-kv-head", "2", "--n-layer", "3", "--cla-share", "2"]),
]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    kvlab = sys.argv[1]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as d:
        text = os.path.join(d, "text.bin")
        with open(text, "wb") as f:
            f.write(bytes(rng.integers(0, 256, size=3 * 16 + 1, dtype=np.uint8)))
        tokens = np.frombuffer(open(text, "rb").read(), dtype=np.uint8).astype(np.int64)
        for i, (what, flags) in enumerate(SHAPES):
            path = os.path.join(d, f"m{i}.safetensors")
            init = subprocess.run([kvlab, "model", "init", "--seed", str(10 + i), "--out", path, "--store", "F64",
                                   "--vocab-size", "256", "--block-size", "16", "--d-model", "32", "--head-dim", "8",
                                   *flags], capture_output=True, text=True)
            if init.returncode != 0:
                check(False, f"{what}: kvlab model init exited {init.returncode}: {init.stderr.strip()}")
                continue
            w, meta = read_safetensors(path)
            c = json.loads(meta["kvlab.config"])
            out = subprocess.run([kvlab, "perplexity", "--weights", path, "--text", text, "--dtype", "f64",
                                  "--format", "json"], capture_output=True, text=True)
            if out.returncode != 0:
                check(False, f"{what}: kvlab perplexity exited {out.returncode}: {out.stderr.strip()}")
                continue
            theirs = json.loads(out.stdout)["loss_nats_per_token"]
            ours = loss(w, c, tokens)
            diff = abs(theirs - ours)
            check(diff <= 1e-10 * abs(ours), f"{what}: kvlab {theirs:.15f}, NumPy from docs/weights.md {ours:.15f}, "
                                             f"|diff| {diff:.2e}")
    print(f"{len(FAILS)} failed" if FAILS else "all comparisons hold")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
