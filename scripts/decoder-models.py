#!/usr/bin/env python3
"""Tiny random-weight decoder language models as GGUF files, and llama.cpp's outputs for them.

    pip install numpy gguf                       # default mode and --check-numpy
    pip install llama-cpp-python                 # --reference only
    scripts/fetch-test-vectors.sh                # the vocab-only GGUFs in models/vectors/
    python3 scripts/decoder-models.py            # writes models/decoder/<name>.gguf
    python3 scripts/decoder-models.py --reference    # + tests/reference/decoder/<name>.json
    python3 scripts/decoder-models.py --check-numpy  # + float64 numpy forward vs llama.cpp
    python3 scripts/decoder-models.py --reference --only llama3-f32   # one model's JSON
    python3 scripts/decoder-models.py --bench        # + models/decoder/bench-*.gguf (BENCH)

Default mode writes `models/decoder/<name>.gguf` for every model in MODELS (2 layers,
n_embd 64, n_ff 128, context 256) and prints each file's size and sha256; a file whose
sha256 already matches what this script would write is left alone. Weights come from
`numpy.random.default_rng(seed)` with a fixed seed per model, drawn in float64 and rounded to
float32, then stored as F32 / F16 / Q8_0 / Q4_0 (`gguf.quants.quantize`, the numpy port of
ggml's reference quantizers) -- the same bytes on every machine for the same vocab file and
gguf-py version. Every `tokenizer.*` key of the vocab-only file (llama-spm: SentencePiece,
32000 tokens; qwen2: byte-level BPE, 151936 tokens) is copied byte for byte; the
hyper-parameter keys are the ones llama.cpp's convert_hf_to_gguf.py writes. Tensor names and
shapes are llama.cpp's (ggml order, ne0 innermost: a numpy array of shape (rows, cols) is
stored as ne = [cols, rows]).

`--bench` also writes the BENCH models (not written by default): llama2.c stories15M shapes
(n_embd 288, 6 layers, 6 heads = 6 KV heads of 48, n_ff 768, llama-spm vocab, untied output,
context_length 1024) as F32 / Q8_0 / Q4_0, and Qwen2.5-0.5B shapes (qwen2, n_embd 896, 24
layers, 14 heads, 2 KV heads, n_ff 4864, qwen2 vocab, tied, q/k/v biases, context_length 1024)
as Q8_0 / Q4_0, from the same weight generator and quantizer, for scripts/bench-decoder.sh
and scripts/bench-generate.sh. Random weights: for speed only, no reference outputs.

`--reference` (needs llama_cpp) runs every model through llama.cpp exactly as described in
REFERENCE_PARAMS (f32 KV cache, no flash attention, one 256-token batch) and writes
`tests/reference/decoder/<name>.json`:

    {"model", "gguf_sha256", "generator", "n_ctx", "n_vocab",
     "cases": [{"name", "text", "prompt": [token ids, BOS as the vocab adds it],
                "logits": base64 of the last prompt position's logits, little-endian f32
                          (omitted for "long"/"fill" except for one model per arch, LOGITS_ALL),
                "greedy": [32 ids: greedy[i] = argmax of the logits after prompt+greedy[:i]],
                "margins": [top1 - top2 logit gap at each greedy step, 4 significant digits]}]}

Cases: "short" (one sentence), "long" (150 tokens: more than one 64-token chunk), "fill"
(224 tokens + 32 greedy tokens = the whole 256 context; the last greedy token is not fed
back). `prompt` is `llm.tokenize(text.encode(), add_bos=True)[:n]`; `text` is the text that
was tokenized (the prompt may end mid-text).

`--check-numpy` (with or without --reference; reads the JSON files) runs an independent
float64 numpy forward of each model (weights dequantized with gguf.quants) over the "short"
prompt and its first 7 greedy tokens, and prints the cosine and max |diff| against llama.cpp's
logits and how many greedy tokens it reproduces: "exact" uses the dequantized weights as they
are; "ggml-rounded" also rounds the activations entering each weight matmul the way ggml's CPU
backend does (round_activations). Semantics it confirms (llama-cpp-python 0.3.36):
  - RMSNorm x / sqrt(mean(x^2) + eps) * w, eps from the file (1e-5 llama, 1e-6 qwen).
  - RoPE theta_i = pos * base^(-2i/head_dim): llama NORMAL mode (rotates the adjacent pairs
    2i, 2i+1 of each head), qwen2/qwen3 NEOX mode (rotates i with i + head_dim/2).
  - attention scores q.k / sqrt(head_dim) (qwen3: head_dim = key_length 32, not
    n_embd/n_head = 16), causal; query head h reads KV head h // (n_head / n_head_kv).
  - qwen2: q/k/v biases added after the projections, before RoPE.
  - qwen3: attn_q_norm / attn_k_norm are RMSNorms over each head's head_dim values (eps the
    same), applied after the projections and before RoPE.
  - FFN ffn_down(silu(ffn_gate(x)) * ffn_up(x)); tied models use token_embd as the output.
  - ggml's CPU matmul converts the activations to the weights' vec_dot type first: for F16
    weights x is rounded to f16; for Q8_0 and Q4_0 weights x is quantized to Q8_0 (blocks of
    32, d = max|x|/127, q = round(x/d), d stored as f16). With that, numpy matches llama.cpp to
    ~3e-6 (f32 models to ~5e-5); without it the quantized models differ by up to ~1 logit.
    (F16: ~1.6e-2 left, from one activation within 3e-7 of an f16 rounding midpoint whose
    rounding flips between numpy and ggml -- flipping it gives 3e-6.)

The vocab files come from the llama-cpp-python sdist (scripts/fetch-test-vectors.sh); the
models and tests/reference/decoder/ were made from the 0.3.36 ones (VOCAB_SHA256). Another
vocab file gives other model bytes, and the JSON's gguf_sha256 then no longer matches.
"""
import argparse
import base64
import hashlib
import json
import math
import os
import time

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB_DIR = os.path.join(ROOT, "models", "vectors")
OUT_DIR = os.path.join(ROOT, "models", "decoder")
REF_DIR = os.path.join(ROOT, "tests", "reference", "decoder")

