#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_safetensors (tests/fuzz/corpus/safetensors/), in plain Python
(struct + json, no kvlab code, no safetensors package), so the seeds are an independent writer's.
    python3 tests/fuzz/make_safetensors_corpus.py tests/fuzz/corpus/safetensors
model_*: tiny MiniGPT files (docs/weights.md layout, kvlab.config metadata) in every dtype, RoPE,
CLA; plain_*: tensors without a model config; hostile_*: files the reader must refuse."""
import json
import math
import os
import random
import struct
import sys


def layout(c):
    d, q, kv = c["d_model"], c["n_head"] * c["head_dim"], c["n_kv_head"] * c["head_dim"]
    out = [("transformer.wte.weight", [c["vocab_size"], d])]
    if c.get("positional", "learned") == "learned":
        out.append(("transformer.wpe.weight", [c["block_size"], d]))
    for l in range(c["n_layer"]):
        p = f"transformer.h.{l}."
        out += [(p + "ln_1.weight", [d]), (p + "ln_1.bias", [d]), (p + "attn.q_proj.weight", [q, d]),
                (p + "attn.q_proj.bias", [q])]
        if l % c.get("cla_share", 1) == 0:
            out += [(p + "attn.k_proj.weight", [kv, d]), (p + "attn.k_proj.bias", [kv]),
                    (p + "attn.v_proj.weight", [kv, d]), (p + "attn.v_proj.bias", [kv])]
        out += [(p + "attn.out_proj.weight", [d, q]), (p + "attn.out_proj.bias", [d]), (p + "ln_2.weight", [d]),
                (p + "ln_2.bias", [d]), (p + "mlp.c_fc.weight", [4 * d, d]), (p + "mlp.c_fc.bias", [4 * d]),
                (p + "mlp.c_proj.weight", [d, 4 * d]), (p + "mlp.c_proj.bias", [d])]
    out += [("transformer.ln_f.weight", [d]), ("transformer.ln_f.bias", [d]), ("lm_head.weight", [c["vocab_size"], d])]
    return out


def pack(x, dtype):
    if dtype == "F64":
        return struct.pack("<d", x)
    if dtype == "F32":
        return struct.pack("<f", x)
    if dtype == "F16":
        return struct.pack("<e", x)
    u = struct.unpack("<I", struct.pack("<f", x))[0]  # BF16: nearest even on the float32 bits
    return struct.pack("<H", ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)


SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}


def file_bytes(tensors, metadata=None, pad=True):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        raw = b"".join(pack(v, dtype) for v in values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model(c, dtype, seed):
    rng = random.Random(seed)
    ts = []
    for name, shape in layout(c):
        n = math.prod(shape)
        ts.append((name, dtype, shape, [round(rng.gauss(0, 0.5), 3) for _ in range(n)]))
    return ts


def main(out):
    os.makedirs(out, exist_ok=True)
    base = {"n_layer": 1, "d_model": 4, "n_head": 2, "n_kv_head": 1, "head_dim": 2, "vocab_size": 5,
            "block_size": 4}
    files = {}
    for dt in ("F32", "F64", "F16", "BF16"):
        files[f"model_{dt.lower()}.safetensors"] = file_bytes(model(base, dt, 1), {"kvlab.config": json.dumps(base),
                                                                                  "format": "pt"})
    rope = dict(base, positional="rope")
    files["model_rope.safetensors"] = file_bytes(model(rope, "F32", 2), {"kvlab.config": json.dumps(rope)})
    cla = dict(base, n_layer=2, cla_share=2)
    files["model_cla.safetensors"] = file_bytes(model(cla, "F16", 3), {"kvlab.config": json.dumps(cla)})
    files["plain_tensors.safetensors"] = file_bytes([("a", "F32", [2, 2], [1, 2, 3, 4]), ("s", "F64", [], [0.5]),
                                                     ("e", "BF16", [0], [])], {"note": "x"}, pad=False)
    missing = model(base, "F32", 4)[1:]
    files["model_missing_tensor.safetensors"] = file_bytes(missing, {"kvlab.config": json.dumps(base)})
    good = file_bytes([("t", "F32", [2], [1.0, 2.0])], pad=False)
    hl = struct.unpack("<Q", good[:8])[0]
    h = good[8:8 + hl].decode()
    files["hostile_truncated.safetensors"] = good[:-3]
    files["hostile_huge_header.safetensors"] = b"\xff" * 8 + good[8:]
    files["hostile_trailing.safetensors"] = good + b"\0"
    files["hostile_nan.safetensors"] = good[:-4] + struct.pack("<f", float("nan"))
    def raw(header_text, data):
        return struct.pack("<Q", len(header_text)) + header_text.encode() + data
    files["hostile_overlap.safetensors"] = raw(
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        b"\0" * 8)
    files["hostile_gap.safetensors"] = raw('{"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', b"\0" * 8)
    files["hostile_duplicate.safetensors"] = raw(
        '{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        b"\0" * 8)
    files["hostile_dtype.safetensors"] = raw(h.replace('"F32"', '"I8"'), good[8 + hl:])
    files["hostile_shape.safetensors"] = raw(h.replace("[2]", "[3]"), good[8 + hl:])
    files["hostile_metadata.safetensors"] = raw('{"__metadata__":{"n":1},' + h[1:], good[8 + hl:])
    files["hostile_json.safetensors"] = raw(h[:-1], good[8 + hl:])
    for name, b in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(b)
    print(f"{len(files)} files in {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/safetensors")
