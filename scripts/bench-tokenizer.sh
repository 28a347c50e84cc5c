#!/usr/bin/env bash
# scripts/bench-tokenizer.sh -- tokenizer speed, webtensor beside llama.cpp (a benchmark, not a
# test), issue 25: examples/tokenize_bench.rs writes three texts (English prose ~50 KB, code
# ~50 KB of this repository, mixed Chinese/Japanese ~20 KB) to target/bench/tokenizer/, then
# times webtensor's `Tokenizer::encode(text, true, false)` on them, then llama.cpp's
# `llama_tokenize(text, add_special = true, parse_special = false)` through llama-cpp-python
# (vocab only, called directly with a buffer large enough, so llama.cpp tokenizes once per
# run; time.perf_counter), median of 5 runs each, one thread, for the llama-spm, llama-bpe and
# qwen2 vocab files (scripts/fetch-test-vectors.sh). Prints one markdown table; says where
# the two token counts differ.
#   TOKENIZER_VOCABS="llama-spm llama-bpe qwen2"   the vocab files (models/vectors/ggml-vocab-NAME.gguf)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
VOCABS=${TOKENIZER_VOCABS:-"llama-spm llama-bpe qwen2"}
OUT=target/bench/tokenizer
mkdir -p "$OUT"
python3 -c "import llama_cpp" 2>/dev/null || { echo "needs llama-cpp-python (pip install llama-cpp-python==0.3.36)" >&2; exit 1; }
for v in $VOCABS; do
  [ -f "models/vectors/ggml-vocab-$v.gguf" ] || { echo "models/vectors/ggml-vocab-$v.gguf missing: run scripts/fetch-test-vectors.sh" >&2; exit 1; }
done
cargo build --release --example tokenize_bench >&2
BIN=target/release/examples/tokenize_bench
"$BIN" --write-texts "$OUT"
TEXTS=("$OUT/prose.txt" "$OUT/code.txt" "$OUT/cjk.txt")
: > "$OUT/webtensor.txt"
for v in $VOCABS; do
  "$BIN" "models/vectors/ggml-vocab-$v.gguf" "${TEXTS[@]}" >> "$OUT/webtensor.txt"
done
python3 - "$OUT" "${TEXTS[@]}" -- $VOCABS <<'EOF'
import ctypes, os, statistics, sys, time
import llama_cpp

args = sys.argv[1:]
out, texts, vocabs = args[0], args[1:args.index("--")], args[args.index("--") + 1:]
ours = {}
for line in open(os.path.join(out, "webtensor.txt")):
    vocab, text, nbytes, n, tps = line.split()
    ours[(vocab, text)] = (int(n), float(tps))
rows, notes = [], []
for v in vocabs:
    llm = llama_cpp.Llama(f"models/vectors/ggml-vocab-{v}.gguf", vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    for path in texts:
        name = os.path.splitext(os.path.basename(path))[0]
        data = open(path, "rb").read()
        cap = len(data) + 16
        buf = (llama_cpp.llama_token * cap)()
        secs, n = [], 0
        for _ in range(5):
            t = time.perf_counter()
            n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, cap, True, False)
            secs.append(time.perf_counter() - t)
        assert n >= 0, n
        theirs = n / statistics.median(secs)
        mine_n, mine = ours[(v, name)]
        rows.append(f"| {v} | {name} ({len(data) // 1000} KB) | {n} | {mine:,.0f} | {theirs:,.0f} | {mine / theirs:.2f} |")
        if mine_n != n:
            notes.append(f"{v} {name}: webtensor gives {mine_n} tokens, llama.cpp {n}")
print("| vocab | text | tokens | webtensor tok/s | llama.cpp tok/s | ratio |")
print("|---|---|---:|---:|---:|---:|")
print("\n".join(rows))
print()
print("\n".join(notes) if notes else "Token counts agree on every text.")
EOF