N_EMBD, N_LAYER, N_FF, N_CTX = 64, 2, 128, 256

# the vocab-only files of llama-cpp-python 0.3.36 that tests/reference/decoder/ was made from
VOCAB_SHA256 = {
    "ggml-vocab-llama-spm.gguf": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
    "ggml-vocab-qwen2.gguf": "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c",
}

# Weight scales (see draw_weights): token_embd N(0, 1); q/k/v/gate/up N(0, PROJ^2/fan_in);
# attn_output and ffn_down N(0, RES^2/fan_in); untied output N(0, OUT^2); norm weights
# 1 + 0.1 N(0, 1); biases 0.1 N(0, 1). PROJ = 2 makes the attention peaked (llama scores q.k/4
# have a std of about 4); RES = 8 lets the layers outweigh the token's own embedding in the
# residual stream -- with smaller values the tied models (logits = norm(x) . token_embd) just
# repeat one token, because a token's embedding is its own best match. The logits then have a
# std of about 8 (max about 35), and the greedy top1-top2 gap a median of about 1.
PROJ = 2.0
RES = 8.0
OUT = 1.0

LLAMA = dict(arch="llama", vocab="ggml-vocab-llama-spm.gguf", n_head=4, n_head_kv=2, head_dim=16,
             tied=False, rope_base=10000.0, eps=1e-5, qkv_bias=False, qk_norm=False)
QWEN2 = dict(arch="qwen2", vocab="ggml-vocab-qwen2.gguf", n_head=4, n_head_kv=2, head_dim=16,
             tied=True, rope_base=1000000.0, eps=1e-6, qkv_bias=True, qk_norm=False)
QWEN3 = dict(arch="qwen3", vocab="ggml-vocab-qwen2.gguf", n_head=4, n_head_kv=2, head_dim=32,
             tied=True, rope_base=1000000.0, eps=1e-6, qkv_bias=False, qk_norm=True)
