#!/usr/bin/env python3
"""kvlab's mini-GPT (lib/model/gpt.hpp) in PyTorch, for `kvlab bench decode --vs-torch`.

Decode steps with a preallocated KV cache ([n_layer] x [max_batch, n_kv_head, max_ctx, head_dim],
written in place, as 004 §3.1's KVCache), timed as kvlab times its own: the cache filled to --ctx
positions, then --steps decode steps of the whole batch, --repeats times. Prints one JSON object per
batch size on stdout: {"d_model", "batch", "tok_s": [one per repeat], "max_abs_logit_diff",
"logit_scale", "threads", "torch"}.

Weights (--weights): raw little-endian float32, no header, in kvlab's reference layout (y = x W + b,
W stored [in, out] row-major), in this order (d = d_model, q_w = n_head*head_dim,
kv_w = n_kv_head*head_dim, V = vocab_size):
  wte [V, d]; wpe [block_size, d];
  per layer: ln1_gain [d], ln1_bias [d], w_q [d, q_w], b_q [q_w], w_k [d, kv_w], b_k [kv_w],
             w_v [d, kv_w], b_v [kv_w], w_o [q_w, d], b_o [d], ln2_gain [d], ln2_bias [d],
             w_fc [d, 4d], b_fc [4d], w_proj [4d, d], b_proj [d];
  lnf_gain [d], lnf_bias [d]; w_lm [d, V].
--logits: kvlab's logits [prompt_len, V] (raw float32) for the prompt 1, 2, ..., prompt_len; the
script computes its own and reports the largest difference (the two models must be one model).
Without PyTorch: exits 2 with the install line.
"""
import argparse
import json
import math
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_decode.py: PyTorch is not installed (Debian/Ubuntu: apt-get install python3-torch; "
          "or pip install torch)", file=sys.stderr)
    sys.exit(2)


def load(path, cfg):
    d, V, T = cfg["d_model"], cfg["vocab_size"], cfg["block_size"]
    q_w, kv_w = cfg["n_head"] * cfg["head_dim"], cfg["n_kv_head"] * cfg["head_dim"]
    with open(path, "rb") as f:
        flat = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = math.prod(shape)
        t = flat[pos:pos + n].view(*shape)
        pos += n
        return t

    w = {"wte": take(V, d), "wpe": take(T, d), "layers": []}
    for _ in range(cfg["n_layer"]):
        l = {}
        l["ln1_g"], l["ln1_b"] = take(d), take(d)
        wq, bq, wk, bk, wv, bv = take(d, q_w), take(q_w), take(d, kv_w), take(kv_w), take(d, kv_w), take(kv_w)
        # nn.Linear's layout: weight [out, in]; Q, K, V fused as kvlab's fast path does.
        l["wqkv"] = torch.cat([wq, wk, wv], dim=1).t().contiguous()
        l["bqkv"] = torch.cat([bq, bk, bv]).contiguous()
        l["wo"], l["bo"] = take(q_w, d).t().contiguous(), take(d)
        l["ln2_g"], l["ln2_b"] = take(d), take(d)
        l["wfc"], l["bfc"] = take(d, 4 * d).t().contiguous(), take(4 * d)
        l["wproj"], l["bproj"] = take(4 * d, d).t().contiguous(), take(d)
        w["layers"].append(l)
    w["lnf_g"], w["lnf_b"] = take(d), take(d)
    w["wlm"] = take(d, V).t().contiguous()
    if pos != flat.numel():
        sys.exit(f"torch_decode.py: {path}: {flat.numel()} floats, the config needs {pos}")
    return w


def forward(w, cfg, tokens, pos0, kc, vc):
    """tokens [B, T] at positions pos0.. ; writes K/V into the caches; returns logits [B, T, V]."""
    B, T = tokens.shape
    d, H, G, hd = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"]
    q_w, kv_w = H * hd, G * hd
    x = w["wte"][tokens] + w["wpe"][pos0:pos0 + T]
    S = pos0 + T
    mask = None
    if T > 1:
        mask = torch.full((T, S), float("-inf")).triu(pos0 + 1)
    for li, l in enumerate(w["layers"]):
        h = F.layer_norm(x, (d,), l["ln1_g"], l["ln1_b"], 1e-5)
        qkv = F.linear(h, l["wqkv"], l["bqkv"])
        q = qkv[..., :q_w].view(B, T, H, hd).transpose(1, 2)
        kc[li][:B, :, pos0:S] = qkv[..., q_w:q_w + kv_w].view(B, T, G, hd).transpose(1, 2)
        vc[li][:B, :, pos0:S] = qkv[..., q_w + kv_w:].view(B, T, G, hd).transpose(1, 2)
        k, v = kc[li][:B, :, :S], vc[li][:B, :, :S]
        if G != H:
            k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            s = s + mask
        att = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, q_w)
        x = x + F.linear(att, l["wo"], l["bo"])
        m = F.gelu(F.linear(F.layer_norm(x, (d,), l["ln2_g"], l["ln2_b"], 1e-5), l["wfc"], l["bfc"]))
        x = x + F.linear(m, l["wproj"], l["bproj"])
    return F.linear(F.layer_norm(x, (d,), w["lnf_g"], w["lnf_b"], 1e-5), w["wlm"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="JSON: n_layer d_model n_head n_kv_head head_dim vocab_size block_size")
    ap.add_argument("--weights", required=True)
    ap.add_argument("--logits", default="")
    ap.add_argument("--prompt-len", type=int, default=8)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    cfg = json.loads(a.config)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    batches = [int(b) for b in a.batches.split(",")]
    w = load(a.weights, cfg)
    G, hd, L = cfg["n_kv_head"], cfg["head_dim"], cfg["n_layer"]
    max_ctx = a.ctx + a.steps + 1
    Bmax = max(batches)
    with torch.inference_mode():
        kc = [torch.zeros(Bmax, G, max(max_ctx, a.prompt_len), hd) for _ in range(L)]
        vc = [torch.zeros_like(kc[0]) for _ in range(L)]
        diff, scale = float("nan"), float("nan")
        if a.logits:
            prompt = torch.arange(1, a.prompt_len + 1).view(1, -1)
            mine = forward(w, cfg, prompt, 0, kc, vc)[0]
            with open(a.logits, "rb") as f:
                theirs = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).view(a.prompt_len, -1)
            diff = float((mine - theirs).abs().max())
            scale = float(theirs.abs().max())
        for c in kc + vc:
            c.normal_()
        for B in batches:
            tok = torch.full((B, 1), 3, dtype=torch.long)
            forward(w, cfg, tok, a.ctx, kc, vc)  # warm-up
            rates = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                for s in range(a.steps):
                    logits = forward(w, cfg, tok, a.ctx + s, kc, vc)
                    tok = logits[:, -1:].argmax(-1) % cfg["vocab_size"]
                rates.append(B * a.steps / (time.perf_counter() - t0))
            print(json.dumps({"d_model": cfg["d_model"], "batch": B, "tok_s": rates, "max_abs_logit_diff": diff,
                              "logit_scale": scale, "threads": torch.get_num_threads(),
                              "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
