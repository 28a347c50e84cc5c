#!/usr/bin/env bash
# scripts/test.sh -- the whole test run, from a fresh machine; stops at the first failure.
#   setup → fmt → clippy (native, wasm32) → native tests (CPU; WebGPU on lavapipe) →
#   model files (MiniLM GGUFs, tokenizer vectors) → fuzz targets (a minute each) →
#   wasm tests in Node → wasm tests in
#   headless Chromium (WebGPU on SwiftShader; also the unit tests on the relaxed-SIMD build),
#   WebKitGTK's MiniBrowser under Xvfb (no WebGPU), single-thread; Chromium threaded
#   (2 threads) → headless Firefox ESR (WebGPU on lavapipe) single-thread and threaded, in the
#   background beside the fuzz targets and the package build →
#   pkg/ built (two builds at a time), each build's gzipped size against a ceiling, and its JS surface checked (scripts/check-js-surface.mjs: the bindings'
#   d.ts against the worker's calls, the proxy and index.d.ts) → example apps (the package
#   packed with npm pack, installed into a webpack 5, a Vite and a plain-ESM app, each
#   built) → end-to-end page tests (pkg/: the loader and its four builds,
#   the demo's webpack bundle, the three apps, the model served, driven by playwright-core;
#   the threaded builds cross-origin isolated, and each fallback; the engine in its worker;
#   the WebGPU device lost mid-run, on pkg/ itself). Without the threaded toolchain (setup
#   says why) the threaded steps say SKIPPED and the single-thread ones still run. The soak
#   test (scripts/soak.sh) is not part of this run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
T0=$(date +%s)
# A fresh clone gains nothing from incremental caches (about 1 GiB under target/debug).
export CARGO_INCREMENTAL=0
# The run writes about 5 GiB (target/, node_modules, toolchains); a full disk shows up as a
# linker bus error far into it, so say so up front.
read -r free_kib mount < <(df -Pk . | awk 'NR==2 {print $4, $6}')
if [ "${free_kib:-0}" -lt $((10 * 1024 * 1024)) ]; then
  echo "WARNING: only $((free_kib / 1024)) MiB free on $mount; this run needs about 10 GiB" >&2
fi
STEPS=()
step() {  # step NAME CMD...
  local name=$1; shift
  local t; t=$(date +%s)
  printf '\n==> %s\n' "$name"
  "$@"
  STEPS+=("$(printf '%-44s %5ss' "$name" $(( $(date +%s) - t )))")
}

# bg_steps FUNCTION runs FUNCTION's steps in a background shell (output to a log; stops at
# its first failure) while the steps after it run; join_bg waits for it, prints its output and
# summary lines, and stops the run if it failed. One at a time.
BG_PID=
bg_steps() {
  BG_NAME=$1 BG_LOG=$(mktemp) BG_SUMMARY=$(mktemp)
  printf '\n==> %s: in the background (its output comes after the steps it runs beside)\n' "$1"
  (STEPS=(); "$1"; printf '%s\n' "${STEPS[@]}" >"$BG_SUMMARY") >"$BG_LOG" 2>&1 &
  BG_PID=$!
}
join_bg() {
  local st=0 line; wait "$BG_PID" || st=$?
  BG_PID=
  printf '\n==> %s (ran in the background): its output\n' "$BG_NAME"
  cat "$BG_LOG"
  while IFS= read -r line; do STEPS+=("$line (background)"); done <"$BG_SUMMARY"
  rm -f "$BG_LOG" "$BG_SUMMARY"
  if [ "$st" -ne 0 ]; then echo "FAILED: $BG_NAME (exit $st)"; exit "$st"; fi
}
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null || true; }
trap 'if [ -n "$BG_PID" ]; then kill_tree "$BG_PID"; fi' EXIT

step "setup (scripts/setup.sh)" bash scripts/setup.sh
# shellcheck source=/dev/null
source scripts/.env.sh