# Llama 3.x RoPE scaling: a rope_freqs.weight tensor of per-pair frequency factors, computed as
# llama.cpp's convert_hf_to_gguf.py computes it for rope_scaling {"rope_type": "llama3"}
# (factor, low_freq_factor, high_freq_factor, original_max_position_embeddings). Llama 3.1's
# original context is 8192; 64 here puts every kind of factor (1, interpolated, 8) where a
# 256-token context turns the pairs far enough to tell them apart.
LLAMA3 = dict(LLAMA, rope_base=500000.0,
              rope_freqs=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=64))

# name -> (seed, weight type of the 2-d matmul weights, config)
MODELS = {
    "llama-f32":      (1001, QT.F32,  LLAMA),
    "llama-f16":      (1001, QT.F16,  LLAMA),
    "llama-q8_0":     (1001, QT.Q8_0, LLAMA),
    "llama-q4_0":     (1001, QT.Q4_0, LLAMA),
    "llama-tied-f32": (1002, QT.F32,  dict(LLAMA, n_head_kv=4, tied=True)),
    "qwen2-f32":      (2001, QT.F32,  QWEN2),
    "qwen2-q8_0":     (2001, QT.Q8_0, QWEN2),
    "qwen3-f32":      (3001, QT.F32,  QWEN3),
    "llama3-f32":     (1003, QT.F32,  LLAMA3),
}
# --bench only: the shapes of llama2.c's stories15M (n_embd 288, 6 layers, 6 heads, no GQA,
# n_ff 768), llama-spm vocab, untied output, context 1024 -- for scripts/bench-decoder.sh
# (speed only: random weights, no reference outputs).
STORIES15M = dict(LLAMA, n_head=6, n_head_kv=6, head_dim=48, n_embd=288, n_layer=6, n_ff=768,
                  n_ctx=1024)
# The shapes of Qwen2.5-0.5B (n_embd 896, 24 layers, 14 heads of 64, 2 KV heads, n_ff 4864,
# qwen2 byte-level BPE vocab 151936, tied embeddings, q/k/v biases), context 1024 -- for
# scripts/bench-generate.sh. Every 2-d weight, token_embd too, in the file's type.
QWEN05B = dict(QWEN2, n_head=14, n_head_kv=2, head_dim=64, n_embd=896, n_layer=24, n_ff=4864,
               n_ctx=1024)
BENCH = {
    "bench-stories15m-f32":  (4001, QT.F32,  STORIES15M),
    "bench-stories15m-q8_0": (4001, QT.Q8_0, STORIES15M),
    "bench-stories15m-q4_0": (4001, QT.Q4_0, STORIES15M),
    "bench-qwen2-0.5b-q8_0": (5001, QT.Q8_0, QWEN05B),
    "bench-qwen2-0.5b-q4_0": (5001, QT.Q4_0, QWEN05B),
}
# the one model per arch whose "long"/"fill" cases keep their logits in the JSON
LOGITS_ALL = {"llama-f32", "qwen2-f32", "qwen3-f32", "llama3-f32"}

FILE_TYPE = {QT.F32: gguf.LlamaFileType.ALL_F32, QT.F16: gguf.LlamaFileType.MOSTLY_F16,
             QT.Q8_0: gguf.LlamaFileType.MOSTLY_Q8_0, QT.Q4_0: gguf.LlamaFileType.MOSTLY_Q4_0}

REFERENCE_PARAMS = dict(n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=2, n_threads_batch=2,
                        logits_all=True, type_k=0, type_v=0, flash_attn=False, n_gpu_layers=0,
                        seed=0, verbose=False)

