#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 to ONNX for the onnxruntime-web peer of the MiniLM benchmark
(issue 6), built op by op with the PyPI `onnx` package (onnx.helper) from the same
sentence-transformers checkpoint webtensor converts to GGUF.

    python3 scripts/export-onnx.py [--out models/minilm.onnx] [--force]
                                   [--check] [--check-json PATH] [--int8 [PATH]]

Reads models/minilm/model.safetensors + config.json (scripts/fetch-model.sh) and writes
models/minilm.onnx (opset 17, IR 8, weights as float32 initializers, ~90 MB); skipped when the
output is newer than the safetensors file (--force rebuilds).

Graph (the BERT encoder as sentence-transformers runs it, mirroring
tests/reference/minilm_reference.py):
  inputs   input_ids       int64 [batch, seq]  token ids with [CLS]/[SEP], padded with 0
           attention_mask  int64 [batch, seq]  1 = token, 0 = padding
  (token_type_ids are all zero and not an input: row 0 of the token-type table is added.)
  embeddings = LayerNorm(word[ids] + token_type[0] + position[0:seq])
  6 x { self-attention: 12 heads of 32, scores / sqrt(32) + (1 - mask) * float32.min,
        Softmax; dense + residual + LayerNorm; FFN 384 -> 1536 -> 384 with exact GELU
        (0.5 x (1 + erf(x / sqrt 2))); residual + LayerNorm }        (eps 1e-12)
  mean pooling over the attention mask (count clamped at 1e-9), L2 normalization
  (norm clamped at 1e-12)
  output   embeddings      float32 [batch, 384]

--check runs the model with the PyPI `onnxruntime` (installed if missing; verification only) on
a few sentences, batched and padded to the longest, and compares each row with the float64
numpy reference run on that sentence alone (cosine >= 0.99999). --check-json PATH also writes
the sentences, their token ids and the reference embeddings (the browser check of
bench/peers/ort-minilm.js reads them).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import unicodedata

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, "models", "minilm")


def say(msg):
    print(f"[export-onnx] {msg}", file=sys.stderr)


def need(module, package=None):
    """Import `module`, pip-installing `package` (default: the module's name) if missing."""
    try:
        return __import__(module)
    except ImportError:
        say(f"pip install {package or module}")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", package or module])
        return __import__(module)


def reference_module():
    """tests/reference/minilm_reference.py: the safetensors reader and the numpy forward pass."""
    spec = importlib.util.spec_from_file_location(
        "minilm_reference", os.path.join(ROOT, "tests", "reference", "minilm_reference.py"))
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    return ref


def load_f32(path):
    """The float32 tensors of a safetensors file, exact (no conversion)."""
    return reference_module().load_safetensors(path, np.float32)


