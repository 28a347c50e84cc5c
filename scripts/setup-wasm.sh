#!/usr/bin/env bash
# Adapted from the team recipe (shared/toolchain/setup-wasm.sh); scripts/setup.sh calls it.
# setup-wasm.sh -- idempotent setup of a Rust -> wasm32-unknown-unknown toolchain on Debian 12
# (rustup already present), plus wasm-bindgen-cli (pinned), wasm-opt (npm binaryen), headless
# Chromium + chromedriver, and wabt (wasm-objdump, to check for SIMD opcodes). (No wasm-pack:
# scripts/wasm-build.sh runs cargo, wasm-bindgen and wasm-opt itself.)
#
# Route for the wasm32 target (WASM_SETUP_ROUTE):
#   auto   (default) `rustup target add wasm32-unknown-unknown` with a timeout; if that fails
#          or the result cannot link a test crate, fall back to the Debian route.
#   rustup only the rustup route.
#   debian only the Debian route: rustc-web/cargo-web/rust-web-src (bookworm-security) are
#          unpacked with dpkg-deb -x into the cache (nothing of the system toolchain is touched),
#          linked as a rustup toolchain, and the wasm32 std is built once with -Zbuild-std
#          from Debian's vendored std sources (offline) and installed into that toolchain's
#          sysroot, so plain `cargo build --target wasm32-unknown-unknown` works.
# Whatever the route, a rustup toolchain link named $WASM_TOOLCHAIN_ALIAS (default "wasm")
# points at the working toolchain: use `cargo +wasm ...` or `export RUSTUP_TOOLCHAIN=wasm`.
#
# Environment knobs (all optional):
#   WASM_TOOLCHAIN_CACHE    cache dir (default ~/.cache/wasm-toolchain)
#   WASM_SETUP_ROUTE        auto | rustup | debian            (default auto)
#   WASM_RUSTUP_TIMEOUT     seconds allowed for `rustup target add` (default 60)
#   WASM_RUSTUP_TOOLCHAIN   rustup toolchain that gets the target in the rustup route (default stable)
#   WASM_TOOLS_TOOLCHAIN    rustup toolchain that compiles wasm-bindgen-cli (default stable)
#   WASM_TOOLCHAIN_ALIAS    name of the rustup link to the working toolchain (default wasm)
#   WASM_DEB_RUST_VERSION   Debian rustc-web version to use (default: one already in the cache,
#                           else apt's candidate)
#   WASM_BINDGEN_VERSION    wasm-bindgen-cli version (default: the wasm-bindgen version in
#                           $WASM_SETUP_PROJECT_DIR/Cargo.lock, else 0.2.130)
#   WASM_SETUP_PROJECT_DIR  optional project dir: its Cargo.lock pins wasm-bindgen-cli, and it
#                           gets `rustup override set $WASM_TOOLCHAIN_ALIAS`
#   WASM_SETUP_BROWSER      1 = install chromium + chromium-driver (default), 0 = skip
#   WASM_SETUP_EXTRA_APT    extra Debian packages (default "wabt" for wasm-objdump/wasm2wat.
#                           Do NOT add Debian's binaryen: its wasm-opt 108 miscompiles
#                           current wasm-bindgen output (externref table))
#   WASM_OPT_VERSION        binaryen version from npm whose wasm-opt (JS/wasm build) is put on
#                           PATH for scripts/wasm-build.sh (default 132.0.0; "none" = skip)
#   WASM_SETUP_LINK_BIN     1 (default) = symlink the tools into ~/.cargo/bin so that cargo
#                           finds them without sourcing env.sh; 0 = don't
#   WASM_SETUP_KEEP_FULL_SRC 1 = keep all of rust-web-src (default: keep only library/)
#   WASM_THREADS_NIGHTLY    the dated nightly (with rust-src, clippy and the wasm32 target)
#                           that builds the threaded wasm builds with -Zbuild-std (default
#                           scripts/nightly.env's pin; "none" = skip). Whatever the route; if it
#                           cannot be installed, setup says so, its name in
#                           $CACHE/threads-toolchain is empty, and the threaded builds and
#                           their tests are skipped with a note.
#   WASM_THREADS_TIMEOUT    seconds allowed for installing it (default 300)
set -euo pipefail

