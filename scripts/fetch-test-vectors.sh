#!/usr/bin/env bash
# scripts/fetch-test-vectors.sh -- tokenizer test vectors for BERT WordPiece: extracts
# llama.cpp's ggml-vocab-bert-bge.gguf (vocab-only GGUF, same vocab as MiniLM) with its
# .inp/.out pair from the llama-cpp-python source archive on PyPI into models/vectors/.
# Cached: does nothing when the three files are there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
OUT=models/vectors
NAME=ggml-vocab-bert-bge.gguf
if [ -f "$OUT/$NAME" ] && [ -f "$OUT/$NAME.inp" ] && [ -f "$OUT/$NAME.out" ]; then
  echo "[fetch-test-vectors] cached in $OUT"; exit 0
fi
mkdir -p models/dl "$OUT"
if ! ls models/dl/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python>=0.3,<0.4" -d models/dl
fi
SDIST=$(ls models/dl/llama_cpp_python-*.tar.gz | sort -V | tail -1)
python3 - "$SDIST" "$OUT" "$NAME" <<'PY'
import os, sys, tarfile
sdist, out, name = sys.argv[1:]
with tarfile.open(sdist) as tar:
    for m in tar.getmembers():
        base = os.path.basename(m.name)
        if "/vendor/llama.cpp/models/" in m.name and base in (name, name + ".inp", name + ".out"):
            with tar.extractfile(m) as src, open(os.path.join(out, base), "wb") as dst:
                dst.write(src.read())
            print("[fetch-test-vectors]", os.path.join(out, base))
PY