step "cargo fmt --check" cargo fmt --all -- --check
step "clippy (native)" cargo clippy --all-targets -- -D warnings
wasm_clippy() {
  if wasm cargo clippy --version >/dev/null 2>&1; then
    wasm cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
  else
    echo "WARNING: the wasm toolchain ($WASM_TC) has no clippy (Debian route): cargo check instead"
    wasm cargo check --target wasm32-unknown-unknown --all-targets
  fi
}
step "clippy (wasm32)" wasm_clippy
# The threaded build: std rebuilt with atomics (build-std) on the pinned nightly.
threaded() {  # threaded CARGO_ARGS...: cargo for the threaded build, or SKIPPED
  if [ -z "${WASM_THREADS_TC:-}" ]; then
    echo "SKIPPED: no threaded toolchain (scripts/setup.sh could not install it)"; return
  fi
  CARGO_TARGET_DIR=target/wasm-threads-test RUSTUP_TOOLCHAIN=$WASM_THREADS_TC RUSTFLAGS="$WASM_THREADS_RUSTFLAGS" \
    cargo "$@"
}
# --lib: the threaded-only code is in the library; the nightly's newer lints would otherwise
# fire first on shared test code that stable clippy (above) already holds to its lints.
step "clippy (wasm32, threaded build)" threaded clippy --target wasm32-unknown-unknown --lib \
  --features threads -Z build-std=panic_abort,std -- -D warnings
model_files() {  # the real model, tokenizer vectors and numpy for the reference check
  bash scripts/fetch-model.sh
  bash scripts/fetch-test-vectors.sh
  python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
  # K-quant dequantization reference (gguf.quants), generated rather than committed.
  python3 -c 'import gguf' 2>/dev/null || python3 -m pip install --quiet gguf
  python3 scripts/kquant-vectors.py
  # Tiny random-weight llama/qwen2/qwen3 decoders (numpy + gguf, deterministic) that
  # tests/reference/decoder/*.json hold llama.cpp's outputs for.
  python3 scripts/decoder-models.py
}
step "model files (fetch-model, test vectors, numpy)" model_files
# setup.sh installs lavapipe, so native WebGPU must be there: the op suite and the WebGPU
# device tests fail instead of skipping without an adapter (WEBTENSOR_REQUIRE_WEBGPU=0 to relax).
step "native tests (cargo test)" env WEBTENSOR_REQUIRE_WEBGPU=${WEBTENSOR_REQUIRE_WEBGPU:-1} \
  WEBTENSOR_REQUIRE_VECTORS=1 cargo test
# --lib: the unit tests marked wasm_bindgen_test (SIMD128 kernels, run queue) run under wasm too.
step "wasm tests in Node" wasm cargo test --target wasm32-unknown-unknown --lib --test web_node
step "wasm tests in headless Chromium" wasm cargo test --target wasm32-unknown-unknown --test web_browser
# The unit tests again on a relaxed-SIMD build (what the loader picks in Chromium and Firefox):
# its kernels (the 8-bit dots, the int8 panels) differ from the simd128 build's. In Chromium,
# since Node 20's V8 has relaxed SIMD only behind a flag.
relaxed_unit() {
  WASM_BINDGEN_USE_BROWSER=1 CARGO_TARGET_DIR=target/wasm-relaxed-test \
    RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" wasm cargo test --target wasm32-unknown-unknown --lib
}
step "wasm unit tests in headless Chromium, relaxed SIMD build" relaxed_unit
# The same single-thread build in the two other engines (tests/web_browser.rs requires WebGPU
# in Firefox too, and knows WebKitGTK has none). The runner picks GECKODRIVER, SAFARIDRIVER
# and CHROMEDRIVER in that order: set one only. WebKitWebDriver speaks the runner's Safari
# dialect; with no capabilities it starts MiniBrowser --automation, which needs an X display.
# In Firefox all but every_matmul_kernel_passes (about 270 s there; the same WGSL kernels run
# forced in Chromium, both builds, and natively through wgpu on lavapipe, which is what Firefox's
# WebGPU is: tests/webgpu.rs): about 3 minutes.
in_firefox() (  # in_firefox CMD...: a subshell, so the driver variables stay in it
  unset CHROMEDRIVER SAFARIDRIVER; export GECKODRIVER="$WEBTENSOR_GECKODRIVER"
  "$@"
)
in_webkit() {
  # (xvfb-run runs a program, not the wasm function: a shell that sources .env.sh again)
  SAFARIDRIVER="$WEBTENSOR_WEBKITDRIVER" xvfb-run -a -s "-screen 0 1280x1024x24" bash -c \
    'source scripts/.env.sh && unset CHROMEDRIVER GECKODRIVER &&
     wasm cargo test --target wasm32-unknown-unknown --test web_browser'
}
step "wasm tests in WebKit (MiniBrowser under Xvfb)" in_webkit
# The same browser tests on the threaded build with a 2-thread pool on the page's main thread
# (wasm-bindgen-test-runner serves the page cross-origin isolated), all but
# every_matmul_kernel_passes: it forces each WGSL matmul kernel in turn, and the kernels do not
# change with the wasm build (the single-thread Chromium step runs it on the same adapter).
# The op suite here still runs WebGPU from shared memory (the threaded build's uploads and
# readbacks). It took 187 of this step's 292 s.
step "wasm tests in headless Chromium, threaded (2 threads)" threaded test --target wasm32-unknown-unknown \
  --features threads -Z build-std=panic_abort,std --test web_browser -- --skip every_matmul_kernel_passes
