#!/usr/bin/env bash
# scripts/gpu-check.sh -- the GPU check (examples/gpu_check.rs), for a machine with a real GPU:
# the op suite on that GPU natively, matmul 1024³ and 4096³ per weight dtype with the share of
# the GPU's f32 peak, and MiniLM at the benchmark's four cases on the GPU vs the CPU, printed
# as one table, then text generation (prefill / decode tokens/s) with the decoder bench models
# on the GPU and the CPU (DECODER_MODELS; in a bundle, the bench-*.gguf put beside it), and a
# decode step's attention with its keys split and unsplit against the unfused nodes. A few
# minutes; not part of scripts/test.sh (CI has no GPU).
#
#   scripts/gpu-check.sh                  build (release) and run here
#   scripts/gpu-check.sh --bundle DIR     build, then put the binary, the model and this script
#                                         in DIR, for a GPU machine without Rust
#   DIR/gpu-check.sh                      inside a bundle: run it
#
# Env: GPU_PEAK_GFLOPS (the GPU's f32 peak from its spec sheet; H100/H200 SXM: 66900) adds the
# share of peak; GPU_CHECK_SIZES (default 1024,4096); MINILM_MODEL; BENCH_REPS. Vulkan needs
# the GPU's ICD and libvulkan1 on that machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -x "$HERE/gpu_check" ]; then  # inside a bundle
  cd "$HERE"
  models=$(ls "$HERE"/bench-*.gguf 2>/dev/null | paste -sd, || true)
  exec env MINILM_MODEL="${MINILM_MODEL:-$HERE/minilm-q8_0.gguf}" \
    DECODER_MODELS="${DECODER_MODELS:-$models}" ./gpu_check
fi
ROOT=$(cd "$HERE/.." && pwd); cd "$ROOT"
[ -f models/minilm-q8_0.gguf ] || bash scripts/fetch-model.sh
cargo build --release --example gpu_check
if [ "${1:-}" = --bundle ]; then
  DIR=${2:?usage: scripts/gpu-check.sh --bundle DIR}
  mkdir -p "$DIR"
  cp target/release/examples/gpu_check models/minilm-q8_0.gguf scripts/gpu-check.sh "$DIR/"
  echo "bundle in $DIR ($(du -sh "$DIR" | cut -f1)): run $DIR/gpu-check.sh on the GPU machine"
  exit 0
fi
exec ./target/release/examples/gpu_check
