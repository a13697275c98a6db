#!/usr/bin/env python3
"""Peer test of kvlab's config reader against transformers' own config classes (PyPI).

Optional, not part of `make test` (it needs PyPI; no PyTorch: only the config classes are used).
Run:
    python3 -m venv /tmp/tf-venv && /tmp/tf-venv/bin/pip install transformers
    /tmp/tf-venv/bin/python tests/peer/config_peer.py build/bin/kvlab
Without transformers it prints "skipped: ..." and exits 0.

For each config.json in tests/data/configs (real_*.json and the hf_*.json that load), transformers
builds the config with the class of its model_type (AutoConfig.for_model; the text model of a
multimodal config through get_text_config()), and this script derives from it, the way
transformers' modeling code does, each layer's kind (full / sliding W / chunked C / none), the
K/V heads and head_dim. `kvlab kv-size --config F --format json` gives its layer_groups; the two
must agree layer by layer. Configs whose model needs remote code (auto_map, e.g. SantaCoder's
GPT2CustomConfig) are listed as not compared: transformers' own class is not the model's.
Exit 0 when every comparison holds; prints one line per config.
"""
import glob
import json
import os
import re
import subprocess
import sys

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def layers_of(text):
    """The layer indices of kvlab's layer list text: "0-3, 5", "0, 2, ..., 22 (every 2)"."""
    m = re.fullmatch(r"(\d+), (\d+), \.\.\., (\d+) \(every (\d+)\)", text)
    if m:
        return list(range(int(m.group(1)), int(m.group(3)) + 1, int(m.group(4))))
    out = []
    for part in text.split(", "):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def kvlab_layers(kvlab, path):
    """Per layer (kind, span, kv heads, head_dim) from kv-size's layer_groups."""
    out = subprocess.run([kvlab, "kv-size", "--config", path, "--format", "json"],
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        return None, out.stderr.strip()
    j = json.loads(out.stdout)
    per = {}
    for g in j["layer_groups"]:
        kind = g["kind"]
        span = g["window/chunk"] if isinstance(g["window/chunk"], int) else 0
        width = g["per layer per token"]
        m = re.fullmatch(r"2 × (\d+) K/V heads × (\d+)", width)
        heads, hd = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        if kind == "mla":
            kind = "full"  # transformers has no separate kind for MLA layers
        for i in layers_of(g["layers"]):
            per[i] = (kind, span, heads, hd)
    return [per[i] for i in sorted(per)], ""


def transformers_layers(cfg):
    """Per layer (kind, span, kv heads, head_dim), from the transformers config object."""
    t = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    mt = t.model_type
    n = t.num_hidden_layers
    if mt in ("mamba", "mamba2", "falcon_mamba"):
        return [("none", 0, 0, 0)] * n
    if getattr(t, "kv_lora_rank", None):  # MLA: the latent, no per-head K/V
        return [("full", 0, 0, 0)] * n
    heads = t.num_attention_heads
    if mt == "falcon":
        kv = t.num_kv_heads if (t.new_decoder_architecture or not t.multi_query) else 1
    elif mt == "gpt_bigcode":
        kv = 1 if t.multi_query else heads
    else:
        kv = getattr(t, "num_key_value_heads", None) or heads
    hd = getattr(t, "head_dim", None) or getattr(t, "attention_head_dim", None) or t.hidden_size // heads
    window = getattr(t, "sliding_window", None)
    chunk = getattr(t, "attention_chunk_size", None)
    kinds = None
    if getattr(t, "layer_types", None):
        kinds = list(t.layer_types)
    elif mt == "nemotron_h":
        kinds = [{"*": "full_attention", "M": "mamba", "-": "mlp", "E": "moe"}[c]
                 for c in t.hybrid_override_pattern]
    elif mt == "jamba":
        kinds = ["full_attention" if b == "attention" else "mamba" for b in t.layers_block_type]
    elif window:
        kinds = ["sliding_attention"] * n
    else:
        kinds = ["full_attention"] * n
    out = []
    for k in kinds:
        if k == "full_attention":
            out.append(("full", 0, kv, hd))
        elif k == "sliding_attention":
            out.append(("sliding", window, kv, hd))
        elif k == "chunked_attention":
            out.append(("chunked", chunk, kv, hd))
        else:
            out.append(("none", 0, 0, 0))
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: config_peer.py path/to/kvlab", file=sys.stderr)
        return 2
    try:
        import transformers
        from transformers import AutoConfig
    except ImportError:
        print("skipped: transformers is not installed (pip install transformers)")
        return 0
    kvlab = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(here, "..", "data", "configs")
    files = sorted(glob.glob(os.path.join(folder, "real_*.json")) + glob.glob(os.path.join(folder, "hf_*.json")))
    print(f"transformers {transformers.__version__}, {len(files)} configs")
    for path in files:
        name = os.path.basename(path)
        with open(path) as f:
            raw = json.load(f)
        if "auto_map" in raw and raw.get("model_type") not in ("jamba", "falcon", "phi3"):
            print(f"--   {name}: remote code ({raw['auto_map'].get('AutoConfig', '?')}); not compared")
            continue
        try:
            d = dict(raw)
            cfg = AutoConfig.for_model(d.pop("model_type"), **d)
        except Exception as e:  # a model_type this transformers does not have
            print(f"--   {name}: transformers cannot build it ({type(e).__name__}: {e}); not compared")
            continue
        ours, err = kvlab_layers(kvlab, path)
        if ours is None:
            check(False, f"{name}: kvlab refused it: {err}")
            continue
        theirs = transformers_layers(cfg)
        check(ours == theirs, f"{name}: {len(theirs)} layers" +
              ("" if ours == theirs else f"; kvlab {ours[:6]}... transformers {theirs[:6]}..."))
    print(f"{len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
