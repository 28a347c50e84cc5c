#!/usr/bin/env bash
# scripts/bench-threads.sh -- issue 12's side-by-side table (a benchmark, not a test), in headless
# Chromium served cross-origin isolated (scripts/serve.mjs): webtensor's four builds (bench/.pkg,
# built with the `bench` feature) at 1 thread and the threaded ones at 2 threads, beside
# onnxruntime-web (numThreads 1 and 2), tfjs-backend-wasm (threads 1 and 2) and wllama
# (n_threads 1 and 2):
#   1. CPU matmul: GEMM 256³/512³/1024³, Q8_0/Q4_0/f32 4096×4096 matvec (bench/index.html);
#   2. MiniLM: 8/32/128 tokens and 16 × 32 (bench/minilm.html, bench/minilm.mjs);
#   3. scaling: MiniLM's 2-thread speed-up in each threaded build, 1 and 2 threads alternated
#      call for call on one page (bench/ab.html): firmer than ratios of separate page loads.
# Medians per case, then each runtime's thread scaling (1-thread ms / 2-thread ms).
# Writes target/bench/threads/*.json.
#   BENCH_REPS=n (default 7)  MINILM_ROUNDS=n (default 3)  BENCH_ONLY=regex (matmul cases)
#   BENCH_PARTS="matmul minilm scaling"  BENCH_BUILD=0 (use bench/.pkg as built)
#   BENCH_PAIRS=n (default 16): pairs a case in the scaling part
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck source=/dev/null
source scripts/.env.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
( cd bench && { [ -d node_modules/onnxruntime-web ] && [ -d node_modules/@wllama/wllama ] || npm ci --no-audit --no-fund; } )
PARTS=${BENCH_PARTS:-matmul minilm scaling}
OUT=target/bench/threads
mkdir -p "$OUT"
if [ "${BENCH_BUILD:-1}" = 1 ]; then
  echo "== building bench/.pkg (four builds, --features bench)"
  bash scripts/build-pkg.sh bench/.pkg --release --features bench
fi
BUILDS=$(cd bench/.pkg && ls -d simd128 simd128-relaxed threads threads-relaxed 2>/dev/null | tr '\n' ' ' || true)
BEST=$(echo "$BUILDS" | awk '{print $NF}')  # threads-relaxed when there is one
if [[ " $PARTS " == *" matmul "* ]]; then
  for b in $BUILDS; do
    for t in 1 2; do
      [ "$t" = 2 ] && [[ "$b" != threads* ]] && continue
      # The peers run once per thread count, beside the build the loader picks by default.
      peers=0; [ "$b" = "$BEST" ] && peers=1
      echo "== CPU matmul: $b, $t thread(s)$([ $peers = 1 ] && echo ', with onnxruntime-web and tfjs-wasm')"
      BENCH_QUERY="build=$b&threads=$t&peers=$peers" node bench/browser.mjs "$OUT/matmul-$b-${t}t.json" >/dev/null
    done
  done
  node bench/threads-table.mjs "$OUT"/matmul-*.json
fi
if [[ " $PARTS " == *" minilm "* ]]; then
  bash scripts/fetch-model.sh
  python3 scripts/export-onnx.py --int8
  runs=""
  for b in $BUILDS; do
    # f32 and Q8_0 in every build (issue 12: Q8_0 ≥ f32 at every case in every build).
    for dt in f32 q8_0; do
      runs+="webtensor@$b:$dt:cpu:1,"
      [[ "$b" == threads* ]] && runs+="webtensor@$b:$dt:cpu:2,"
    done
  done
  runs+="ort:f32:cpu:1,ort:f32:cpu:2,ort:int8:cpu:1,ort:int8:cpu:2,wllama:f32:cpu:1,wllama:f32:cpu:2"
  MINILM_RUNS=$runs node bench/minilm.mjs "$OUT/minilm.json"
fi
if [[ " $PARTS " == *" scaling "* ]]; then
  # MiniLM's 2-thread speed-up call for call (bench/ab.html: 1 and 2 threads alternated on one
  # page, on two copies of the package, as a package loads once a page): the firmer figure
  # where separate page loads move by a third.
  bash scripts/fetch-model.sh >/dev/null
  rm -rf bench/.pkg-twin && cp -r bench/.pkg bench/.pkg-twin
  for b in $BUILDS; do
    [[ "$b" == threads* ]] || continue
    for dt in f32 q8_0; do
      echo "== MiniLM 2-thread speed-up call for call (1-thread ms / 2-thread ms, median of ${BENCH_PAIRS:-16} pairs): $b $dt"
      BENCH_QUERY="a=.pkg&b=.pkg-twin&build=$b&threadsA=1&threadsB=2&type=$dt&pairs=${BENCH_PAIRS:-16}" \
        node bench/browser.mjs "$OUT/scaling-$b-$dt.json" ab.html | grep -E ' tokens '
    done
  done
  rm -rf bench/.pkg-twin
fi
