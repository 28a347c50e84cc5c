#!/usr/bin/env bash
# scripts/build-apps.sh -- packs pkg/ into the tarball users install (npm pack), installs it in
# the example apps (apps/: their npm packages from apps/package-lock.json, then the tarball,
# --no-save) and builds them into target/apps/: webpack/ (webpack 5), vite/ (Vite) and esm/
# (no bundler: the page, and the installed package as files), and type-checks apps/types/check.ts
# against the package's types. Each app gets the demo's q8_0 model.
# Prints the tarball's size and each wasm build's and the JS's gzipped size.
# Run after scripts/build-web.sh (which builds pkg/); tests/e2e/apps.test.mjs drives the apps.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
say() { printf '[build-apps] %s\n' "$*" >&2; }
[ -f pkg/index.js ] || { say "pkg/ is not built (scripts/build-web.sh)"; exit 1; }
OUT=$ROOT/target/apps
mkdir -p "$OUT"
rm -f "$OUT"/webtensor-*.tgz
TGZ=$(cd pkg && npm pack --pack-destination "$OUT" --silent | tail -1)
say "npm pack → target/apps/$TGZ ($(stat -c %s "$OUT/$TGZ") bytes)"
cd apps
if [ ! -d node_modules/vite ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci (apps/)"; npm ci --no-audit --no-fund
fi
npm install --no-save --no-audit --no-fund "$OUT/$TGZ" >&2
say "TypeScript: the package's types, as a user's code sees them (tsc --noEmit -p apps/types)"
npx tsc -p types >&2
say "webpack → target/apps/webpack"
npx webpack --config webpack/webpack.config.cjs >&2
cp webpack/index.html "$OUT/webpack/"
say "vite build → target/apps/vite"
npx vite build --config vite/vite.config.js --logLevel warn >&2
say "plain ESM → target/apps/esm"
rm -rf "$OUT/esm" && mkdir -p "$OUT/esm/node_modules"
cp esm/index.html esm/blank.html check.js "$OUT/esm/"
cp -rL node_modules/webtensor "$OUT/esm/node_modules/webtensor"
cd "$ROOT"
for app in webpack vite esm; do
  mkdir -p "$OUT/$app/models"
  ln -f models/minilm-q8_0.gguf "$OUT/$app/models/" 2>/dev/null || cp models/minilm-q8_0.gguf "$OUT/$app/models/"
  # The README's TextGenerator snippet loads the tiny random-weight llama (scripts/decoder-models.py).
  mkdir -p "$OUT/$app/models/decoder"
  ln -f models/decoder/llama-q4_0.gguf "$OUT/$app/models/decoder/" 2>/dev/null ||
    cp models/decoder/llama-q4_0.gguf "$OUT/$app/models/decoder/"
done
gz() { gzip -9 -c "$1" | wc -c; }
total=0
for b in simd128 simd128-relaxed threads threads-relaxed; do
  [ -f "pkg/$b/webtensor_bg.wasm" ] || continue
  n=$(gz "pkg/$b/webtensor_bg.wasm"); total=$((total + n))
  say "size: $b wasm $(stat -c %s "pkg/$b/webtensor_bg.wasm") bytes, $n gzipped"
done
js=0
for f in pkg/*.js pkg/*/webtensor.js pkg/*/snippets/*/js/*.js; do js=$((js + $(gz "$f"))); done
say "size: all wasm builds $total bytes gzipped; the package's JS $js bytes gzipped (each file gzipped alone)"
