#!/usr/bin/env bash
# scripts/soak.sh -- the soak test (benchmark-style; not in scripts/test.sh): in headless
# Chromium, MiniLM q8_0 embedded SOAK_EMBEDS times on the CPU and on WebGPU (SwiftShader) and
# loaded / disposed SOAK_CYCLES times, with the wasm memory, the JS heap and the live GPU
# buffers sampled along the way; prints each metric's least-squares slope per iteration and
# whether it is flat, and exits 1 when one is not (scripts/soak.mjs says how). Uses pkg/ as
# built (scripts/build-web.sh or scripts/build-pkg.sh pkg), building it when missing.
#   SOAK_EMBEDS=1000 SOAK_CYCLES=100 ./scripts/soak.sh      # the full run (the defaults)
#   SOAK_EMBEDS=50 SOAK_CYCLES=5 ./scripts/soak.sh          # a short one
#   SOAK_PHASES="webgpu" ./scripts/soak.sh                  # one phase (cpu, webgpu, cycles)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
PKG=${SOAK_PKG:-pkg}
if [ ! -f "$PKG/index.js" ]; then
  echo "[soak] no $PKG/: building it (scripts/build-pkg.sh $PKG --release)" >&2
  bash scripts/build-pkg.sh "$PKG" --release
fi
[ -f models/minilm-q8_0.gguf ] || bash scripts/fetch-model.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
exec node scripts/soak.mjs