SHORT_TEXT = "The quick brown fox jumps over the lazy dog, and then it runs back home."
LONG_TEXT = (
    "Once upon a time, in a small village at the edge of a great forest, there lived an old "
    "clockmaker named Elias. Every morning he opened the shutters of his workshop at seven "
    "o'clock, brewed a pot of strong black coffee, and sat down at his bench to repair the "
    "watches that the villagers brought him. Some were family heirlooms, passed from father to "
    "son for more than a hundred years; others were cheap trinkets bought at the market in the "
    "nearby town. Elias treated them all with the same patience. He believed that every clock, "
    "no matter how humble, deserved to keep good time. One winter evening, as the snow fell "
    "softly on the rooftops, a young girl knocked on his door. She carried a small wooden box "
    "wrapped in a faded blue scarf. Inside was a pocket watch unlike any he had ever seen: its "
    "face was made of dark glass, and instead of twelve numbers it showed the phases of the moon."
)
FILL_TEXT = (
    "The history of mathematics is, in many ways, the history of notation. Early scribes in "
    "Mesopotamia wrote numbers in base sixty, pressing wedge-shaped marks into wet clay; the "
    "Egyptians used separate hieroglyphs for one, ten, one hundred and one thousand. Greek "
    "geometers such as Euclid (around 300 BC) proved theorems about lines and circles with "
    "almost no symbols at all, describing every step in words. It took many centuries before "
    "the decimal place-value system, with its humble zero, travelled from India through the "
    "Arabic world to Europe. Fibonacci's Liber Abaci, written in 1202, showed merchants how to "
    "add, subtract, multiply and divide with the new digits, and explained why they were so "
    "much easier than Roman numerals. Later, François Viète introduced letters for unknown "
    "quantities, René Descartes joined algebra to geometry, and Leibniz invented the elegant "
    "notation for derivatives and integrals that students still learn today. Each new symbol "
    "made some difficult idea simple enough to write on a single line, and each simplification "
    "opened the door to questions that nobody had been able to ask before."
)
CASES = [("short", SHORT_TEXT, None, 32), ("long", LONG_TEXT, 150, 32), ("fill", FILL_TEXT, 224, 32)]


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------------------------
# weights

def draw_weights(seed, cfg, n_vocab):
    """float32 numpy arrays in (rows, cols) = (out features, in features) layout, llama.cpp names."""
    rng = np.random.default_rng(seed)
    nh, nkv, hd = cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"]
    N_EMBD, N_LAYER, N_FF = dims(cfg)[:3]  # noqa: N806 (the MODELS defaults unless cfg says)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def proj(n_out, n_in, gain=PROJ):
        return normal((n_out, n_in), gain / np.sqrt(n_in))

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"token_embd.weight": normal((n_vocab, N_EMBD), 1.0)}
    if not cfg["tied"]:
        w["output.weight"] = normal((n_vocab, N_EMBD), OUT)
    w["output_norm.weight"] = norm(N_EMBD)
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = norm(N_EMBD)
        w[p + "attn_q.weight"] = proj(nh * hd, N_EMBD)
        w[p + "attn_k.weight"] = proj(nkv * hd, N_EMBD)
        w[p + "attn_v.weight"] = proj(nkv * hd, N_EMBD)
        if cfg["qkv_bias"]:
            w[p + "attn_q.bias"] = normal(nh * hd, 0.1)
            w[p + "attn_k.bias"] = normal(nkv * hd, 0.1)
            w[p + "attn_v.bias"] = normal(nkv * hd, 0.1)
        if cfg["qk_norm"]:
            w[p + "attn_q_norm.weight"] = norm(hd)
            w[p + "attn_k_norm.weight"] = norm(hd)
        w[p + "attn_output.weight"] = proj(N_EMBD, nh * hd, RES)
        w[p + "ffn_norm.weight"] = norm(N_EMBD)
        w[p + "ffn_gate.weight"] = proj(N_FF, N_EMBD)
        w[p + "ffn_up.weight"] = proj(N_FF, N_EMBD)
        w[p + "ffn_down.weight"] = proj(N_EMBD, N_FF, RES)
    return w


