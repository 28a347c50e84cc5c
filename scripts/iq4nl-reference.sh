#!/usr/bin/env bash
# scripts/iq4nl-reference.sh -- the IQ4_NL fixtures of src/graph/dtype.rs's tests
# (`iq4_nl_matches_ggml`, `iq4_nl_matches_ggml_on_seeded_blocks`) from ggml's own quantizer:
# fetches llama-cpp-python 0.3.36's sdist from PyPI's file host (its SHA-256 checked), builds
# scripts/iq4nl-reference.c against the llama.cpp ggml-quants.c it vendors (x86-64, no FMA,
# as the Rust tests run natively) and prints the hex and hash the tests hold. Not part of the
# test command (the fixtures are committed); run it to check them or to move to another
# llama.cpp. Needs gcc and curl; writes under target/ref/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
VERSION=0.3.36
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
URL=https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$VERSION.tar.gz
DIR=target/ref
TAR=$DIR/llama_cpp_python-$VERSION.tar.gz
mkdir -p "$DIR"
if ! echo "$SHA256  $TAR" | sha256sum -c --status 2>/dev/null; then
  curl -sfL "$URL" -o "$TAR.part"
  echo "$SHA256  $TAR.part" | sha256sum -c --quiet
  mv "$TAR.part" "$TAR"
fi
GGML=$DIR/llama_cpp_python-$VERSION/vendor/llama.cpp/ggml
[ -f "$GGML/src/ggml-quants.c" ] || tar xzf "$TAR" -C "$DIR" --wildcards '*/vendor/llama.cpp/ggml/*'
gcc -O2 -std=gnu11 -I"$GGML/include" -I"$GGML/src" scripts/iq4nl-reference.c "$GGML/src/ggml-quants.c" \
  -lm -o "$DIR/iq4nl-reference"
"$DIR/iq4nl-reference"