def build(t, cfg):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    eps = float(cfg["layer_norm_eps"])
    nh = cfg["num_attention_heads"]
    h = cfg["hidden_size"]
    hd = h // nh
    nodes, inits = [], []
    counter = [0]

    def init(name, arr):
        arr = np.asarray(arr)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(kind, inputs, **attrs):
        counter[0] += 1
        out = f"{kind.lower()}_{counter[0]}"
        nodes.append(helper.make_node(kind, inputs, [out], name=f"{kind}_{counter[0]}", **attrs))
        return out

    def linear(x, prefix):
        # torch Linear: x @ W.T + b; W.T stored as the initializer.
        w = init(prefix + ".weight_t", np.ascontiguousarray(t[prefix + ".weight"].T))
        b = init(prefix + ".bias", t[prefix + ".bias"])
        return op("Add", [op("MatMul", [x, w]), b])

    def layer_norm(x, prefix):
        w = init(prefix + ".weight", t[prefix + ".weight"])
        b = init(prefix + ".bias", t[prefix + ".bias"])
        return op("LayerNormalization", [x, w, b], axis=-1, epsilon=eps)

    f32 = lambda v: np.array(v, dtype=np.float32)
    i64 = lambda v: np.array(v, dtype=np.int64)
    one = init("one", f32(1.0))
    half = init("half", f32(0.5))
    sqrt2 = init("sqrt2", f32(np.sqrt(2.0)))
    sqrt_hd = init("sqrt_head_dim", f32(np.sqrt(hd)))
    neg = init("mask_neg", f32(np.finfo(np.float32).min))
    split_heads = init("shape_split_heads", i64([0, 0, nh, hd]))
    merge_heads = init("shape_merge_heads", i64([0, 0, h]))
    zero1 = init("zero_1d", i64([0]))
    axis0 = init("axis_0", i64([0]))
    axis1 = init("axis_1", i64([1]))
    axes12 = init("axes_1_2", i64([1, 2]))
    axis2 = init("axis_2", i64([2]))

    # Embeddings: word[ids] + token_type[0] + position[0:seq], then LayerNorm.
    word = init("embeddings.word_embeddings.weight", t["embeddings.word_embeddings.weight"])
    tt0 = init("embeddings.token_type_embeddings.row0", t["embeddings.token_type_embeddings.weight"][0])
    pos = init("embeddings.position_embeddings.weight", t["embeddings.position_embeddings.weight"])
    seq = op("Shape", ["input_ids"], start=1, end=2)  # [seq]
    pos_s = op("Slice", [pos, zero1, seq, axis0])  # [seq, h]
    x = op("Add", [op("Add", [op("Gather", [word, "input_ids"], axis=0), tt0]), pos_s])
    x = layer_norm(x, "embeddings.LayerNorm")

    # Additive attention mask [batch, 1, 1, seq]: 0 for tokens, float32.min for padding.
    mask_f = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)  # [batch, seq]
    mask_add = op("Mul", [op("Sub", [one, op("Unsqueeze", [mask_f, axes12])]), neg])

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        heads = lambda v: op("Reshape", [linear(x, p + v), split_heads])  # [b, s, nh, hd]
        q = op("Transpose", [heads("attention.self.query")], perm=[0, 2, 1, 3])  # [b, nh, s, hd]
        k = op("Transpose", [heads("attention.self.key")], perm=[0, 2, 3, 1])  # [b, nh, hd, s]
        v = op("Transpose", [heads("attention.self.value")], perm=[0, 2, 1, 3])  # [b, nh, s, hd]
        s = op("Add", [op("Div", [op("MatMul", [q, k]), sqrt_hd]), mask_add])  # [b, nh, s, s]
        probs = op("Softmax", [s], axis=-1)
        ctx = op("Transpose", [op("MatMul", [probs, v])], perm=[0, 2, 1, 3])  # [b, s, nh, hd]
        ctx = op("Reshape", [ctx, merge_heads])  # [b, s, h]
        a = op("Add", [linear(ctx, p + "attention.output.dense"), x])
        x = layer_norm(a, p + "attention.output.LayerNorm")
        f = linear(x, p + "intermediate.dense")
        # Exact GELU: 0.5 x (1 + erf(x / sqrt 2)).
        g = op("Mul", [op("Mul", [f, op("Add", [op("Erf", [op("Div", [f, sqrt2])]), one])]), half])
        o = op("Add", [linear(g, p + "output.dense"), x])
        x = layer_norm(o, p + "output.LayerNorm")

    # Mean pooling over the mask, then L2 normalization (sentence-transformers' clamps).
    m3 = op("Unsqueeze", [mask_f, axis2])  # [b, s, 1]
    summed = op("ReduceSum", [op("Mul", [x, m3]), axis1], keepdims=0)  # [b, h]
    count = op("Max", [op("ReduceSum", [m3, axis1], keepdims=0), init("count_min", f32(1e-9))])
    mean = op("Div", [summed, count])
    norm = op("Max", [op("ReduceL2", [mean], axes=[1], keepdims=1), init("norm_min", f32(1e-12))])
    nodes.append(helper.make_node("Div", [mean, norm], ["embeddings"], name="l2_normalize"))

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", h])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="webtensor scripts/export-onnx.py",
        doc_string="sentence-transformers/all-MiniLM-L6-v2: BERT encoder, mean pooling, L2 norm",
    )
    model.ir_version = 8  # opset 17's IR; older runtimes refuse newer IR versions
    onnx.checker.check_model(model)
    return model


# --- --check: a small BERT (uncased) WordPiece tokenizer, the numpy reference, onnxruntime ---


