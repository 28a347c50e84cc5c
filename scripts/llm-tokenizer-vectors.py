#!/usr/bin/env python3
"""Random-text differential vectors for webtensor's SentencePiece and byte-level BPE
tokenizers: seeded random texts tokenized and detokenized by llama.cpp (through
llama-cpp-python, vocab only) for llama.cpp's vocab test files, written to
tests/reference/llm_tokenizer_<name>.jsonl for tests/llm_tokenizer_random.rs.

    pip install llama-cpp-python==0.3.36
    scripts/fetch-test-vectors.sh          # models/vectors/ggml-vocab-*.gguf
    python3 scripts/llm-tokenizer-vectors.py [--count 300] [--seed 25] [--vocab NAME ...]
    python3 scripts/llm-tokenizer-vectors.py --unicode-data llama.cpp/src/unicode-data.cpp

The second form writes src/model/tokenizer/unicode_flags.rs, llama.cpp's code point
categories (its `unicode_ranges_flags`, generated from the UCD version it was built with),
which webtensor's pre-tokenizers use so that they split exactly as that llama.cpp does; take
unicode-data.cpp from the same llama.cpp as the vectors (llama-cpp-python's sdist vendors it
under vendor/llama.cpp/src/).

Texts mix English words, punctuation runs, digit runs of many lengths, whitespace runs
(tabs, newlines, carriage returns, many spaces, non-ASCII spaces), code, CJK, Cyrillic,
Arabic, emoji with ZWJ sequences and modifiers, combining marks, control and format
characters, private-use, recently assigned and unassigned code points (the code point
pools of scripts/wordpiece-vectors.py), and the special tokens of common vocabularies
(`<s>`, `<|endoftext|>`, `<|im_start|>`, ...), often glued to text and spaces.

Each vocabulary gets its own texts (the seed plus the vocabulary's index). Every line after
the first (the generator's settings) is {"text", "special", "ids", "detok", "detok_utf8"}:

  ids:   llama.cpp's `llama_tokenize(text, add_special = the vocab's add_bos, special)`
         (`special` is true for every fifth text: control tokens written in the text are
         matched);
  detok: llama.cpp's detokenization of those ids: `llama_token_to_piece(id, lstrip,
         special = false)` concatenated, with lstrip = 1 (where the vocabulary adds a
         space prefix: SentencePiece) on the first token after the BOS that add_bos put
         first -- the loop of llama.cpp's `llama_detokenize` (which
         removes the space SentencePiece put in front), without its optional
         `clean_spaces` pass (the HF "clean up tokenization spaces" rewrite of " ," to ","
         etc., which webtensor's decode does not do and llama-cpp-python cannot switch off);
  detok_utf8: whether those bytes are valid UTF-8; if not, `detok` is their decoding with
         U+FFFD for each maximal invalid subpart (Python's errors="replace", the same rule
         as Rust's String::from_utf8_lossy).
"""
import argparse
import ctypes
import importlib.util
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VOCABS = ["llama-spm", "phi-3", "llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "deepseek-coder"]


def load_pools():
    spec = importlib.util.spec_from_file_location(
        "wordpiece_vectors", os.path.join(ROOT, "scripts/wordpiece-vectors.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.POOLS, m.ZWJ


POOLS, ZWJ = load_pools()

ENGLISH = ("the of and to in is that it was for on are as with his they at be this from have "
           "or by one had not but what all were when we there can an your which their said if "
           "Hello World tokenization language model The Quick Brown Fox jumps over lazy dog "
           "don't I'm you're we've they'll she'd It's isn't O'Neil rock'n'roll SHOUTING "
           "camelCase snake_case kebab-case e-mail U.S.A. Mr. Dr. etc. i.e. e.g. naïve café "
           "résumé Zürich São Paulo İstanbul straße").split()

CODE = [
    "fn main() {\n    println!(\"Hello, {}!\", name);\n}\n",
    "def f(x):\n\treturn x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i] * c; }",
    "if (x != null && y >= 10) || z == 'q' {",
    "    let v: Vec<u32> = (0..10).map(|i| i * 2).collect();\n",
    "<div class=\"x\">&nbsp;</div>",
    "SELECT * FROM t WHERE id = 42;",
    "#include <stdio.h>\nint main(void){return 0;}",
    "x = [1, 2, 3]\ny = {'a': 1, \"b\": 2.5e-3}\n",
    "    }\n\n    // comment\n\n\n",
    "$ ls -la ~/.config | grep -v '^d' > /tmp/out.txt 2>&1",
    "https://example.com/path?q=1&r=%20#frag",
    "0x1F 0b1010 1_000_000 3.14159 -7e+10 1e-9",
]

CJK = ["我们是中国人。", "东京都は日本の首都です", "こんにちは、世界！", "한국어 텍스트입니다",
       "漢字かなカナ混じり文", "「引用」『二重』【括弧】", "１２３ＡＢＣ", "中文，标点；符号！？"]

OTHER_SCRIPTS = ["Привет, мир! Ёжик в тумане.", "مرحبا بالعالم", "שלום עולם", "Γειά σου Κόσμε",
                 "नमस्ते दुनिया", "สวัสดีชาวโลก", "Xin chào thế giới", "ሰላም ልዑል", "Բարեւ"]

SPECIALS = ["<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|begin_of_text|>",
            "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
            "<|im_start|>", "<|im_end|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>",
            "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜fim▁hole｜>", "<|reserved_special_token_5|>",
            "<s", "|endoftext|", "<|im_start", "[INST]", "<<SYS>>"]

WS = [" ", "  ", "   ", "      ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n ", "\n \n", "\u00a0",
      "\u3000", "\u2009", " \t ", "\v", "\f", "\n\n\n\n"]


def segment(rng):
    roll = rng.random()
    if roll < 0.22:
        return " ".join(rng.choice(ENGLISH) for _ in range(rng.randint(1, 8)))
    if roll < 0.30:
        return "".join(rng.choice("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~…—–“”‘’«»¿¡")
                       for _ in range(rng.randint(1, 7)))
    if roll < 0.37:
        n = rng.choice([1, 2, 3, 4, 5, 6, 7, 9, 12, 17])
        return "".join(rng.choice("0123456789") for _ in range(n))
    if roll < 0.43:
        return rng.choice(WS) * rng.randint(1, 3)
    if roll < 0.50:
        return rng.choice(CODE)
    if roll < 0.56:
        return rng.choice(CJK)
    if roll < 0.61:
        return rng.choice(OTHER_SCRIPTS)
    if roll < 0.65:
        return rng.choice(ZWJ)
    if roll < 0.72:
        return rng.choice(SPECIALS)
    names = list(POOLS)
    name = rng.choices(names, weights=[POOLS[n][0] for n in names])[0]
    lo, hi = rng.choice(POOLS[name][1])
    out = []
    for _ in range(rng.randint(1, 6)):
        c = rng.randint(lo, hi)
        if 0xD800 <= c <= 0xDFFF:
            c = 0xFFFD
        # NUL ends llama-cpp-python's C string nowhere (it passes a length), but keep a few.
        out.append(chr(c))
    return "".join(out)


def text(rng):
    parts = []
    for _ in range(rng.randint(1, 7)):
        parts.append(segment(rng))
        parts.append(rng.choice(["", "", "", " ", " ", "  ", "\t", "\n", "\u00a0"]))
    t = "".join(parts)
    if rng.random() < 0.15:
        t = rng.choice(WS) + t
    return t


def detokenize(vocab, ids, skip_bos, strip):
    """llama_detokenize's loop, without clean_spaces: pieces of the ids after the BOS that
    add_bos put first, the first with its leading space stripped (lstrip = 1) where the
    vocabulary adds a space prefix (`strip`)."""
    buf = ctypes.create_string_buffer(256)
    out = b""
    first = True
    for i, t in enumerate(ids):
        if i == 0 and skip_bos:
            continue
        n = llama_cpp.llama_token_to_piece(vocab, t, buf, 256, 1 if first and strip else 0, False)
        assert 0 <= n <= 256, n
        out += buf.raw[:n]
        first = False
    return out


def write_unicode_table(src, out):
    """llama.cpp's unicode_ranges_flags (start, flags) as two Rust arrays; checks that its
    whitespace set is Rust's char::is_whitespace (White_Space), which the Rust side uses."""
    import re
    text = open(src, encoding="utf-8").read()
    body = text.split("unicode_ranges_flags = {", 1)[1].split("};", 1)[0]
    ranges = [(int(a, 16), int(b, 16)) for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", body)]
    assert ranges[0][0] == 0 and ranges[-1][0] == 0x110000, "the table covers all code points"
    assert all(f < 0x100 for _, f in ranges), "category flags only"
    merged = []
    for start, flags in ranges[:-1]:
        if not merged or merged[-1][1] != flags:
            merged.append((start, flags))
    ws = text.split("unicode_set_whitespace = {", 1)[1].split("};", 1)[0]
    ws = sorted(int(x, 16) for x in re.findall(r"0x([0-9A-F]+)", ws))
    white_space = [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B)) + \
        [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
    assert ws == white_space, "llama.cpp's whitespace is White_Space"
    with open(out, "w", newline="\n") as f:
        f.write("//! llama.cpp's code point categories (`unicode_ranges_flags` in its src/unicode-data.cpp,\n"
                "//! the llama.cpp of llama-cpp-python 0.3.36), written by\n"
                "//! `scripts/llm-tokenizer-vectors.py --unicode-data FILE`: do not edit. Code points from\n"
                "//! `STARTS[i]` up to the next start have the flags `FLAGS[i]` (llama.cpp's bits: 0x01\n"
                "//! undefined, 0x02 number, 0x04 letter, 0x08 separator, 0x10 mark, 0x20 punctuation,\n"
                "//! 0x40 symbol, 0x80 control).\n\n")
        f.write(f"/// First code point of each range.\n#[rustfmt::skip]\npub(super) static STARTS: [u32; {len(merged)}] = [\n")
        for i in range(0, len(merged), 10):
            f.write("    " + " ".join(f"0x{s:05X}," for s, _ in merged[i:i + 10]) + "\n")
        f.write(f"];\n\n/// Flags of each range.\n#[rustfmt::skip]\npub(super) static FLAGS: [u8; {len(merged)}] = [\n")
        for i in range(0, len(merged), 16):
            f.write("    " + " ".join(f"0x{v:02X}," for _, v in merged[i:i + 16]) + "\n")
        f.write("];\n")
    print(f"wrote {len(merged)} ranges to {out}", file=sys.stderr)


def main():
    global llama_cpp
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--vocab", nargs="*", default=VOCABS)
    ap.add_argument("--dir", default=os.path.join(ROOT, "models/vectors"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "tests/reference"))
    ap.add_argument("--unicode-data", help="llama.cpp's src/unicode-data.cpp: write the table")
    args = ap.parse_args()
    if args.unicode_data:
        write_unicode_table(args.unicode_data, os.path.join(ROOT, "src/model/tokenizer/unicode_flags.rs"))
        return

    import llama_cpp as lc
    llama_cpp = lc

    for name in args.vocab:
        idx = VOCABS.index(name) if name in VOCABS else len(VOCABS)
        path = os.path.join(args.dir, f"ggml-vocab-{name}.gguf")
        llm = lc.Llama(path, vocab_only=True, verbose=False)
        vocab = lc.llama_model_get_vocab(llm.model)
        add_bos = bool(lc.llama_vocab_get_add_bos(vocab))
        bos = lc.llama_vocab_bos(vocab)
        # llama.cpp's add_space_prefix: SentencePiece's default is true, BPE has none.
        strip = lc.llama_vocab_type(vocab) == lc.LLAMA_VOCAB_TYPE_SPM and \
            str(llm.metadata.get("tokenizer.ggml.add_space_prefix", "true")) == "true"
        rng = random.Random(args.seed * 1000 + idx)
        out = os.path.join(args.out_dir, f"llm_tokenizer_{name}.jsonl")
        bad_utf8 = 0
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            meta = {"generator": "scripts/llm-tokenizer-vectors.py", "seed": args.seed,
                    "count": args.count, "vocab": os.path.basename(path), "add_bos": add_bos,
                    "llama_cpp_python": lc.__version__}
            f.write(json.dumps(meta) + "\n")
            for i in range(args.count):
                t = text(rng)
                special = i % 5 == 4
                ids = llm.tokenize(t.encode("utf-8"), add_bos=add_bos, special=special)
                skip = add_bos and len(ids) > 0 and ids[0] == bos
                raw = detokenize(vocab, ids, skip, strip)
                try:
                    d, ok = raw.decode("utf-8"), True
                except UnicodeDecodeError:
                    d, ok = raw.decode("utf-8", errors="replace"), False
                    bad_utf8 += 1
                f.write(json.dumps({"text": t, "special": special, "ids": ids, "detok": d,
                                    "detok_utf8": ok}, ensure_ascii=False) + "\n")
        print(f"{name}: wrote {args.count} texts to {out} ({bad_utf8} detokenize to invalid "
              f"UTF-8)", file=sys.stderr)


if __name__ == "__main__":
    main()
