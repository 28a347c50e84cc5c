#!/usr/bin/env bash
# scripts/check-bundle.sh [PKG_DIR] -- each wasm build of a package, gzipped (gzip -9, what a
# server's compression gives at best), against the bundle's ceiling: WEBTENSOR_GZ_CEILING
# bytes (default 800000, issue 60's budget; the four builds are 771–795 KB, README "Bundle size"). The test
# command runs it on pkg/ after the package build; it fails naming every build over. Stand-ins
# (a build the machine had no toolchain for) are skipped. Where the bytes go:
# `scripts/build-pkg.sh OUT --profiling` keeps the function names for `twiggy top`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=${1:-$ROOT/pkg}
CEILING=${WEBTENSOR_GZ_CEILING:-800000}
over=()
for build in simd128 simd128-relaxed threads threads-relaxed; do
  wasm="$PKG/$build/webtensor_bg.wasm"
  if [ ! -s "$wasm" ]; then
    printf '%-16s not built (a stand-in): skipped\n' "$build"; continue
  fi
  raw=$(stat -c %s "$wasm"); gz=$(gzip -9 -c "$wasm" | wc -c)
  printf '%-16s %9d bytes, %8d gzipped (ceiling %d, %d%%)\n' "$build" "$raw" "$gz" "$CEILING" $((gz * 100 / CEILING))
  if [ "$gz" -gt "$CEILING" ]; then over+=("$build ($gz)"); fi
done
if [ ${#over[@]} -gt 0 ]; then
  echo "FAILED: over the bundle's ceiling of $CEILING bytes gzipped: ${over[*]}" >&2
  exit 1
fi