def wordpiece_tokenizer(vocab_path):
    with open(vocab_path, encoding="utf-8") as f:
        vocab = {w.rstrip("\n"): i for i, w in enumerate(f)}

    def is_punct(ch):
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def is_cjk(cp):
        return any(a <= cp <= b for a, b in [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                             (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                             (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)])

    def tokenize(text):
        clean = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            clean.append(" " if ch.isspace() else (f" {ch} " if is_cjk(cp) else ch))
        text = unicodedata.normalize("NFD", "".join(clean).lower())
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
        words = []
        for w in text.split():
            cur = ""
            for ch in w:
                if is_punct(ch):
                    if cur:
                        words.append(cur)
                    words.append(ch)
                    cur = ""
                else:
                    cur += ch
            if cur:
                words.append(cur)
        ids = [vocab["[CLS]"]]
        for w in words:
            if len(w) > 100:
                ids.append(vocab["[UNK]"])
                continue
            pieces, start = [], 0
            while start < len(w):
                end = len(w)
                while end > start:
                    sub = ("##" if start else "") + w[start:end]
                    if sub in vocab:
                        pieces.append(vocab[sub])
                        break
                    end -= 1
                if end == start:
                    pieces = [vocab["[UNK]"]]
                    break
                start = end
            ids.extend(pieces)
        ids.append(vocab["[SEP]"])
        return ids

    return tokenize


# bench/minilm-texts.js's filler words: text_of(n) is the same n-token text its textOf() builds.
WORDS = "the quick brown fox jumps over a lazy dog while seven happy wizards quietly brew potions".split()


def text_of(tokenize, n):
    words = []
    i = 0
    while len(tokenize(" ".join(words))) < n:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    while len(tokenize(" ".join(words))) > n:
        words.pop()
    return " ".join(words)


def check(onnx_path, cfg, check_json):
    ort = need("onnxruntime")
    ref = reference_module()
    tokenize = wordpiece_tokenizer(os.path.join(MODEL_DIR, "vocab.txt"))
    texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "Café au lait, s'il vous plaît!",
        "WebGPU and WebAssembly run tensor graphs in the browser; the scheduler splits each "
        "graph between a SIMD128 CPU backend and a WGSL backend, copying what crosses over.",
        "?",
        text_of(tokenize, 128),
    ]
    ids = [tokenize(s) for s in texts]
    t64 = ref.load_safetensors(os.path.join(MODEL_DIR, "model.safetensors"))
    want = [ref.embed(t64, cfg, np.array(x, dtype=np.int64)) for x in ids]

    n = max(len(x) for x in ids)
    input_ids = np.zeros((len(ids), n), dtype=np.int64)
    mask = np.zeros((len(ids), n), dtype=np.int64)
    for r, x in enumerate(ids):
        input_ids[r, : len(x)] = x
        mask[r, : len(x)] = 1
    worst = 1.0
    for level, label in [(ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "no graph optimization"),
                         (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "all graph optimizations")]:
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        batched = sess.run(["embeddings"], {"input_ids": input_ids, "attention_mask": mask})[0]
        alone = [sess.run(["embeddings"], {"input_ids": input_ids[r : r + 1, : len(x)],
                                           "attention_mask": mask[r : r + 1, : len(x)]})[0][0]
                 for r, x in enumerate(ids)]
        say(f"onnxruntime {ort.__version__} CPU, {label}: cosine to the float64 numpy reference")
        cos = lambda a, b: float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        for r, s in enumerate(texts):
            w = want[r]
            cb = cos(batched[r].astype(np.float64), w)
            ca = cos(alone[r].astype(np.float64), w)
            worst = min(worst, cb, ca)
            say(f"  {len(ids[r]):3d} tokens  1-cos batched+padded {1 - cb:+.1e}  alone {1 - ca:+.1e}  "
                f"max|d| {np.abs(batched[r] - w).max():.2e}  {s[:40]!r}")
    ok = worst >= 0.99999
    say(f"worst cosine {worst:.12f}: {'OK' if ok else 'FAIL'} (>= 0.99999)")
    if check_json:
        os.makedirs(os.path.dirname(os.path.abspath(check_json)), exist_ok=True)
        with open(check_json, "w") as f:
            json.dump({"texts": texts, "ids": ids, "reference": [w.tolist() for w in want]}, f)
        say(f"wrote {check_json}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "minilm.onnx"))
    ap.add_argument("--force", action="store_true", help="rebuild even if the output is newer")
    ap.add_argument("--check", action="store_true", help="compare onnxruntime with the numpy reference")
    ap.add_argument("--check-json", help="with --check: write texts, ids and reference embeddings here")
    ap.add_argument("--int8", nargs="?", const=os.path.join(ROOT, "models", "minilm-int8.onnx"),
                    help="also write the model quantized by onnxruntime's quantize_dynamic "
                         "(int8 weights, activations quantized per run; default path models/minilm-int8.onnx)")
    args = ap.parse_args()

    st = os.path.join(MODEL_DIR, "model.safetensors")
    with open(os.path.join(MODEL_DIR, "config.json")) as f:
        cfg = json.load(f)
    if not args.force and os.path.exists(args.out) and os.path.getmtime(args.out) > os.path.getmtime(st):
        say(f"cached {os.path.relpath(args.out, ROOT)}")
    else:
        onnx = need("onnx")
        model = build(load_f32(st), cfg)
        tmp = args.out + ".tmp"
        onnx.save(model, tmp)
        os.replace(tmp, args.out)
        say(f"wrote {os.path.relpath(args.out, ROOT)} ({os.path.getsize(args.out) / 1e6:.1f} MB, "
            f"{len(model.graph.node)} nodes, opset 17)")
    if args.int8:
        if not args.force and os.path.exists(args.int8) and os.path.getmtime(args.int8) > os.path.getmtime(args.out):
            say(f"cached {os.path.relpath(args.int8, ROOT)}")
        else:
            need("onnxruntime")
            from onnxruntime.quantization import QuantType, quantize_dynamic
            tmp = args.int8 + ".tmp"
            quantize_dynamic(args.out, tmp, weight_type=QuantType.QInt8)
            os.replace(tmp, args.int8)
            say(f"wrote {os.path.relpath(args.int8, ROOT)} ({os.path.getsize(args.int8) / 1e6:.1f} MB, "
                "quantize_dynamic, QInt8 weights)")
    if args.check and not check(args.out, cfg, args.check_json):
        sys.exit(1)


if __name__ == "__main__":
    main()
