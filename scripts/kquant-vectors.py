#!/usr/bin/env python3
"""Writes models/vectors/kquant_vectors.bin: K-quant super-blocks and their dequantized
values from the `gguf` package's `gguf.quants` (a numpy port of ggml's dequantize_row_q*_K),
for tests/kquant_vectors.rs to compare webtensor's dequantization against bit for bit.

    pip install gguf numpy && python3 scripts/kquant-vectors.py

Per type: random blocks (random bytes, the f16 scale fields set to random finite values of
every magnitude, subnormals included) and edge blocks (all-zero; zero d; zero dmin; the
largest f16 scales with every 6-bit scale/min at 63; the most negative i8 / 6-bit scales;
all value bits set; scales of ±0 and the smallest subnormal). No NaN or Inf anywhere.

Format (little-endian): b"WTKQ", u32 version 1, u32 type count; per type: u32 ggml type id,
u32 block bytes, u32 block count, the blocks' bytes, then count × 256 f32 values.
"""
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

QK_K = 256
# ggml type, block bytes, byte offsets of the f16 scale fields
TYPES = [
    (T.Q2_K, 84, [80, 82]),
    (T.Q3_K, 110, [108]),
    (T.Q4_K, 144, [0, 2]),
    (T.Q5_K, 176, [0, 2]),
    (T.Q6_K, 210, [208]),
]
RANDOM_BLOCKS = 20

F16_MAX = 0x7BFF  # 65504
F16_MIN_SUB = 0x0001


def random_f16(rng, n):
    """Finite f16 bit patterns: mostly everyday magnitudes, some of every exponent."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            v = np.float16(rng.uniform(-0.05, 0.05))
            out.append(int(np.array(v).view(np.uint16)))
        else:
            # Any finite pattern: exponent 0..30 (31 is Inf/NaN), any mantissa and sign.
            e = int(rng.integers(0, 31))
            m = int(rng.integers(0, 1024))
            s = int(rng.integers(0, 2))
            out.append((s << 15) | (e << 10) | m)
    return out


def put_f16(block, off, bits):
    block[off:off + 2] = np.frombuffer(struct.pack("<H", bits), dtype=np.uint8)


def edge_blocks(nbytes, f16_offs):
    blocks = []

    def make(fill, scale_bits):
        b = np.full(nbytes, fill, dtype=np.uint8)
        for off, bits in zip(f16_offs, scale_bits):
            put_f16(b, off, bits)
        return b

    n = len(f16_offs)
    one = 0x3C00
    blocks.append(make(0x00, [0] * n))  # all zero
    blocks.append(make(0xFF, [0] * n))  # every bit set, zero scales
    blocks.append(make(0xFF, [F16_MAX] * n))  # largest scales, largest 6-bit/4-bit fields
    blocks.append(make(0xFF, [0xFBFF] * n))  # most negative scales
    blocks.append(make(0x00, [F16_MAX] * n))  # zero values / zero sub-scales
    blocks.append(make(0xAA, [F16_MIN_SUB] * n))  # smallest subnormal scales
    blocks.append(make(0x55, [0x8000] * n))  # -0 scales
    blocks.append(make(0x80, [one] * n))  # i8 scales of -128 (Q6_K), high bits only
    blocks.append(make(0x7F, [one] * n))
    if n == 2:
        blocks.append(make(0xFF, [0, F16_MAX]))  # zero d, extreme dmin
        blocks.append(make(0xFF, [F16_MAX, 0]))  # extreme d, zero dmin
        blocks.append(make(0x3F, [one, 0xFBFF]))  # negative dmin
    return blocks


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "models", "vectors", "kquant_vectors.bin")
    rng = np.random.default_rng(0x4B51)
    parts = [b"WTKQ", struct.pack("<II", 1, len(TYPES))]
    for qtype, nbytes, f16_offs in TYPES:
        qt = quants.GGML_QUANT_SIZES[qtype]
        assert qt == (QK_K, nbytes), (qtype, qt)
        blocks = []
        for _ in range(RANDOM_BLOCKS):
            b = rng.integers(0, 256, size=nbytes, dtype=np.uint8)
            for off, bits in zip(f16_offs, random_f16(rng, len(f16_offs))):
                put_f16(b, off, bits)
            blocks.append(b)
        blocks += edge_blocks(nbytes, f16_offs)
        data = np.stack(blocks)
        values = quants.dequantize(data.reshape(-1), qtype).astype(np.float32).reshape(-1)
        assert values.size == len(blocks) * QK_K
        assert np.isfinite(values).all()
        parts.append(struct.pack("<III", int(qtype), nbytes, len(blocks)))
        parts.append(data.tobytes())
        parts.append(values.astype("<f4").tobytes())
        print(f"{qtype.name}: {len(blocks)} blocks", file=sys.stderr)
    with open(out_path, "wb") as f:
        f.write(b"".join(parts))
    print(f"wrote {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
