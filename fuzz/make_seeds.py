#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus (fuzz/seeds/<target>/): a few small well-formed GGUF
files of every value type and dtype, texts for the tokenizer, byte programs for the graph
and convert targets. Deterministic. scripts/fuzz.sh runs it before each run; the GGUF files are
not committed (binary artifacts stay out of git), the others are."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, ty, payload):
    return s(key) + struct.pack("<I", ty) + payload


def gguf(kvs, tensors, align=32):
    """tensors: (name, dims, ggml type, data bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    off, infos, blobs = 0, b"", b""
    for name, dims, ty, data in tensors:
        infos += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ty, off)
        pad = (-len(data)) % align
        blobs += data + b"\0" * pad
        off += len(data) + pad
    out += infos
    out += b"\0" * ((-len(out)) % align)
    return out + blobs


scalars = [
    kv("u8", 0, b"\x07"), kv("i8", 1, b"\xf9"), kv("u16", 2, struct.pack("<H", 700)),
    kv("i16", 3, struct.pack("<h", -700)), kv("u32", 4, struct.pack("<I", 7)),
    kv("i32", 5, struct.pack("<i", -7)), kv("f32", 6, struct.pack("<f", 1.5)), kv("bool", 7, b"\x01"),
    kv("str", 8, s("hello")), kv("u64", 10, struct.pack("<Q", 1 << 40)),
    kv("i64", 11, struct.pack("<q", -(1 << 40))), kv("f64", 12, struct.pack("<d", -2.25)),
    kv("arr.str", 9, struct.pack("<IQ", 8, 3) + s("a") + s("") + s("ünï")),
    kv("arr.i32", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, 2, 3)),
    kv("arr.arr", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 0, 2) + b"\x01\x02"),
]
f32 = struct.pack("<8f", *range(8))
put("gguf", "kv_only.gguf", gguf(scalars, []))
put("gguf", "tensors.gguf", gguf([kv("general.architecture", 8, s("test"))], [
    ("t.f32", [4, 2], 0, f32), ("t.f16", [4], 1, b"\x00\x3c" * 4), ("t.q8_0", [32], 8, b"\x00\x3c" + bytes(range(32))),
    ("t.q4_0", [32], 2, b"\x00\x3c" + bytes(16)), ("t.i32", [2, 1, 1, 2], 26, struct.pack("<4i", 1, -1, 2, -2))]))
# Every K-quant (ggml type ids 10..14, 256-value super-blocks of 84/110/144/176/210 bytes),
# one tensor of two rows each; f16 scales of 1.0 where the layout keeps them.
kq = []
for ty, nbytes, scales in [(10, 84, [80, 82]), (11, 110, [108]), (12, 144, [0, 2]), (13, 176, [0, 2]), (14, 210, [208])]:
    blk = bytearray(i % 256 for i in range(nbytes))
    for at in scales:
        blk[at:at + 2] = b"\x00\x3c"
    kq.append((f"t.k{ty}", [256, 2], ty, bytes(blk) * 2))
put("gguf", "kquants.gguf", gguf([kv("general.architecture", 8, s("test"))], kq))
# The same with a NaN `d` in the Q4_K tensor's second block and an Inf `dmin` in the Q2_K's
# first: they parse, and loading their weights must be an Error naming the tensor.
bad = [(n, d, ty, data) for n, d, ty, data in kq]
q2, q4 = bytearray(bad[0][3]), bytearray(bad[2][3])
q2[82:84] = b"\x00\x7c"
q4[144:146] = b"\x00\x7e"
bad[0], bad[2] = bad[0][:3] + (bytes(q2),), bad[2][:3] + (bytes(q4),)
bad.append(("t.q8_0", [32], 8, b"\x00\xfc" + bytes(range(32))))
put("gguf", "kquants_nonfinite_scales.gguf", gguf([kv("general.architecture", 8, s("test"))], bad))
put("gguf", "align64.gguf", gguf([kv("general.alignment", 4, struct.pack("<I", 64))], [("a", [8], 0, f32), ("b", [8], 0, f32)], 64))
put("gguf", "vocab.gguf", gguf([kv("general.architecture", 8, s("bert")), kv("tokenizer.ggml.model", 8, s("bert")),
    kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 6) + b"".join(s(t) for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "##s"]))], []))
put("gguf", "empty.gguf", gguf([], []))
# A 1 GiB alignment and no tensors: no data section, so nothing to pad (the writer once
# padded the header to the alignment and ran out of memory on this).
put("gguf", "align_huge_no_tensors.gguf",
    b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv("general.alignment", 4, struct.pack("<I", 1 << 30)))

texts = ["Hello, world! UNwanted running.", "Café 你好 naïve résumé", "[CLS] hello [SEP][MASK][PAD]",
         "tabs\tand\nnewlines\r\n and \u200b zero width", "a" * 120 + " ab abc ##b", "emoji 😀 and \ufffd replacement"]
for i, t in enumerate(texts):
    put("tokenizer", f"text{i}", bytes([i * 2 % 256]) + t.encode())
put("tokenizer", "invalid_utf8", b"\x00hello \xff\xfe \xc3( \xed\xa0\x80 world")
put("tokenizer", "own_vocab", b"\x05hello\nworld\n##s\n\x00hellos worlds [CLS]")

rng = random.Random(7)
for i in range(8):
    put("graph", f"program{i}", bytes(rng.randrange(256) for _ in range(64 + 32 * i)))
    put("convert", f"arrays{i}", bytes(rng.randrange(256) for _ in range(16 + 48 * i)))
# An f32 matmul of a 32x2 weight and input, values small.
put("graph", "matmul", bytes([1, 0, 2, 0, 200, 1, 1, 0, 1, 2, 0, 200, 1, 1, 0, 150, 0, 1, 5]) + bytes(range(100, 200)))
