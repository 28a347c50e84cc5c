#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...] -- builds the libFuzzer targets in fuzz/ (cargo-fuzz,
# nightly; both installed here when missing) and runs each for SECONDS (default 60), seeded
# from fuzz/seeds/<target>/ (committed) plus fuzz/corpus/<target>/ (what earlier runs found,
# gitignored). FUZZ_JOBS targets run at once (default 2). A crash stops the run: its input is
# in fuzz/artifacts/<target>/; reproduce with `fuzz/target/*/release/<target> <file>`.
# Prints each target's execs; scripts/test.sh runs it for a minute per target.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT/fuzz"
SECS=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(gguf tokenizer graph convert)
JOBS=${FUZZ_JOBS:-2}
say() { printf '[fuzz] %s\n' "$*" >&2; }

# shellcheck source=/dev/null
source "$ROOT/scripts/nightly.env"
NIGHTLY=${FUZZ_NIGHTLY:-$NIGHTLY_PIN}
if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1; then
  say "rustup toolchain install $NIGHTLY --profile minimal"
  rustup toolchain install "$NIGHTLY" --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "cargo install cargo-fuzz"
  cargo install cargo-fuzz --version 0.13.2 --locked
fi
say "cargo +$NIGHTLY fuzz build ${TARGETS[*]}"
for t in "${TARGETS[@]}"; do cargo "+$NIGHTLY" fuzz build -O "$t"; done
BIN=target/$(rustc "+$NIGHTLY" -vV | awk '/^host:/ {print $2}')/release

run() {  # run TARGET: one bounded run, its summary on stdout
  local t=$1 log=artifacts/$1.log
  mkdir -p "corpus/$t" "artifacts/$t"
  # Seeds: committed text seeds, and the binary ones (GGUF files) made by make_seeds.py.
  if [ -z "$(ls -A "seeds/$t" 2>/dev/null)" ]; then
    printf '%-10s FAILED: no seeds in fuzz/seeds/%s\n' "$t" "$t"; return 1
  fi
  if "$BIN/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="artifacts/$t/" "corpus/$t" "seeds/$t" >"$log" 2>&1; then
    local execs; execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    printf '%-10s %10s execs in %ss, corpus %s inputs\n' "$t" "$execs" "$SECS" "$(ls "corpus/$t" | wc -l)"
  else
    printf '%-10s FAILED: see fuzz/%s\n' "$t" "$log"; tail -n 30 "$log" >&2; return 1
  fi
}
python3 make_seeds.py >/dev/null
pids=(); status=0
for t in "${TARGETS[@]}"; do
  run "$t" & pids+=($!)
  if [ ${#pids[@]} -ge "$JOBS" ]; then wait "${pids[0]}" || status=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
