#!/usr/bin/env python3
"""Per GGUF, for bench/generate.html: the token ids that are not whole UTF-8 on their own, and
the weight bytes one decode step reads.

    python3 bench/generate-facts.py models/decoder/bench-*.gguf   # writes <model>.facts.json beside each

wllama 3.8.1 throws "invalid UTF-8 byte" when a random-weight model emits a token whose text
is not valid UTF-8, so its runs get these ids as logit_bias (banned). Only such tokens can
make invalid text: a string of whole-UTF-8 tokens is whole UTF-8.
  - llama (SentencePiece, tokenizer.ggml.model "llama"): the byte-fallback tokens (token type
    6 = BYTE, `<0xNN>`: ids 3..258 in the llama-spm vocab).
  - gpt2 (byte-level BPE, qwen2): each token's text maps back to bytes through GPT-2's
    bytes_to_unicode table; a token whose bytes do not decode as UTF-8 (a lone byte >= 0x80,
    part of a multi-byte character) is banned.
Weight bytes per decode token: every 2-d weight but token_embd, of which a step reads one row,
unless the output is tied to it (no output.weight): then all of it (KV cache reads not counted).
Multiply-adds per prompt token: the elements of every 2-d weight of the layers (blk.*).
Output: {"model", "vocab", "n_vocab", "ban": [ids...], "weightBytes", "prefillMacs", "fileBytes"}.
"""
import json
import os
import sys

import gguf


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (as in the tokenizer files)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def field(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    if len(f.types) == 2:  # array
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]) for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode()
    return f.parts[f.data[0]][0].item()


def banned(path):
    r = gguf.GGUFReader(path)
    model = field(r, "tokenizer.ggml.model")
    tokens = field(r, "tokenizer.ggml.tokens")
    if model == "llama":
        types = field(r, "tokenizer.ggml.token_type")
        ids = [i for i, t in enumerate(types) if t == 6]
    elif model == "gpt2":
        back = {c: b for b, c in bytes_to_unicode().items()}
        ids = []
        for i, t in enumerate(tokens):
            text = t.decode("utf-8")
            if any(c not in back for c in text):
                continue  # a control/added token written as plain text: whole UTF-8
            try:
                bytes(back[c] for c in text).decode("utf-8")
            except UnicodeDecodeError:
                ids.append(i)
    else:
        raise SystemExit(f"{path}: tokenizer model {model!r} not handled")
    names = {t.name for t in r.tensors}
    wb = sum(int(t.n_bytes) for t in r.tensors if len(t.shape) == 2
             and (t.name != "token_embd.weight" or "output.weight" not in names))
    # Multiply-adds per prompt token in the layers' matmuls (the output projection runs for
    # the last token only; attention's at a 128-token prompt is under 3% of it: left out).
    macs = sum(int(t.n_elements) for t in r.tensors if len(t.shape) == 2 and t.name.startswith("blk."))
    return {"model": os.path.basename(path), "vocab": model, "n_vocab": len(tokens), "ban": ids,
            "weightBytes": wb, "prefillMacs": macs, "fileBytes": os.path.getsize(path)}


def main():
    for path in sys.argv[1:]:
        out = path[: -len(".gguf")] + ".facts.json"
        doc = banned(path)
        with open(out, "w") as f:
            json.dump(doc, f)
        print(f"[generate-facts] {out}: {len(doc['ban'])} of {doc['n_vocab']} ids banned ({doc['vocab']}), "
              f"{doc['weightBytes'] / 1e6:.1f} MB of weights per decode token")


if __name__ == "__main__":
    main()
