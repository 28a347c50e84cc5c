#!/usr/bin/env bash
# scripts/build-web.sh [--dev|--release] -- builds pkg/ (the loader and its four wasm builds,
# scripts/build-pkg.sh), installs the page's npm packages from package-lock.json, bundles www/
# into www/dist and copies pkg/ to www/dist/pkg/ (the page loads it at run time).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
# shellcheck source=/dev/null
source scripts/.env.sh
PROFILE=${1:---release}
say() { printf '[build-web] %s\n' "$*" >&2; }
say "four builds → pkg/ (scripts/build-pkg.sh)"
rm -rf pkg/snippets pkg/webtensor* pkg/README.md  # the old single-build layout
bash scripts/build-pkg.sh pkg "$PROFILE"
if [ ! -d node_modules/webpack ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"; npm ci --no-audit --no-fund
fi
say "webpack → www/dist"
npx webpack --mode production
rm -rf www/dist/pkg && cp -r pkg www/dist/pkg
# The demo's models (scripts/fetch-model.sh makes them), linked rather than copied.
if ls models/minilm-*.gguf >/dev/null 2>&1; then
  mkdir -p www/dist/models
  for f in models/minilm-*.gguf; do ln -f "$f" "www/dist/models/" 2>/dev/null || cp "$f" www/dist/models/; done
  say "models → www/dist/models"
else
  say "no models/minilm-*.gguf (run scripts/fetch-model.sh): the demo's model section will say so"
fi
