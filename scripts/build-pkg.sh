#!/usr/bin/env bash
# scripts/build-pkg.sh OUT_DIR [--dev|--release|--profiling] [cargo args...] -- builds webtensor's four wasm
# builds into OUT_DIR/<build>/ (scripts/wasm-build.sh: cargo, wasm-bindgen --target web,
# wasm-opt) and copies the loader (js/index.js, which picks one at load) to OUT_DIR/index.js:
#   simd128          SIMD128 (.cargo/config.toml's flags)
#   simd128-relaxed  + relaxed SIMD (fused multiply-add)
#   threads          + atomics, bulk memory, mutable globals, shared memory; std rebuilt for
#                    them (build-std, on the pinned nightly $WASM_THREADS_TC from setup.sh);
#                    the `threads` feature (rayon's pool on Web Workers,
#                    src/backends/cpu/threads.rs)
#   threads-relaxed  both
# Without a threaded toolchain (setup could not install it, e.g. the Debian route) the
# threaded builds are skipped with a note, and the loader falls back to the others.
# WEBTENSOR_BUILDS="simd128 threads" builds only those. Prints each build's gzipped size.
# --profiling: the release build with the wasm's function names kept, for perf profiles.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
# shellcheck source=/dev/null
source scripts/.env.sh
OUT=${1:?usage: build-pkg.sh OUT_DIR [--dev|--release|--profiling] [cargo args...]}; shift
PROFILE=--release
case "${1:-}" in --dev | --release | --profiling) PROFILE=$1; shift ;; esac
say() { printf '[build-pkg] %s\n' "$*" >&2; }
mkdir -p "$OUT"
build() {  # build NAME RELAXED THREADED
  local name=$1 relaxed=$2 threaded=$3 t0; t0=$(date +%s); shift 3
  if [ -n "${WEBTENSOR_BUILDS:-}" ] && [[ " $WEBTENSOR_BUILDS " != *" $name "* ]]; then return; fi
  rm -rf "${OUT:?}/$name"
  if [ "$threaded" = 1 ]; then
    if [ -z "${WASM_THREADS_TC:-}" ]; then
      say "SKIPPED $name: no threaded toolchain (scripts/setup.sh could not install one); the loader falls back"
      # A stand-in, so bundlers still find the paths builds.js names: importing it throws, and
      # the loader passes over the build with that reason.
      mkdir -p "$OUT/$name"
      echo "throw new Error('the $name build is not in this package (built without the threaded toolchain)');" \
        > "$OUT/$name/webtensor.js"
      : > "$OUT/$name/webtensor_bg.wasm"
      return
    fi
    RUSTUP_TOOLCHAIN=$WASM_THREADS_TC CARGO_TARGET_DIR="$ROOT/target/wasm-$name" \
      RUSTFLAGS="$WASM_THREADS_RUSTFLAGS${relaxed:+ -C target-feature=$relaxed}" \
      bash scripts/wasm-build.sh "$OUT/$name" web "$PROFILE" "$@" --features threads \
      -Z build-std=panic_abort,std >&2
  else
    CARGO_TARGET_DIR="$ROOT/target/wasm-$name" RUSTFLAGS="-C target-feature=+simd128${relaxed:+,$relaxed}" \
      wasm bash scripts/wasm-build.sh "$OUT/$name" web "$PROFILE" "$@" >&2
  fi
  # Release builds keep every function body within JavaScriptCore's optimizing limit
  # (scripts/wasm-bodies.mjs; scripts/wasm-build.sh's wasm-opt flags): over it, WebKit runs
  # it 2x slower.
  if [ "$PROFILE" != --dev ]; then node scripts/wasm-bodies.mjs "$OUT/$name/webtensor_bg.wasm" >&2; fi
  local gz; gz=$(gzip -9 -c "$OUT/$name/webtensor_bg.wasm" | wc -c)
  say "$name: $(stat -c %s "$OUT/$name/webtensor_bg.wasm") bytes wasm, $gz gzipped, $(( $(date +%s) - t0 ))s"
}
# The builds run WEBTENSOR_PKG_JOBS at a time (default: 2 where the machine has 2 cores or
# more). Each has its own target dir, and most of a release build is the crate's one codegen
# unit and its LTO, on one core: on a 2-core machine (AMD EPYC) two at once took the four
# release builds 529 s against 656 s one at a time. With more than one at a time each build's
# output goes to a log, printed when it ends.
JOBS=${WEBTENSOR_PKG_JOBS:-$(( $(nproc) >= 2 ? 2 : 1 ))}
LOGS=$(mktemp -d); trap 'rm -rf "$LOGS"' EXIT
pids=(); names=(); failed=()
reap() {  # waits for the oldest running build and prints its log
  local st=0; wait "${pids[0]}" || st=$?
  cat "$LOGS/${names[0]}.log" >&2
  if [ "$st" -ne 0 ]; then failed+=("${names[0]}"); fi
  pids=("${pids[@]:1}"); names=("${names[@]:1}")
}
for spec in simd128::0 simd128-relaxed:+relaxed-simd:0 threads::1 threads-relaxed:+relaxed-simd:1; do
  IFS=: read -r name relaxed threaded <<<"$spec"
  if [ "$JOBS" -le 1 ]; then build "$name" "$relaxed" "$threaded" "$@"; continue; fi
  (build "$name" "$relaxed" "$threaded" "$@") >"$LOGS/$name.log" 2>&1 &
  pids+=($!); names+=("$name")
  if [ ${#pids[@]} -ge "$JOBS" ]; then reap; fi
done
while [ ${#pids[@]} -gt 0 ]; do reap; done
if [ ${#failed[@]} -gt 0 ]; then say "FAILED: ${failed[*]}"; exit 1; fi
# The package's own files: the entry, the in-thread engine loader, the builds' paths, the
# engine's worker and its proxy, the pool worker, the model cache, types, package.json and
# README (thread_pool.js is a wasm-bindgen snippet: each build has its copy).
cp js/index.js js/check.js js/engine.js js/builds.js js/worker.js js/pool_worker.js js/proxy.js js/cache.js js/errors.js js/index.d.ts js/package.json \
  js/README.md "$OUT/"
