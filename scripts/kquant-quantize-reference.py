#!/usr/bin/env python3
"""Writes tests/reference/kquant_quantize.json: llama.cpp's own K-quant bytes for seeded
f32 super-blocks, for tests/kquant_quantize.rs to compare webtensor's quantizer against.

    pip install llama-cpp-python gguf numpy && python3 scripts/kquant-quantize-reference.py

The quantizer is llama.cpp's `ggml_quantize_chunk` (through ctypes on the libggml-base
that llama-cpp-python ships), the call `llama_model_quantize` makes for every tensor; with
no importance matrix it runs `quantize_row_qN_K_ref`. The inputs come from a splitmix64
generator that tests/kquant_quantize.rs repeats exactly (only exact f32 operations: integer
to float, sums and products of f32 in a fixed order), so the fixture holds only outputs:
the bytes of the first EXACT_BLOCKS blocks per type (hex), the SHA-256 of all BLOCKS
blocks' bytes, and the RMS error of llama.cpp's quantization (dequantized by
`gguf.quants`) over all blocks, which webtensor's must not exceed.

Block kinds (block index b, kind b % 8): 0 Gaussian at scales 1, 0.02, 300, 1e-3, 7.5
(cycling); 1 Gaussian with 2% outliers ×12; 2 uniform [0, 1)·scale (all positive);
3 Gaussian·0.1 − 0.5 (mostly negative); 4 sparse (90% zero); 5 a constant; 6 all zero;
7 the first half zero, the second Gaussian·1e-6 (scales near f16's subnormals).
"""
import ctypes
import glob
import hashlib
import json
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

QK_K = 256
BLOCKS = 512
EXACT_BLOCKS = 8
SEED = 0x6B71_7561_6E74  # "kquant"
TYPES = [("q2_k", T.Q2_K, 84), ("q3_k", T.Q3_K, 110), ("q4_k", T.Q4_K, 144),
         ("q5_k", T.Q5_K, 176), ("q6_k", T.Q6_K, 210)]
M64 = (1 << 64) - 1
f32 = np.float32


class Rng:
    """splitmix64; uniform() is the top 24 bits over 2^24 (exact in f32)."""

    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return f32(self.next() >> 40) * f32(1.0 / (1 << 24))

    def gauss(self):
        # Irwin-Hall(4), centred, unit variance: ((u1 + u2) + u3) + u4 - 2, times sqrt(3).
        s = self.uniform() + self.uniform()
        s = s + self.uniform()
        s = s + self.uniform()
        return (s - f32(2.0)) * f32(1.7320508)


SCALES = [f32(1.0), f32(0.02), f32(300.0), f32(1e-3), f32(7.5)]


def block(rng, b):
    kind = b % 8
    scale = SCALES[(b // 8) % len(SCALES)]
    x = np.zeros(QK_K, dtype=np.float32)
    if kind == 5:
        c = (rng.uniform() - f32(0.5)) * f32(4.0)
    for i in range(QK_K):
        if kind == 0:
            x[i] = rng.gauss() * scale
        elif kind == 1:
            v = rng.gauss() * scale
            x[i] = v * f32(12.0) if rng.uniform() < f32(0.02) else v
        elif kind == 2:
            x[i] = rng.uniform() * scale
        elif kind == 3:
            x[i] = rng.gauss() * f32(0.1) - f32(0.5)
        elif kind == 4:
            x[i] = rng.gauss() * scale if rng.uniform() < f32(0.1) else f32(0.0)
        elif kind == 5:
            x[i] = c
        elif kind == 7:
            x[i] = f32(0.0) if i < QK_K // 2 else rng.gauss() * f32(1e-6)
    return x


def inputs():
    rng = Rng(SEED)
    return np.stack([block(rng, b) for b in range(BLOCKS)])


def ggml_base():
    """llama-cpp-python's libggml-base, or the one $GGML_BASE names (a llama.cpp build)."""
    if os.environ.get("GGML_BASE"):
        paths = [os.environ["GGML_BASE"]]
    else:
        import llama_cpp
        libdir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        paths = glob.glob(os.path.join(libdir, "libggml-base.*"))
    if not paths:
        sys.exit(f"no libggml-base in {libdir}")
    lib = ctypes.CDLL(paths[0])
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_void_p]
    return lib


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/reference/kquant_quantize.json"
    lib = ggml_base()
    x = inputs()
    doc = {
        "about": "llama.cpp's K-quant bytes for seeded blocks: scripts/kquant-quantize-reference.py",
        "ggml_base": os.path.basename(lib._name),
        "seed": SEED, "blocks": BLOCKS, "exact_blocks": EXACT_BLOCKS,
        "input_sha256": hashlib.sha256(x.tobytes()).hexdigest(),
        "types": {},
    }
    for name, t, bb in TYPES:
        dst = np.zeros(BLOCKS * bb, dtype=np.uint8)
        # All blocks as one row of BLOCKS·256 values (rows are concatenations of blocks).
        n = lib.ggml_quantize_chunk(int(t), x.ctypes.data, dst.ctypes.data, 0, 1,
                                    BLOCKS * QK_K, None)
        assert n == dst.size, (name, n, dst.size)
        back = quants.dequantize(dst.reshape(BLOCKS, bb), t).reshape(BLOCKS, QK_K)
        err = (back.astype(np.float64) - x.astype(np.float64))
        # RMS error relative to each block's RMS (zero blocks: absolute), averaged.
        rms = np.sqrt((x.astype(np.float64) ** 2).mean(axis=1))
        rel = np.sqrt((err ** 2).mean(axis=1)) / np.where(rms > 0, rms, 1.0)
        doc["types"][name] = {
            "ggml_type": int(t),
            "sha256": hashlib.sha256(dst.tobytes()).hexdigest(),
            "first_blocks_hex": dst[:EXACT_BLOCKS * bb].tobytes().hex(),
            "mean_rel_rms_error": float(rel.mean()),
            "max_rel_rms_error": float(rel.max()),
        }
        print(f"{name}: mean relative RMS error {rel.mean():.5f}, max {rel.max():.5f}")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
