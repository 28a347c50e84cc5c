#!/usr/bin/env bash
# scripts/bench-minilm.sh -- all-MiniLM-L6-v2 sentence-embedding latency in headless Chromium
# (a benchmark, not a test), issue 6: 8/32/128 tokens and a batch of 16 × 32 tokens, 1 thread,
# webtensor (its SIMD128 build, and the build the package's loader picks) beside onnxruntime-web 1.30 (wasm EP,
# on models/minilm.onnx exported by scripts/export-onnx.py from the same safetensors) and
# wllama (llama.cpp in wasm, on the same GGUF files), one fresh browser context per runtime;
# load time, wasm memory, JS heap, and each runtime's cosine to webtensor f32.
# Writes target/bench/minilm-chromium.json.
#   MINILM_RUNS="webtensor:f32:cpu,ort:f32:webgpu"  other runs (runner:weights:device[:threads]; WebGPU
#                                                   here is SwiftShader: seconds per run)
#   BENCH_REPS=9                                    repetitions per case (median)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck source=/dev/null
source scripts/.env.sh
bash scripts/fetch-model.sh
python3 scripts/export-onnx.py --int8  # pip-installs `onnx` (and onnxruntime for --int8) itself when it has to export
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
( cd bench && { [ -d node_modules/onnxruntime-web ] && [ -d node_modules/@wllama/wllama ] || npm ci --no-audit --no-fund; } )
# The package's four builds (the loader's pick is the default webtensor run), bench feature on.
bash scripts/build-pkg.sh bench/.pkg --release --features bench 2>/dev/null
node bench/minilm.mjs target/bench/minilm-chromium.json
