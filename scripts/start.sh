#!/usr/bin/env bash
# scripts/start.sh -- the main job, from a fresh machine: set up the toolchain, build the
# package (wasm-pack, release) and the demo page (webpack), and serve it at
# http://127.0.0.1:${PORT:-8080} until interrupted.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh
bash scripts/build-web.sh --release
exec node scripts/serve.mjs www/dist
