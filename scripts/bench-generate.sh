#!/usr/bin/env bash
# scripts/bench-generate.sh -- text generation in headless Chromium (a benchmark, not a test),
# issue 28: webtensor's TextGenerator beside wllama 3.8.1 (llama.cpp in wasm) on the same GGUF
# files, in one run, one page (bench/generate.html, a fresh browser context per engine and
# model): random-weight models with the shapes of llama2.c's stories15M (F32, Q8_0, Q4_0,
# Q4_K_M) and of Qwen2.5-0.5B (Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q3_K_M), written by
# `scripts/decoder-models.py --bench` (Q4_K_M, Q5_K_M, Q3_K_M: examples/quantize.rs,
# llama-quantize's mixes); webtensor's
# threads-relaxed build on the CPU at 1 and 2 threads and once on WebGPU (SwiftShader here),
# wllama at n_threads 1 and 2. Per run: load time, prefill tokens/s and time to first token on
# a 128-token prompt, decode tokens/s over 64 greedy steps at context 128 and ~1024 (a
# 900-token prompt), peak wasm memory, and decode's weight bytes per token × tokens/s as a
# share of the streaming-read bandwidth measured in the same browser (bench/bandwidth.wat), and
# prefill's multiply-adds per second as a share of the int8 dot's peak there (bench/int8peak.wat).
# Prints a markdown table; writes target/bench/generate-chromium.json.
#   GEN_RUNS="webtensor:bench-stories15m-q4_0:2,wllama:bench-stories15m-q4_0:2"   other runs
#       (engine:model:threads[:device[:cases[:reps[:decode]]]], cases "short+long"; see bench/generate.mjs)
#   GEN_REPS=1                                                                    repetitions
#   GEN_PROFILE=1                                                                 a profile per case
# The default runs (bench/generate.mjs says which) took 25 minutes on the 2-core machine while
# other builds ran on it; wllama at 2 threads is most of that (its threads spin under load).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck source=/dev/null
source scripts/.env.sh
bash scripts/fetch-test-vectors.sh            # the vocab files the models copy
MODELS=(models/decoder/bench-stories15m-{f32,q8_0,q4_0,q4_k_m}.gguf models/decoder/bench-qwen2-0.5b-{q8_0,q4_0,q4_k_m,q5_k_m,q3_k_m}.gguf)
# models/decoder/bench-*.gguf: writing them takes minutes (the 0.5B shapes), so only when one
# is missing (GEN_REGENERATE=1 rewrites them; unchanged files are kept).
for m in "${MODELS[@]}"; do [ -f "$m" ] || GEN_REGENERATE=1; done
if [ -n "${GEN_REGENERATE:-}" ]; then
  python3 scripts/decoder-models.py --bench
  # Q4_K_M as llama-quantize mixes it (examples/quantize.rs): from the f32 stories15M and
  # (no f32 file of it) the Q8_0 0.5B shape.
  cargo build --release --example quantize
  target/release/examples/quantize models/decoder/bench-stories15m-f32.gguf models/decoder/bench-stories15m-q4_k_m.gguf q4_k_m
  target/release/examples/quantize models/decoder/bench-qwen2-0.5b-q8_0.gguf models/decoder/bench-qwen2-0.5b-q4_k_m.gguf q4_k_m
  target/release/examples/quantize models/decoder/bench-qwen2-0.5b-q8_0.gguf models/decoder/bench-qwen2-0.5b-q5_k_m.gguf q5_k_m
  target/release/examples/quantize models/decoder/bench-qwen2-0.5b-q8_0.gguf models/decoder/bench-qwen2-0.5b-q3_k_m.gguf q3_k_m
fi
python3 bench/generate-facts.py "${MODELS[@]}"
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
( cd bench && { [ -d node_modules/@wllama/wllama ] || npm ci --no-audit --no-fund; } )
# One build: threads-relaxed (1 and 2 threads, and WebGPU).
WEBTENSOR_BUILDS=threads-relaxed bash scripts/build-pkg.sh bench/.pkg-gen --release 2>/dev/null
node bench/generate.mjs target/bench/generate-chromium.json
