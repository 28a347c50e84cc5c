#!/usr/bin/env bash
# scripts/fetch-test-vectors.sh -- tokenizer test vectors: extracts every llama.cpp
# vocab-only GGUF (`ggml-vocab-*.gguf`) with its `.inp`/`.out` pair (where the package has
# one) from the llama-cpp-python source archive on PyPI into models/vectors/. Among them:
# bert-bge (WordPiece, same vocab as MiniLM), llama-spm and phi-3 (SentencePiece), and the
# byte-level BPE files (llama-bpe, qwen2, gpt-2, deepseek-*, ...).
# Cached: does nothing when models/vectors/.complete names the archive it came from.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
OUT=models/vectors
mkdir -p models/dl "$OUT"
if ! ls models/dl/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python>=0.3,<0.4" -d models/dl
fi
SDIST=$(ls models/dl/llama_cpp_python-*.tar.gz | sort -V | tail -1)
if [ -f "$OUT/.complete" ] && [ "$(cat "$OUT/.complete")" = "$(basename "$SDIST")" ]; then
  echo "[fetch-test-vectors] cached in $OUT"; exit 0
fi
python3 - "$SDIST" "$OUT" <<'PY'
import os, sys, tarfile
sdist, out = sys.argv[1:]
n = 0
with tarfile.open(sdist) as tar:
    for m in tar.getmembers():
        base = os.path.basename(m.name)
        if "/vendor/llama.cpp/models/" in m.name and base.startswith("ggml-vocab-") and m.isfile():
            with tar.extractfile(m) as src, open(os.path.join(out, base), "wb") as dst:
                dst.write(src.read())
            n += 1
print(f"[fetch-test-vectors] {n} files in {out}")
if n == 0:
    sys.exit("[fetch-test-vectors] no ggml-vocab-* files in " + sdist)
PY
basename "$SDIST" > "$OUT/.complete"
