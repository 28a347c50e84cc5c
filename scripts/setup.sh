#!/usr/bin/env bash
# scripts/setup.sh -- installs everything the README's two commands need, idempotently:
#   - the wasm32 target (rustup, with a timeout; falling back to Debian's rustc-web route),
#     and a pinned dated nightly with rust-src for the threaded builds (build-std; skipped
#     with a warning when it cannot be installed),
#     wasm-bindgen-cli matching Cargo.lock, a wasm-opt that works (npm binaryen),
#     chromium + chromium-driver, wabt (scripts/setup-wasm.sh does these, cached in
#     ~/.cache/wasm-toolchain);
#   - mesa-vulkan-drivers (lavapipe: native wgpu without a GPU);
#   - the other browser engines the wasm tests run in: firefox-esr with geckodriver (crates.io,
#     pinned), WebKitGTK's WebKitWebDriver + MiniBrowser (webkit2gtk-driver) and xvfb;
#   - rustfmt + clippy for the host toolchain.
# Fast when nothing is missing. Writes scripts/.env.sh for the other scripts to source.
# Knobs: WASM_SETUP_ROUTE=auto|rustup|debian, WASM_TOOLCHAIN_CACHE, WASM_TOOLCHAIN_ALIAS,
# WASM_SETUP_LINK_BIN (see scripts/setup-wasm.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '[setup] %s\n' "$*" >&2; }

BINDGEN=$(awk '$0=="name = \"wasm-bindgen\""{getline; gsub(/version = |"/,""); print; exit}' "$ROOT/Cargo.lock")
[ -n "$BINDGEN" ] || { say "cannot find wasm-bindgen in Cargo.lock"; exit 1; }

if ! rustup component list --installed 2>/dev/null | grep -q '^clippy'; then
  say "rustup component add clippy rustfmt"
  timeout 120 rustup component add clippy rustfmt >&2 || say "WARNING: could not add clippy/rustfmt"
fi

CACHE="${WASM_TOOLCHAIN_CACHE:-$HOME/.cache/wasm-toolchain}"

# geckodriver (Firefox's WebDriver) from crates.io, pinned; about 3 min to compile once. In its
# own root, not tools/bin (linked into ~/.cargo/bin): on PATH, the test runner would take it
# over chromedriver whenever no driver variable is set. It compiles in the background beside
# setup-wasm.sh, whose apt and rustup steps mostly wait on downloads.
GECKODRIVER_VERSION=0.37.1
# (its --version panics on a closed pipe: read it whole; the first line is "geckodriver X.Y.Z")
gecko_v=$("$CACHE/geckodriver/bin/geckodriver" --version 2>/dev/null || true)
read -r _ gecko_v _ <<<"$gecko_v"
gecko_pid=""
if [ "$gecko_v" != "$GECKODRIVER_VERSION" ]; then
  say "cargo install geckodriver@$GECKODRIVER_VERSION in the background (compiles natively; takes minutes)"
  mkdir -p "$CACHE/logs"
  ( cd "$CACHE" && exec env -u CARGO_TARGET_DIR -u RUSTFLAGS cargo install geckodriver \
      --version "$GECKODRIVER_VERSION" --locked --force --root "$CACHE/geckodriver" ) \
    >"$CACHE/logs/install-geckodriver.log" 2>&1 &
  gecko_pid=$!
  # (if setup-wasm.sh fails first, the install does not outlive this script: the pid is cargo's)
  trap '[ -z "$gecko_pid" ] || kill "$gecko_pid" 2>/dev/null || true' EXIT
fi

# firefox-esr, webkit2gtk-driver, xvfb (+ xauth for xvfb-run): the Firefox and WebKit test steps.
WASM_BINDGEN_VERSION="$BINDGEN" \
  WASM_SETUP_EXTRA_APT="wabt mesa-vulkan-drivers firefox-esr webkit2gtk-driver xvfb xauth" \
  WASM_SETUP_LINK_BIN="${WASM_SETUP_LINK_BIN:-1}" bash "$ROOT/scripts/setup-wasm.sh"

if [ -n "$gecko_pid" ]; then
  say "waiting for geckodriver's cargo install"
  st=0; wait "$gecko_pid" || st=$?; gecko_pid=""
  if [ "$st" -ne 0 ]; then
    tail -30 "$CACHE/logs/install-geckodriver.log" >&2; say "cargo install geckodriver failed"; exit 1
  fi
fi
cat >"$ROOT/scripts/.env.sh" <<ENV
# written by scripts/setup.sh: the wasm tools and browser test settings
export PATH="$CACHE/tools/bin:\$PATH"
# the toolchain that has the wasm32 target (rustup stable, or Debian rustc-web via the fallback)
export WASM_TC=${WASM_TOOLCHAIN_ALIAS:-wasm}
# the toolchain of the threaded builds (build-std); empty when setup could not install it
export WASM_THREADS_TC=$(cat "$CACHE/threads-toolchain" 2>/dev/null || true)
# and their flags (with -Z build-std=panic_abort,std): shared memory needs a maximum, 4 GiB
# as the single-thread builds have
export WASM_THREADS_RUSTFLAGS="-C target-feature=+simd128,+atomics,+bulk-memory,+mutable-globals -C link-arg=--max-memory=4294967296"
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export CHROMEDRIVER=/usr/bin/chromedriver
# the other engines' drivers (the runner takes GECKODRIVER, then SAFARIDRIVER, then CHROMEDRIVER:
# scripts/test.sh sets one at a time)
export WEBTENSOR_GECKODRIVER="$CACHE/geckodriver/bin/geckodriver"
export WEBTENSOR_WEBKITDRIVER=/usr/bin/WebKitWebDriver
# (for the whole run: tests/web_browser.rs forces every WebGPU matmul kernel over the K-quants
# too, 9 min on SwiftShader with the 2 cores shared)
export WASM_BINDGEN_TEST_TIMEOUT=\${WASM_BINDGEN_TEST_TIMEOUT:-900}
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="$ROOT/webdriver.json"
# wasm: runs "\$@" for wasm32 with +simd128 kept even when the caller set RUSTFLAGS (which
# replaces .cargo/config.toml's flags), on the toolchain that has the wasm32 target.
wasm() {
  if [ -n "\${RUSTFLAGS:-}" ] && [[ "\$RUSTFLAGS" != *simd128* ]]; then
    RUSTFLAGS="\$RUSTFLAGS -C target-feature=+simd128" RUSTUP_TOOLCHAIN=\$WASM_TC "\$@"
  else
    RUSTUP_TOOLCHAIN=\$WASM_TC "\$@"
  fi
}
export WGPU_BACKEND=\${WGPU_BACKEND:-vulkan}
# Mesa's Vulkan loader wants one (it only warns without).
export XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-\$(id -u)}
mkdir -p -m 700 "\$XDG_RUNTIME_DIR"
ENV
say "wrote scripts/.env.sh"