def vocab_fields(vocab_file):
    """(key, value, type, sub_type) for every tokenizer.* key, raw bytes for strings, and n_vocab."""
    path = os.path.join(VOCAB_DIR, vocab_file)
    if not os.path.exists(path):
        raise SystemExit(f"{path} missing: run scripts/fetch-test-vectors.sh")
    if sha256_file(path) != VOCAB_SHA256[vocab_file]:
        log(f"WARNING: {vocab_file} is not the llama-cpp-python 0.3.36 file: the models will not"
            " match tests/reference/decoder/ (gguf_sha256)")
    r = gguf.GGUFReader(path)
    out, n_vocab = [], None
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        t = f.types[0]
        if t == VT.ARRAY:
            sub = f.types[-1]
            if len(f.types) != 2:
                raise SystemExit(f"{vocab_file}: nested array {key} not supported")
            if sub == VT.STRING:
                val = [bytes(f.parts[i]) for i in f.data]
            else:
                val = [f.parts[i][0].item() for i in f.data]
            out.append((key, val, t, sub))
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(val)
        elif t == VT.STRING:
            out.append((key, bytes(f.parts[f.data[0]]), t, None))
        else:
            out.append((key, f.parts[f.data[0]][0].item(), t, None))
    if n_vocab is None:
        raise SystemExit(f"{vocab_file}: no tokenizer.ggml.tokens")
    return out, n_vocab


_VOCAB_CACHE = {}


def dims(cfg):
    """(n_embd, n_layer, n_ff, n_ctx): the module defaults unless cfg overrides them (BENCH)."""
    return (cfg.get("n_embd", N_EMBD), cfg.get("n_layer", N_LAYER), cfg.get("n_ff", N_FF),
            cfg.get("n_ctx", N_CTX))


def llama3_rope_factors(cfg):
    """rope_freqs.weight for cfg's rope_freqs: convert_hf_to_gguf.py's LlamaModel loop (its
    freqs in float32, as torch computes them there), as float32."""
    rs, hd = cfg["rope_freqs"], cfg["head_dim"]
    freqs = 1.0 / (np.float32(cfg["rope_base"]) ** (np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd)))
    old, lo, hi, factor = rs["original_context"], rs["low_freq_factor"], rs["high_freq_factor"], rs["factor"]
    low_wavelen, high_wavelen = old / lo, old / hi
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / float(f)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(name, path):
    """Writes the GGUF file for `name` to `path`; returns the float32 weights before quantization."""
    seed, wtype, cfg = MODELS[name] if name in MODELS else BENCH[name]
    if cfg["vocab"] not in _VOCAB_CACHE:
        _VOCAB_CACHE[cfg["vocab"]] = vocab_fields(cfg["vocab"])
    fields, n_vocab = _VOCAB_CACHE[cfg["vocab"]]
    w = draw_weights(seed, cfg, n_vocab)
    if cfg.get("rope_freqs"):
        w["rope_freqs.weight"] = llama3_rope_factors(cfg)
    arch, nh, nkv, hd = cfg["arch"], cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"]
    N_EMBD, N_LAYER, N_FF, N_CTX = dims(cfg)  # noqa: N806

    wr = gguf.GGUFWriter(path, arch)  # adds general.architecture
    wr.add_name(name)
    wr.add_uint32(f"{arch}.context_length", N_CTX)
    wr.add_uint32(f"{arch}.embedding_length", N_EMBD)
    wr.add_uint32(f"{arch}.block_count", N_LAYER)
    wr.add_uint32(f"{arch}.feed_forward_length", N_FF)
    wr.add_uint32(f"{arch}.attention.head_count", nh)
    wr.add_uint32(f"{arch}.attention.head_count_kv", nkv)
    wr.add_float32(f"{arch}.rope.freq_base", cfg["rope_base"])
    wr.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", cfg["eps"])
    if arch == "qwen3":
        wr.add_uint32(f"{arch}.attention.key_length", hd)
        wr.add_uint32(f"{arch}.attention.value_length", hd)
    wr.add_uint32(f"{arch}.rope.dimension_count", hd)
    wr.add_uint32(f"{arch}.vocab_size", n_vocab)
    wr.add_uint32("general.file_type", int(FILE_TYPE[wtype]))
    if wtype in (QT.Q8_0, QT.Q4_0):
        wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, val, t, sub in fields:
        wr.add_key_value(key, val, t, sub)

    for tname, arr in w.items():
        if arr.ndim == 1 or wtype == QT.F32:
            wr.add_tensor(tname, arr)
        elif wtype == QT.F16:
            wr.add_tensor(tname, arr.astype(np.float16))
        else:
            q = gguf.quants.quantize(arr, wtype)
            wr.add_tensor(tname, q, raw_shape=q.shape, raw_dtype=wtype)

    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return w


