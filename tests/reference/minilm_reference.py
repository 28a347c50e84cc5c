#!/usr/bin/env python3
"""Independent numpy forward pass of all-MiniLM-L6-v2 (BERT encoder, mean pooling, L2
normalization) straight from the sentence-transformers checkpoint, in float64.

    minilm_reference.py MODEL_DIR IDS_JSON OUT_JSON

MODEL_DIR holds model.safetensors and config.json; IDS_JSON is {"ids": [[101, ..., 102], ...]}
(token ids with [CLS]/[SEP]); OUT_JSON gets {"embeddings": [[...], ...]}. Each sequence runs
alone (no padding), so the reference knows nothing of the batching under test.
"""
import json
import math
import struct
import sys

import numpy as np


def load_safetensors(path, dtype=np.float64):
    """The float32 tensors of a safetensors file, as `dtype` (float32: exact)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype="<f4").reshape(info["shape"]).astype(dtype)
    return out


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def embed(t, cfg, ids):
    eps = cfg["layer_norm_eps"]
    nh = cfg["num_attention_heads"]
    n = len(ids)
    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:n]
        + t["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    h = x.shape[1]
    hd = h // nh
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda v, name: v @ t[p + name + ".weight"].T + t[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, nh, hd).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, nh, hd).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, nh, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, h)
        a = lin(ctx, "attention.output.dense") + x
        x = layer_norm(a, t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
        f = lin(gelu(lin(x, "intermediate.dense")), "output.dense") + x
        x = layer_norm(f, t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    e = x.mean(0)
    return e / max(np.linalg.norm(e), 1e-12)


def main():
    model_dir, ids_path, out_path = sys.argv[1:4]
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    t = load_safetensors(f"{model_dir}/model.safetensors")
    with open(ids_path) as f:
        seqs = json.load(f)["ids"]
    embs = [embed(t, cfg, np.array(ids, dtype=np.int64)).tolist() for ids in seqs]
    with open(out_path, "w") as f:
        json.dump({"embeddings": embs}, f)


if __name__ == "__main__":
    main()
