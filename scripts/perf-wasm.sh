#!/bin/bash
# Where a CPU benchmark's wasm spends its time, as x86 code: runs bench/browser.mjs under
# `perf record` with V8 writing JIT dumps (--perf-prof), then prints the hottest functions and
# the hottest one's innermost loops (instruction counts by kind, stack spills apart), and keeps
# `perf annotate`'s listing of it. Linux perf with software sampling is enough (no hardware
# counters needed); Debian's Chromium has no --print-wasm-code.
#   scripts/perf-wasm.sh OUT_DIR            (with bench/browser.mjs's variables, e.g.
#   BENCH_ONLY="q4_0 gemm 896×64×4864" BENCH_QUERY="threads=1&peers=0&pkgdir=.pkg-X" BENCH_REPS=600)
# OUT_DIR/ann.txt: the annotated code; OUT_DIR/perf.jit.data for `perf report`/`perf annotate`.
# Functions show as wasm-function[N] unless the package was built with its names kept
# (`scripts/build-pkg.sh bench/.pkg-X --profiling --features bench`: the release code, named);
# `perf report --sort pid,sym` then tells the page's thread from the pool's workers.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:?usage: scripts/perf-wasm.sh OUT_DIR}")
mkdir -p "$OUT"
rm -f "$OUT"/perf.data "$OUT"/perf.jit.data "$OUT"/jitted-*.so
command -v perf >/dev/null || { echo "perf-wasm: no perf (apt-get install linux-perf)" >&2; exit 1; }
# V8 writes jit-<pid>.dump (and, with --perf-prof, isolate logs) in the page's working
# directory, and `perf inject` writes a .so per function next to the dumps: both go.
cleanup() { find bench . -maxdepth 1 \( -name 'jit-*.dump' -o -name 'jitted-*.so' -o -name 'isolate-*-v8*.log' \) -delete; }
trap cleanup EXIT
(cd bench && BENCH_CHROMIUM_ARGS='["--js-flags=--perf-prof --no-liftoff --no-wasm-lazy-compilation"]' \
  BENCH_REPS="${BENCH_REPS:-600}" perf record -k mono -F 4000 -o "$OUT/perf.data" -- node browser.mjs)
(cd bench && perf inject --jit -i "$OUT/perf.data" -o "$OUT/perf.jit.data" 2>/dev/null)
perf report -i "$OUT/perf.jit.data" --no-children --sort sym 2>/dev/null | grep 'JS:' | head -8
SYM=$(perf report -i "$OUT/perf.jit.data" --no-children --sort sym 2>/dev/null | grep 'JS:' | head -1 \
  | sed 's/.*\] //; s/ *$//')
perf annotate -i "$OUT/perf.jit.data" --stdio -s "$SYM" 2>/dev/null > "$OUT/ann.txt"
python3 - "$OUT/ann.txt" <<'PY'
# The innermost loops that hold >5% of the samples: backward jumps' ranges, by size.
import collections, re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r'\s*([0-9.]+)\s*:\s*([0-9a-f]+):\s*(.*)', line)
    if m:
        rows.append((float(m.group(1)), int(m.group(2), 16), m.group(3).strip()))
at = {a: i for i, (_, a, _) in enumerate(rows)}
loops = []
for i, (_, a, text) in enumerate(rows):
    m = re.match(r'j\w+\s+([0-9a-f]+)\s', text)
    if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in at:
        j = at[int(m.group(1), 16)]
        share = sum(r[0] for r in rows[j:i + 1])
        if share > 5:
            loops.append((i - j, j, i, share))
for _, j, i, share in sorted(loops)[:3]:
    kinds = collections.Counter()
    for _, _, text in rows[j:i + 1]:
        op = text.split()[0] if text else ''
        if op == '{vex}':
            op = text.split()[1]
        if '(%rbp)' in text:
            op += ' (to stack)' if re.search(r',\s*-?0x[0-9a-f]+\(%rbp\)$', text) else ' (from stack)'
        kinds[op] += 1
    print(f'loop {rows[j][1]:#x}-{rows[i][1]:#x}: {share:.1f}% of samples, {i - j + 1} instructions')
    print('  ' + ', '.join(f'{k} {n}' for k, n in kinds.most_common(24)))
PY
echo "perf-wasm: $SYM annotated in $OUT/ann.txt"