CACHE="${WASM_TOOLCHAIN_CACHE:-$HOME/.cache/wasm-toolchain}"
ROUTE="${WASM_SETUP_ROUTE:-auto}"
RUSTUP_TIMEOUT="${WASM_RUSTUP_TIMEOUT:-60}"
HOST_TC="${WASM_RUSTUP_TOOLCHAIN:-stable}"
TOOLS_TC="${WASM_TOOLS_TOOLCHAIN:-stable}"
ALIAS="${WASM_TOOLCHAIN_ALIAS:-wasm}"
WASM_OPT_VERSION="${WASM_OPT_VERSION:-132.0.0}"
LINK_BIN="${WASM_SETUP_LINK_BIN:-1}"
PROJECT_DIR="${WASM_SETUP_PROJECT_DIR:-}"
BROWSER="${WASM_SETUP_BROWSER:-1}"
EXTRA_APT="${WASM_SETUP_EXTRA_APT-wabt}"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
RUSTUP_DIR="${RUSTUP_HOME:-$HOME/.rustup}"
TARGET=wasm32-unknown-unknown
HOST_TRIPLE=x86_64-unknown-linux-gnu
export DEBIAN_FRONTEND=noninteractive
# Flags from the caller's environment must not leak into the std build / check builds.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS RUSTC_WRAPPER CARGO_BUILD_TARGET \
      CARGO_TARGET_DIR RUSTUP_TOOLCHAIN || true

mkdir -p "$CACHE/logs" "$CACHE/tools/bin"
LOG="$CACHE/logs"

if [ -z "${WASM_BINDGEN_VERSION:-}" ] && [ -n "$PROJECT_DIR" ] && [ -f "$PROJECT_DIR/Cargo.lock" ]; then
  WASM_BINDGEN_VERSION=$(awk '$0=="name = \"wasm-bindgen\""{getline; gsub(/version = |"/,""); print; exit}' "$PROJECT_DIR/Cargo.lock")
fi
WASM_BINDGEN_VERSION="${WASM_BINDGEN_VERSION:-0.2.130}"

