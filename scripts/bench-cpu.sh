#!/usr/bin/env bash
# scripts/bench-cpu.sh -- CPU matmul benchmark (a benchmark, not a test): webtensor's SIMD128
# kernels beside onnxruntime-web (wasm, 1 thread) and tfjs-backend-wasm (XNNPACK, 1 thread),
# in Node and in headless Chromium, plus the wasm SIMD peak probe. Prints tables; writes
# target/bench/cpu-matmul-{node,chromium}.json. (Threads and the four builds side by side:
# scripts/bench-threads.sh.)
#   BENCH_ONLY=regex  only matching cases      BENCH_REPS=n  runs per median (default 7)
#   BENCH_RELAXED=1   also build with relaxed SIMD (+relaxed-simd) and run it as a second pass
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck source=/dev/null
source scripts/.env.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
( cd bench && { [ -d node_modules/onnxruntime-web ] || npm ci --no-audit --no-fund; } )
run_pass() {  # $1 = build (scripts/build-pkg.sh's name), $2 = extra target features, $3 = JSON suffix, $4 = node flags
  local build=$1 feat=$2 node_flags=${4:-}
  echo "== building ($build)"
  RUSTFLAGS="-C target-feature=+simd128$feat" wasm bash scripts/wasm-build.sh bench/.pkg-node nodejs --release --features bench >/dev/null 2>&1
  WEBTENSOR_BUILDS=$build bash scripts/build-pkg.sh bench/.pkg-cpu --release --features bench >/dev/null 2>&1
  echo "== Node ($build)"; node $node_flags bench/node.mjs "target/bench/cpu-matmul-node$3.json"
  echo "== Chromium ($build)"; BENCH_QUERY="pkgdir=.pkg-cpu&build=$build" node bench/browser.mjs "target/bench/cpu-matmul-chromium$3.json"
}
run_pass simd128 "" ""
if [ "${BENCH_RELAXED:-0}" = 1 ]; then
  # Node 20 still keeps relaxed SIMD behind a flag; Chromium ships it.
  run_pass simd128-relaxed ",+relaxed-simd" "-relaxed" "--experimental-wasm-relaxed-simd"
fi
