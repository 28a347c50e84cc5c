#!/usr/bin/env bash
# scripts/wasm-build.sh OUT_DIR web|nodejs [--dev|--release|--profiling] [cargo args...]
# One wasm build of the crate, the three steps wasm-pack ran (we dropped wasm-pack: compiling
# it took 237 s of a fresh machine's set-up, and these steps are all it did for us):
#   1. cargo build --lib --target wasm32-unknown-unknown (CARGO_TARGET_DIR, RUSTFLAGS and
#      RUSTUP_TOOLCHAIN come from the caller, as scripts/build-pkg.sh sets them per build);
#   2. wasm-bindgen (the CLI pinned to Cargo.lock by scripts/setup.sh) → OUT_DIR/webtensor.js,
#      webtensor_bg.wasm, the .d.ts files and snippets/; --debug JS glue for --dev;
#   3. wasm-opt (npm binaryen's, on PATH from scripts/.env.sh; Debian's 108 breaks
#      wasm-bindgen's output) with WASM_OPT_FLAGS below, for --release and --profiling.
set -euo pipefail
OUT=${1:?usage: wasm-build.sh OUT_DIR web|nodejs [--dev|--release|--profiling] [cargo args...]}
JS_TARGET=${2:?usage: wasm-build.sh OUT_DIR web|nodejs [--dev|--release|--profiling] [cargo args...]}
shift 2
PROFILE=--release
case "${1:-}" in --dev | --release | --profiling) PROFILE=$1; shift ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# -ocimfs 2000: a function with one caller is inlined only up to that size (by default always):
# inlining every int8 kernel into the thread's closure made it a 111 KB body, and
# JavaScriptCore never optimizes a body over 100,000 bytes (maximumOMGCandidateCost), so
# WebKit ran the int8 GEMM in its baseline tier (MiniLM Q8_0 2.2x slower). Largest body now
# 57 KB; scripts/build-pkg.sh fails a release build with a body over the limit
# (scripts/wasm-bodies.mjs). --profiling adds -g: the same code with its function names kept,
# so `perf` of a page (scripts/perf-wasm.sh) names the functions.
WASM_OPT_FLAGS=(-O3 -ocimfs 2000 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-reference-types --enable-mutable-globals --enable-multivalue
  --enable-threads --enable-relaxed-simd)

cargo_profile=(--release); dir=release; bindgen_flags=()
case "$PROFILE" in
  --dev) cargo_profile=(); dir=debug; bindgen_flags=(--debug) ;;
  --profiling) WASM_OPT_FLAGS=(-g "${WASM_OPT_FLAGS[@]}") ;;
esac
# (cargo runs in the crate's directory, for its .cargo/config.toml: a relative target dir is
# made absolute first, so the wasm is looked for where cargo put it)
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  mkdir -p "$CARGO_TARGET_DIR"; CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd); export CARGO_TARGET_DIR
fi
(cd "$ROOT" && cargo build --lib --target wasm32-unknown-unknown "${cargo_profile[@]}" "$@")
wasm="${CARGO_TARGET_DIR:-$ROOT/target}/wasm32-unknown-unknown/$dir/webtensor.wasm"
rm -rf "$OUT"; mkdir -p "$OUT"
wasm-bindgen "$wasm" --out-dir "$OUT" --typescript --target "$JS_TARGET" "${bindgen_flags[@]}"
if [ "$PROFILE" != --dev ]; then
  wasm-opt "$OUT/webtensor_bg.wasm" -o "$OUT/webtensor_bg.opt.wasm" "${WASM_OPT_FLAGS[@]}"
  mv "$OUT/webtensor_bg.opt.wasm" "$OUT/webtensor_bg.wasm"
fi