def model_path(name):
    return os.path.join(OUT_DIR, name + ".gguf")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_models(names=None):
    os.makedirs(OUT_DIR, exist_ok=True)
    shas = {}
    for name in (MODELS if names is None else names):
        path = model_path(name)
        tmp = path + ".tmp"
        write_gguf(name, tmp)
        sha = sha256_file(tmp)
        if os.path.exists(path) and sha256_file(path) == sha:
            os.remove(tmp)
            state = "unchanged"
        else:
            os.replace(tmp, path)
            state = "written"
        shas[name] = sha
        log(f"{name:15s} {os.path.getsize(path):>10d} bytes  sha256 {sha}  {state}")
    return shas


# ---------------------------------------------------------------------------------------------
# llama.cpp reference

def generator_string():
    import llama_cpp
    commit = "?"
    try:
        import ctypes
        lib = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        base = ctypes.CDLL(os.path.join(lib, "libggml-base.so"))
        base.ggml_commit.restype = ctypes.c_char_p
        base.ggml_version.restype = ctypes.c_char_p
        commit = f"ggml {base.ggml_version().decode()} commit {base.ggml_commit().decode()}"
    except Exception:
        pass
    return f"llama-cpp-python {llama_cpp.__version__}, llama.cpp ({commit})"


def top2_margin(logits):
    i = int(np.argmax(logits))
    second = np.max(np.delete(logits, i))
    return i, float(logits[i] - second)


def run_llama(path):
    """[(case name, text, prompt, last-position logits f32, greedy ids, margins)]."""
    from llama_cpp import Llama
    llm = Llama(model_path=path, **REFERENCE_PARAMS)
    assert llm.n_ctx() == N_CTX
    out = []
    for cname, text, n, n_gen in CASES:
        prompt = llm.tokenize(text.encode("utf-8"), add_bos=True)
        if n is not None:
            if len(prompt) < n:
                raise SystemExit(f"{path}: {cname} text gives only {len(prompt)} tokens < {n}")
            prompt = prompt[:n]
        assert len(prompt) + n_gen <= N_CTX
        llm.reset()
        llm.eval(prompt)
        first = np.array(llm.scores[len(prompt) - 1], dtype=np.float32).copy()
        logits, greedy, margins = first, [], []
        for step in range(n_gen):
            tok, m = top2_margin(logits)
            greedy.append(tok)
            margins.append(m)
            if step + 1 < n_gen:
                llm.eval([tok])
                logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32).copy()
        out.append((cname, text, prompt, first, greedy, margins))
    del llm
    return out


