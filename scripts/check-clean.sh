#!/usr/bin/env bash
# scripts/check-clean.sh -- what CI does, here: `.ci/run` (the README's test command) in a
# fresh clone of this repository's HEAD, in a temporary directory that is removed afterwards
# (a clone's run leaves about 5 GiB: target/, node_modules, models; clones left behind once
# filled this machine's disk and a CI run died in the linker). Nothing is reused from this
# tree: models and npm packages are fetched again, as on CI. KEEP=1 keeps the clone.
#   scripts/check-clean.sh 2>&1 | tee /tmp/check.log
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then
  echo "WARNING: uncommitted changes are not in the clone; it checks HEAD $(git -C "$ROOT" rev-parse --short HEAD)" >&2
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/webtensor-check.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  echo "the clone stays in $DIR"
else
  trap 'rm -rf "$DIR"' EXIT
fi
git clone -q "$ROOT" "$DIR/repo"
cd "$DIR/repo"
T0=$(date +%s)
rc=0
./.ci/run || rc=$?
echo "check-clean: HEAD $(git rev-parse --short HEAD), exit $rc after $(( $(date +%s) - T0 ))s, $(du -sh . | cut -f1) written"
exit "$rc"