# ---------------------------------------------------------------- helpers
say() { printf '[setup-wasm] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
TIMINGS=()
STEP_T=0; STEP_NAME=""
STEP_IDX=0
step() { STEP_NAME=$1; STEP_T=$(now); STEP_IDX=${#TIMINGS[@]}; say "==> $1"; }
done_step() {  # the step's line goes before any sub-step lines it recorded
  local dt line; dt=$(awk -v a="$STEP_T" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
  line=$(printf '%-44s %8ss  %s' "$STEP_NAME" "$dt" "${1:-}")
  TIMINGS=("${TIMINGS[@]:0:$STEP_IDX}" "$line" "${TIMINGS[@]:$STEP_IDX}")
}
SUB_T=0
sub_start() { SUB_T=$(now); }
sub_done() {  # record a sub-step of the current step
  local dt; dt=$(awk -v a="$SUB_T" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
  TIMINGS+=("$(printf '  - %-40s %8ss' "$1" "$dt")"); SUB_T=$(now)
}
T_START=$(now)

APT_UPDATED=0
apt_update() {
  [ "$APT_UPDATED" = 1 ] && return 0

  # DPkg::Lock::Timeout covers the dpkg lock only, not /var/lib/apt/lists/lock: retry on that.
  for _ in $(seq 1 90); do
    if apt-get -o DPkg::Lock::Timeout=900 -o Acquire::Retries=3 -qq update >"$LOG/apt-update.log" 2>&1; then
      APT_UPDATED=1; return 0
    fi
    if grep -q 'Could not get lock' "$LOG/apt-update.log"; then sleep 10; continue; fi
    cat "$LOG/apt-update.log" >&2; return 1
  done
  die "apt-get update: lock still held after 15 min"
}
pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
apt_install() {  # install only what is missing
  local missing=() p
  for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_update
  say "apt-get install ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends "${missing[@]}" \
    >"$LOG/apt-install.log" 2>&1 || { tail -20 "$LOG/apt-install.log" >&2; return 1; }
}

# A tiny cdylib that uses std, wasm-bindgen-free, with SIMD128: proves compile + link.
CHECK="$CACHE/check"
write_if_changed() {  # file <<content ; keeps mtimes (and cargo's cache) when nothing changed
  local tmp; tmp=$(mktemp); cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}
make_check_crate() {
  mkdir -p "$CHECK/src"
  write_if_changed "$CHECK/Cargo.toml" <<'EOF'
[package]
name = "wasmcheck"
version = "0.0.0"
edition = "2021"
publish = false
[lib]
crate-type = ["cdylib"]
[workspace]
EOF
  write_if_changed "$CHECK/src/lib.rs" <<'EOF'
use core::arch::wasm32::*;
#[no_mangle]
pub unsafe extern "C" fn fma4(a: *const f32, b: *const f32, c: *const f32, out: *mut f32) {
    let r = f32x4_add(
        f32x4_mul(v128_load(a as *const v128), v128_load(b as *const v128)),
        v128_load(c as *const v128),
    );
    v128_store(out as *mut v128, r);
}
#[no_mangle]
pub extern "C" fn uses_std(n: u32) -> u32 {
    let v: Vec<u32> = (0..n).collect();
    format!("{v:?}").len() as u32
}
EOF
}
check_toolchain() {  # $1 = rustup toolchain name; builds the check crate for wasm32 (+simd128)
  local tc=$1 extra=${2:-}
  make_check_crate
  # shellcheck disable=SC2086
  ( cd "$CHECK" && env RUSTFLAGS="-C target-feature=+simd128" $extra \
      cargo +"$tc" build --release --target "$TARGET" --target-dir "$CHECK/target-$tc" ) \
      >"$LOG/check-$tc.log" 2>&1 || { tail -30 "$LOG/check-$tc.log" >&2; return 1; }
  local wasm="$CHECK/target-$tc/$TARGET/release/wasmcheck.wasm"
  [ -s "$wasm" ] || return 1
  if command -v wasm-objdump >/dev/null; then
    # (not `| grep -q`: with pipefail, SIGPIPE in wasm-objdump would fail the pipe)
    [ "$(wasm-objdump -d "$wasm" | grep -c 'f32x4\.add')" -gt 0 ] || { say "check crate has no f32x4.add"; return 1; }
  fi
}

link_toolchain() {  # $1 name, $2 sysroot dir
  local cur; cur=$(readlink -f "$RUSTUP_DIR/toolchains/$1" 2>/dev/null || true)
  if [ "$cur" != "$(readlink -f "$2")" ]; then
    rustup toolchain link "$1" "$2" >/dev/null
  fi
}

# ---------------------------------------------------------------- route 1: rustup
rustup_route() {
  if rustup target list --installed --toolchain "$HOST_TC" 2>/dev/null | grep -qx "$TARGET"; then
    say "rustup: $TARGET already installed for $HOST_TC"
  else
    say "rustup target add $TARGET --toolchain $HOST_TC (timeout ${RUSTUP_TIMEOUT}s)"
    timeout "$RUSTUP_TIMEOUT" rustup target add "$TARGET" --toolchain "$HOST_TC" \
      >"$LOG/rustup-target-add.log" 2>&1 || { say "rustup target add failed/timed out"; return 1; }
  fi
  check_toolchain "$HOST_TC" || return 1
  WASM_TC="$HOST_TC"
}

# ---------------------------------------------------------------- route 2: Debian rustc-web
DEB_PKGS_BASE="rustc-web cargo-web libstd-rust-web-dev rust-web-src rust-web-llvm"
debian_route() {
  local V="${WASM_DEB_RUST_VERSION:-}" stamp prefix
  # 1. reuse a finished prefix from the cache when no version is asked for
  if [ -z "$V" ]; then
    stamp=$(ls -1d "$CACHE"/debian-rust/*/.complete 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$stamp" ] && V=$(cat "$stamp")
  fi
  if [ -z "$V" ]; then
    apt_update
    V=$(apt-cache policy rustc-web | awk '/Candidate:/{print $2}')
    [ -n "$V" ] && [ "$V" != "(none)" ] || die "no rustc-web in apt"
  fi
  local UP=${V%%+*}; UP=${UP#*:}           # 1.96.0
  local MM=${UP%.*}                        # 1.96
  local SAFE; SAFE=$(printf '%s' "$V" | tr '+~:' '___')
  prefix="$CACHE/debian-rust/$SAFE"
  DEB_TC="debian-web-$MM"
  local sys="$prefix/usr"

  if [ -f "$prefix/.complete" ]; then
    link_toolchain "$DEB_TC" "$sys"
    if rustc +"$DEB_TC" -V >/dev/null 2>&1 && check_toolchain "$DEB_TC"; then
      say "debian: cached toolchain $DEB_TC ($V) at $sys"
      WASM_TC="$DEB_TC"; return 0
    fi
    say "debian: cached prefix $prefix unusable, rebuilding it"
  fi
  {
    sub_start
    # 2. download the debs (cached)
    local debs="$CACHE/debs/$SAFE" p need=()
    mkdir -p "$debs"
    for p in $DEB_PKGS_BASE "libstd-rust-web-$MM"; do
      ls "$debs/${p}_"*.deb >/dev/null 2>&1 || need+=("$p=$V")
    done
    if [ ${#need[@]} -gt 0 ]; then
      apt_update
      say "apt-get download ${need[*]}"
      ( cd "$debs" && apt-get download "${need[@]}" ) >"$LOG/apt-download.log" 2>&1 \
        || { tail -20 "$LOG/apt-download.log" >&2; die "apt-get download failed"; }
    fi
    sub_done "apt-get update + download debs"
    # 3. system runtime libraries the unpacked binaries need (libLLVM, libgit2, ...) + lld
    local deps llvm
    deps=$(for p in rustc-web cargo-web "libstd-rust-web-$MM"; do dpkg-deb -f "$debs/${p}_"*.deb Depends; echo ,; done \
      | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' | grep -v '^$' \
      | grep -vE '^(rustc-web|cargo-web|libstd-rust-web-.*|rust-web-.*)$' | sed 's/^libc-dev$/libc6-dev/' | sort -u)
    llvm=$(dpkg-deb -f "$debs/rust-web-llvm_"*.deb Depends | grep -oE 'llvm-[0-9]+' | head -1 | cut -d- -f2)
    [ -n "$llvm" ] || die "cannot tell the LLVM version of rust-web-llvm"
    # shellcheck disable=SC2086
    apt_install $deps "lld-$llvm"
    sub_done "apt-get install runtime libs + lld-$llvm"
    # 4. unpack into a private prefix
    rm -rf "$prefix" "$prefix.tmp"; mkdir -p "$prefix.tmp"
    for p in $DEB_PKGS_BASE "libstd-rust-web-$MM"; do dpkg-deb -x "$debs/${p}_"*.deb "$prefix.tmp"; done
    if [ "${WASM_SETUP_KEEP_FULL_SRC:-0}" != 1 ]; then   # -Zbuild-std needs only library/
      rm -rf "$prefix.tmp/usr/src/rustc-$UP/src" "$prefix.tmp/usr/src/rustc-$UP/compiler"
    fi
    rm -rf "$prefix.tmp/usr/share/doc" "$prefix.tmp/usr/share/man" "$prefix.tmp/usr/share/lintian"
    # rustup puts <toolchain>/lib on LD_LIBRARY_PATH; Debian keeps librustc_driver in the multiarch dir
    ( cd "$prefix.tmp/usr/lib" && ln -sf x86_64-linux-gnu/librustc_driver-*.so . )
    # the wasm linker: rustc calls `rust-lld -flavor wasm`; point it at Debian's lld-NN
    mkdir -p "$prefix.tmp/usr/lib/rustlib/$HOST_TRIPLE/bin"
    ln -sfn "/usr/bin/lld-$llvm" "$prefix.tmp/usr/lib/rustlib/$HOST_TRIPLE/bin/rust-lld"
    ln -sfn "/usr/bin/lld-$llvm" "$prefix.tmp/usr/bin/rust-lld"
    mv "$prefix.tmp" "$prefix"
    link_toolchain "$DEB_TC" "$sys"
    rustc +"$DEB_TC" -vV >"$LOG/debian-rustc-vV.txt" 2>&1 || { cat "$LOG/debian-rustc-vV.txt" >&2; die "unpacked rustc does not run"; }
    sub_done "dpkg-deb -x + rustup toolchain link"

    # 5. build the wasm32 std once (offline, Debian's vendored std deps) and install it
    local sb="$CACHE/std-build" src="$sys/lib/rustlib/src/rust"
    rm -rf "$sb"; mkdir -p "$sb/src"
    printf '[package]\nname = "stdbuild"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[workspace]\n' >"$sb/Cargo.toml"
    echo '#![no_std]' >"$sb/src/lib.rs"
    say "building the $TARGET std with -Zbuild-std (a few minutes)"
    ( cd "$sb" && RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Cembed-bitcode=yes" \
        cargo +"$DEB_TC" build --release --target "$TARGET" --target-dir "$sb/target" \
        -Zbuild-std=std,panic_abort,panic_unwind,test,proc_macro \
        --config "source.crates-io.replace-with='debian-std-vendor'" \
        --config "source.debian-std-vendor.directory='$src/library/vendor'" ) \
        >"$LOG/std-build.log" 2>&1 || { tail -40 "$LOG/std-build.log" >&2; die "std build failed"; }
    local libdir="$sys/lib/rustlib/$TARGET/lib" deps_dir="$sb/target/$TARGET/release/deps"
    rm -rf "$libdir"; mkdir -p "$libdir"
    find "$deps_dir" -maxdepth 1 \( -name 'lib*.rlib' -o -name 'lib*.rmeta' \) ! -name 'libstdbuild-*' \
      -exec cp {} "$libdir/" \;
    [ -z "$(ls "$libdir" | sed 's/-[0-9a-f]*\.r[a-z]*$//' | sort | uniq -c | awk '$1!=2')" ] \
      || die "unexpected duplicate/missing std artifacts in $libdir"
    rm -rf "$sb/target"
    sub_done "build + install wasm32 std (-Zbuild-std)"
    # 6. verify: plain build (no build-std), then a fat-LTO build (needs the embedded bitcode)
    check_toolchain "$DEB_TC" || die "Debian toolchain cannot build for $TARGET"
    rm -rf "$CHECK/target-$DEB_TC"
    check_toolchain "$DEB_TC" "CARGO_PROFILE_RELEASE_LTO=true" || die "LTO build against the installed std failed"
    sub_done "check builds (plain + fat LTO)"
    echo "$V" >"$prefix/.complete"
  }
  WASM_TC="$DEB_TC"
}

# ---------------------------------------------------------------- main
command -v rustup >/dev/null || die "rustup not found"
WASM_TC=""
if [ -n "$EXTRA_APT" ]; then
  step "extra Debian packages ($EXTRA_APT)"
  # shellcheck disable=SC2086
  apt_install $EXTRA_APT; done_step
fi

case "$ROUTE" in
  auto|rustup)
    step "wasm32 target via rustup ($HOST_TC)"
    if rustup_route; then done_step "ok"; else
      done_step "FAILED"
      [ "$ROUTE" = rustup ] && die "rustup route failed"
      step "wasm32 target via Debian rustc-web (fallback)"; debian_route; done_step "ok"
    fi ;;
  debian)
    step "wasm32 target via Debian rustc-web"; debian_route; done_step "ok" ;;
  *) die "WASM_SETUP_ROUTE must be auto, rustup or debian" ;;
esac

step "rustup link '$ALIAS' -> $WASM_TC"
link_toolchain "$ALIAS" "$(rustc +"$WASM_TC" --print sysroot)"
if [ -n "$PROJECT_DIR" ]; then ( cd "$PROJECT_DIR" && rustup override set "$ALIAS" >/dev/null ); fi
done_step

# ---------------------------------------------------------------- threaded builds' toolchain
# std must be rebuilt with +atomics,+bulk-memory,+mutable-globals (build-std): a dated nightly
# with rust-src (stable's RUSTC_BOOTSTRAP would do too, but pinning a nightly keeps the
# unstable -Z flags it accepts fixed).
# shellcheck source=/dev/null
source "$(dirname "${BASH_SOURCE[0]}")/nightly.env"
THREADS_NIGHTLY="${WASM_THREADS_NIGHTLY:-$NIGHTLY_PIN}"
THREADS_TC=""
if [ "$THREADS_NIGHTLY" != none ]; then
  step "threaded builds: $THREADS_NIGHTLY with rust-src (build-std)"
  if rustup component list --installed --toolchain "$THREADS_NIGHTLY" 2>/dev/null | grep -q '^rust-src' &&
     rustup component list --installed --toolchain "$THREADS_NIGHTLY" 2>/dev/null | grep -q '^clippy' &&
     rustup target list --installed --toolchain "$THREADS_NIGHTLY" 2>/dev/null | grep -qx "$TARGET"; then
    THREADS_TC=$THREADS_NIGHTLY; done_step "already installed"
  elif timeout "${WASM_THREADS_TIMEOUT:-300}" rustup toolchain install "$THREADS_NIGHTLY" --profile minimal \
         -c rust-src -c clippy -t "$TARGET" >"$LOG/threads-toolchain.log" 2>&1; then
    THREADS_TC=$THREADS_NIGHTLY; done_step "ok"
  else
    say "WARNING: cannot install $THREADS_NIGHTLY (log: $LOG/threads-toolchain.log): the threaded" \
        "wasm builds and their tests will be skipped; the single-thread builds still build and run"
    done_step "SKIPPED"
  fi
else
  say "threaded builds: skipped (WASM_THREADS_NIGHTLY=none)"
fi
echo "$THREADS_TC" >"$CACHE/threads-toolchain"

install_tool() {  # crate version binary
  local crate=$1 ver=$2 bin=$3
  if [ -x "$CACHE/tools/bin/$bin" ] && "$CACHE/tools/bin/$bin" --version 2>/dev/null | grep -q " $ver\$"; then
    return 0
  fi
  say "cargo install $crate@$ver (compiles natively; takes minutes)"
  ( cd "$CACHE" && cargo +"$TOOLS_TC" install "$crate" --version "$ver" --locked --force --root "$CACHE/tools" ) \
      >"$LOG/install-$crate.log" 2>&1 \
  || { say "--locked failed (lockfile names a crate the registry lacks?); retrying without --locked"
       ( cd "$CACHE" && cargo +"$TOOLS_TC" install "$crate" --version "$ver" --force --root "$CACHE/tools" ) \
         >>"$LOG/install-$crate.log" 2>&1 || { tail -30 "$LOG/install-$crate.log" >&2; die "cargo install $crate failed"; }; }
}
step "wasm-bindgen-cli $WASM_BINDGEN_VERSION"
install_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen; done_step
if [ "$WASM_OPT_VERSION" != none ]; then
  step "wasm-opt (binaryen $WASM_OPT_VERSION from npm)"
  if ! "$CACHE/binaryen/node_modules/.bin/wasm-opt" --version 2>/dev/null | grep -q "version ${WASM_OPT_VERSION%%.*} "; then
    command -v npm >/dev/null || die "npm not found (needed for binaryen); set WASM_OPT_VERSION=none to skip"
    mkdir -p "$CACHE/binaryen"
    ( cd "$CACHE/binaryen" && npm install --prefix "$CACHE/binaryen" --no-audit --no-fund --no-save \
        "binaryen@$WASM_OPT_VERSION" ) >"$LOG/npm-binaryen.log" 2>&1 \
      || { tail -20 "$LOG/npm-binaryen.log" >&2; die "npm install binaryen failed"; }
  fi
  ln -sfn "$CACHE/binaryen/node_modules/binaryen/bin/wasm-opt" "$CACHE/tools/bin/wasm-opt"
  done_step
fi
# wasm-pack is no longer used (scripts/wasm-build.sh runs its steps): a copy an older set-up
# installed here goes, with its link.
if [ -e "$CACHE/tools/bin/wasm-pack" ]; then
  say "removing the unused wasm-pack of an older set-up"
  rm -f "$CACHE/tools/bin/wasm-pack"
fi
if [ -L "$CARGO_BIN/wasm-pack" ] && [ "$(readlink "$CARGO_BIN/wasm-pack")" = "$CACHE/tools/bin/wasm-pack" ]; then
  rm -f "$CARGO_BIN/wasm-pack"
fi
if [ "$LINK_BIN" = 1 ]; then
  mkdir -p "$CARGO_BIN"
  for b in "$CACHE"/tools/bin/*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    ln -sfn "$b" "$CARGO_BIN/$(basename "$b")"
  done
fi

if [ "$BROWSER" = 1 ]; then
  step "chromium + chromium-driver"
  apt_install chromium chromium-driver; done_step
fi

cat >"$CACHE/webdriver.json" <<'EOF'
{
  "goog:chromeOptions": {
    "args": [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-quic", "--no-first-run"
    ]
  }
}
EOF
cat >"$CACHE/env.sh" <<EOF
# source this: wasm toolchain from setup-wasm.sh
export PATH="$CACHE/tools/bin:\$PATH"
export RUSTUP_TOOLCHAIN="$ALIAS"
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export CHROMEDRIVER=/usr/bin/chromedriver
export WASM_BINDGEN_TEST_TIMEOUT=\${WASM_BINDGEN_TEST_TIMEOUT:-120}
# Chromium flags for root/no-network (the runner itself always adds headless, no-sandbox,
# disable-dev-shm-usage); a webdriver.json in the crate dir is used when this is unset.
export WASM_BINDGEN_TEST_WEBDRIVER_JSON=\${WASM_BINDGEN_TEST_WEBDRIVER_JSON:-$CACHE/webdriver.json}
EOF

T_TOTAL=$(awk -v a="$T_START" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
{
  echo "---------------------------------------------------------------- setup-wasm summary"
  printf '%s\n' "${TIMINGS[@]}"
  echo "total: ${T_TOTAL}s   cache: $CACHE ($(du -sh "$CACHE" 2>/dev/null | cut -f1))"
  echo "toolchain for wasm: $WASM_TC  (alias: +$ALIAS); threaded builds: ${THREADS_TC:-none}"
  echo "  $(rustc +"$ALIAS" -V)"
  echo "  $(cargo +"$ALIAS" -V)"
  echo "  $("$CACHE/tools/bin/wasm-bindgen" --version)"
  [ -x "$CACHE/tools/bin/wasm-opt" ] && echo "  $("$CACHE/tools/bin/wasm-opt" --version)"
  [ "$BROWSER" = 1 ] && echo "  $(chromium --version 2>/dev/null)   $(chromedriver --version | cut -d' ' -f1-2)"
  echo "  node $(node --version 2>/dev/null || echo missing)"
  echo "use:   source $CACHE/env.sh   (or: cargo +$ALIAS build --target $TARGET)"
  echo "tests: cargo +$ALIAS test --target $TARGET   (runner, CHROMEDRIVER, webdriver.json from env.sh)"
} >&2
