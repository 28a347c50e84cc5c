#!/usr/bin/env bash
# scripts/build-web.sh [--dev|--release] -- builds pkg/ with wasm-pack (bundler target),
# installs the page's npm packages from package-lock.json, and bundles www/ into www/dist.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
# shellcheck source=/dev/null
source scripts/.env.sh
PROFILE=${1:---release}
say() { printf '[build-web] %s\n' "$*" >&2; }
say "wasm-pack build $PROFILE --target bundler"
wasm wasm-pack build "$PROFILE" --target bundler --out-dir pkg
if [ ! -d node_modules/webpack ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"; npm ci --no-audit --no-fund
fi
say "webpack → www/dist"
npx webpack --mode production