firefox_steps() {
  step "wasm tests in headless Firefox" in_firefox \
    wasm cargo test --target wasm32-unknown-unknown --test web_browser -- --skip every_matmul_kernel_passes
  # The threaded build in Firefox too (shared memory and the worker pool there: the pool test
  # checks its 2 threads ran), all but the op suite and every_matmul_kernel_passes, whose
  # WebGPU halves take minutes there (each Firefox WebGPU readback takes about 100 ms) and
  # which the single-thread Firefox step and Chromium's threaded one run: about 40 s.
  step "wasm tests in headless Firefox, threaded (2 threads)" in_firefox \
    threaded test --target wasm32-unknown-unknown --features threads -Z build-std=panic_abort,std \
    --test web_browser -- --skip every_matmul_kernel_passes --skip op_suite_on_every_device
}
# Firefox's two steps mostly wait (its WebGPU answers on a 100 ms timer: the single-thread
# step used 190 s of CPU over 278 s of wall time on this 2-core machine), so they run in the
# background while the fuzz targets and the package build, which keep both cores busy, run
# in front; their output is printed after the package build.
bg_steps firefox_steps
step "fuzz, 60 s per target (scripts/fuzz.sh)" bash scripts/fuzz.sh 60
step "build package + page (scripts/build-web.sh)" bash scripts/build-web.sh --release
join_bg
# Each wasm build gzipped against the bundle's ceiling (scripts/check-bundle.sh).
step "bundle size: each build gzipped ≤ its ceiling (scripts/check-bundle.sh)" bash scripts/check-bundle.sh pkg
# One JS surface: the built bindings (pkg/<build>/webtensor.d.ts) against js/worker.js's OPS,
# js/proxy.js and js/index.d.ts; then its self-test shows that it catches differences.
js_surface() {
  node scripts/check-js-surface.mjs
  node scripts/check-js-surface.mjs --self-test
}
step "JS surface: bindings = worker = proxy = types (scripts/check-js-surface.mjs)" js_surface
step "example apps: npm pack, webpack, Vite, plain ESM (scripts/build-apps.sh)" bash scripts/build-apps.sh
E2E_REQUIRE_THREADS=$([ -n "${WASM_THREADS_TC:-}" ] && echo 1 || echo 0)
# (tests/e2e/engines.test.mjs: MiniLM in Chromium, Firefox and WebKitGTK over WebDriver,
# about 2 min; it writes the README's browser table to target/e2e/engines.md, printed and checked
# against the README's below.)
step "end-to-end page tests" env E2E_REQUIRE_WEBGPU=${E2E_REQUIRE_WEBGPU:-1} \
  E2E_REQUIRE_THREADS="$E2E_REQUIRE_THREADS" E2E_REQUIRE_ENGINES=1 node --test tests/e2e/

if [ -f target/e2e/engines.md ]; then
  printf '\n---------------------------------------------------------------- browser table\n'
  cat target/e2e/engines.md
fi
# The README's browser support table is this run's (--write there when a change is meant).
step "README's browser table = this run's (scripts/readme-engines.mjs)" node scripts/readme-engines.mjs
printf '\n---------------------------------------------------------------- test summary\n'
printf '%s\n' "${STEPS[@]}"
echo "total: $(( $(date +%s) - T0 ))s"
