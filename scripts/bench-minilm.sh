#!/usr/bin/env bash
# scripts/bench-minilm.sh -- all-MiniLM-L6-v2 embedding latency in headless Chromium (a
# benchmark, not a test): 8/32/128 tokens and a batch of 16, on the CPU (SIMD128, 1 thread) and
# on WebGPU with BENCH_QUERY="devices=cpu,webgpu" (SwiftShader here: seconds per run, says
# nothing about GPU speed), f32 and q8_0, with load times.
# Writes target/bench/minilm-chromium.json. BENCH_QUERY="types=f32&devices=cpu&reps=9" narrows it.
# The peers of issue 6 (onnxruntime-web with a MiniLM ONNX export, wllama) are not wired yet.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck source=/dev/null
source scripts/.env.sh
bash scripts/fetch-model.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
wasm wasm-pack build --release --target web --out-dir bench/.pkg-web >/dev/null 2>&1
node bench/browser.mjs target/bench/minilm-chromium.json minilm.html