def dump_json(doc):
    """JSON with one key per line and every list / string on a single line."""
    def dump(v, ind):
        if isinstance(v, dict):
            pad = " " * (ind + 1)
            items = [f"{pad}{json.dumps(k)}: {dump(x, ind + 1)}" for k, x in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
        if isinstance(v, list) and any(isinstance(x, dict) for x in v):
            pad = " " * (ind + 1)
            return "[\n" + ",\n".join(pad + dump(x, ind + 1) for x in v) + "\n" + " " * ind + "]"
        return json.dumps(v, ensure_ascii=False)
    return dump(doc, 0) + "\n"


def write_reference(shas, only=None):
    os.makedirs(REF_DIR, exist_ok=True)
    gen = generator_string()
    log(gen)
    total, t0 = 0, time.time()
    results = {}
    for name in only or MODELS:
        t1 = time.time()
        res = run_llama(model_path(name))
        results[name] = res
        _, n_vocab = _VOCAB_CACHE.get(MODELS[name][2]["vocab"]) or vocab_fields(MODELS[name][2]["vocab"])
        cases = []
        for cname, text, prompt, logits, greedy, margins in res:
            assert logits.shape == (n_vocab,)
            c = {"name": cname, "text": text, "prompt": [int(t) for t in prompt]}
            if cname == "short" or name in LOGITS_ALL:
                c["logits"] = base64.b64encode(logits.astype("<f4").tobytes()).decode("ascii")
            c["greedy"] = [int(t) for t in greedy]
            c["margins"] = [float(f"{m:.4g}") for m in margins]
            cases.append(c)
        doc = {"model": name, "gguf_sha256": shas[name], "generator": gen,
               "n_ctx": N_CTX, "n_vocab": n_vocab, "cases": cases}
        path = os.path.join(REF_DIR, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(dump_json(doc))
        size = os.path.getsize(path)
        total += size
        ms = [m for c in res for m in c[5]]
        log(f"{name:15s} {size:>9d} bytes json  {time.time() - t1:5.1f}s  prompts "
            f"{[len(c[2]) for c in res]}  margin min {min(ms):.4f} median {np.median(ms):.3f}  "
            f"greedy(short) {res[0][4][:12]}...")
    log(f"total JSON {total} bytes ({total / 1e6:.2f} MB), llama.cpp runs {time.time() - t0:.1f}s")

    # determinism: the same model twice gives bit-identical results
    for name in [n for n in ("llama-q4_0", "qwen3-f32") if n in results]:
        again = run_llama(model_path(name))
        for a, b in zip(results[name], again):
            if not (a[2] == b[2] and np.array_equal(a[3], b[3]) and a[4] == b[4]):
                raise SystemExit(f"{name}: llama.cpp not deterministic on case {a[0]}")
        log(f"{name}: second run bit-identical")


# ---------------------------------------------------------------------------------------------
# independent numpy forward (float64)

def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox, factors=None):
    """x: (T, heads, hd). NORMAL: rotate (2i, 2i+1); NEOX: rotate (i, i + hd/2). factors
    (rope_freqs.weight): theta_i divided by factors[i], as ggml's rope_ext freq_factors."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)  # theta_i = pos * base^(-2i/hd)
    if factors is not None:
        inv = inv / factors
    ang = pos[:, None, None] * inv[None, None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if neox:
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def load_gguf_f64(path):
    r = gguf.GGUFReader(path)
    w = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        w[t.name] = np.asarray(a, dtype=np.float64).reshape([int(d) for d in reversed(t.shape)])
    return w


def round_activations(x, wtype):
    """What ggml's CPU mul_mat does to the activations (src1) before the dot products: F32
    weights: nothing; F16 weights: x rounded to f16; Q8_0 / Q4_0 weights: x quantized to Q8_0
    per 32 values (d = max|x|/127, q = round(x/d), d stored as f16); dot = sum of d_w*d_x*sum(q_w*q_x)."""
    if wtype == QT.F32:
        return x
    if wtype == QT.F16:
        return x.astype(np.float32).astype(np.float16).astype(np.float64)
    b = x.astype(np.float32).reshape(*x.shape[:-1], -1, 32)
    d = np.max(np.abs(b), axis=-1, keepdims=True) / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), np.float32(0)).astype(np.float32)
    q = np.rint(b * inv)  # ties to even, as _mm256_round_ps(_MM_ROUND_NEAREST) in quantize_row_q8_0
    return (q * d.astype(np.float16).astype(np.float64)).reshape(x.shape)


def numpy_forward(w, cfg, tokens, wtype=QT.F32):
    """Logits (T, n_vocab) in float64, llama.cpp semantics. With wtype != F32 the inputs of the
    weight matmuls are rounded like ggml's CPU backend does (round_activations)."""
    ra = lambda x: round_activations(x, wtype)  # noqa: E731
    nh, nkv, hd, eps = cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"], cfg["eps"]
    neox = cfg["arch"] in ("qwen2", "qwen3")
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    x = w["token_embd.weight"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(N_LAYER):
        p = f"blk.{i}."
        h = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q = ra(h) @ w[p + "attn_q.weight"].T
        k = ra(h) @ w[p + "attn_k.weight"].T
        v = ra(h) @ w[p + "attn_v.weight"].T
        if cfg["qkv_bias"]:
            q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if cfg["qk_norm"]:  # per head, before RoPE
            q = rms_norm(q, w[p + "attn_q_norm.weight"], eps)
            k = rms_norm(k, w[p + "attn_k_norm.weight"], eps)
        ff = w.get("rope_freqs.weight")
        q, k = rope(q, pos, cfg["rope_base"], neox, ff), rope(k, pos, cfg["rope_base"], neox, ff)
        att = np.empty((T, nh, hd))
        g = nh // nkv
        for hh in range(nh):
            kv = hh // g
            s = q[:, hh] @ k[:, kv].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            att[:, hh] = s @ v[:, kv]
        x = x + ra(att.reshape(T, nh * hd)) @ w[p + "attn_output.weight"].T
        h = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        gate = ra(h) @ w[p + "ffn_gate.weight"].T
        up = ra(h) @ w[p + "ffn_up.weight"].T
        x = x + ra(gate / (1.0 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
    x = rms_norm(x, w["output_norm.weight"], eps)
    out = w.get("output.weight", w["token_embd.weight"])
    return ra(x) @ out.T


def check_numpy(only=None):
    log("numpy float64 forward vs llama.cpp, case 'short' (last position; 'greedy' = how many of the"
        " first 8 greedy tokens the numpy forward reproduces, teacher-forced):")
    worst = 1.0
    for name, (seed, wtype, cfg) in MODELS.items():
        if only and name not in only:
            continue
        path = os.path.join(REF_DIR, name + ".json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        case = doc["cases"][0]
        ref = np.frombuffer(base64.b64decode(case["logits"]), dtype="<f4").astype(np.float64)
        w = load_gguf_f64(model_path(name))
        modes = [("exact", QT.F32)] + ([("ggml-rounded", wtype)] if wtype != QT.F32 else [])
        for mode, rt in modes:
            toks = list(case["prompt"]) + case["greedy"][:7]
            allq = numpy_forward(w, cfg, toks, rt)[len(case["prompt"]) - 1:]
            last = allq[0]
            cos = float(last @ ref / np.linalg.norm(last) / np.linalg.norm(ref))
            diff = float(np.max(np.abs(last - ref)))
            agree = sum(int(np.argmax(allq[i])) == case["greedy"][i] for i in range(8))
            log(f"  {name:15s} {mode:12s} cosine {cos:.9f}  max|diff| {diff:.3e}"
                f"  (max |logit| {np.max(np.abs(ref)):.2f})  greedy {agree}/8")
            if mode != "exact" or wtype == QT.F32:
                worst = min(worst, cos)
    log(f"worst cosine (f32 models exact, others ggml-rounded) {worst:.9f}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", action="store_true", help="also write tests/reference/decoder/*.json")
    ap.add_argument("--check-numpy", action="store_true", help="compare a float64 numpy forward with the JSON logits")
    ap.add_argument("--bench", action="store_true",
                    help="also write models/decoder/bench-*.gguf (BENCH: stories15M and Qwen2.5-0.5B shapes)")
    ap.add_argument("--only", help="--reference and --check-numpy for these models only (comma-separated)")
    args = ap.parse_args()
    only = args.only.split(",") if args.only else None
    for name in only or []:
        if name not in MODELS:
            raise SystemExit(f"--only: no model {name!r} (the models: {', '.join(MODELS)})")
    t0 = time.time()
    shas = write_models()
    if args.bench:
        write_models(BENCH)
    log(f"models done in {time.time() - t0:.1f}s")
    if args.reference:
        write_reference(shas, only)
    if args.check_numpy:
        check_numpy(only)
    log(f"all done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
