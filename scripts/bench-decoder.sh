#!/usr/bin/env bash
# Same-run CPU benchmark of webtensor's decoder (examples/generate) against llama.cpp
# (llama-cpp-python) on random-weight models with llama2.c stories15M shapes (n_embd 288,
# 6 layers, 6 heads, n_ff 768, llama-spm vocab 32000, untied output) as F32, Q8_0 and Q4_0,
# written by `scripts/decoder-models.py --bench` into models/decoder/bench-stories15m-*.gguf.
#
#     pip install numpy gguf llama-cpp-python     # (0.3.36 used for the committed numbers)
#     scripts/bench-decoder.sh                    # REPS=3 by default: REPS=5 scripts/bench-decoder.sh
#
# Settings, the same token ids for both engines (BOS 1, then ids cycling 1000..4000):
#   short: context 256, a 128-token prompt, then 64 greedy decode steps
#   long:  context 1024, a 900-token prompt, then 64 greedy decode steps
# webtensor: `generate MODEL --ids ... -n 65 --context C --device cpu` (all cores), a fresh
# process per repetition; its own prefill / decode timings (load excluded). llama.cpp:
# Llama(n_ctx=C, n_batch=512, n_threads=2, n_threads_batch=2, flash_attn=False, default f16
# KV cache), time.perf_counter around llm.eval(prompt) and around the 64 llm.eval([tok]) steps
# (tok = argmax of the last logits), load excluded; the repetitions share one Llama (reset
# between). Each number is the median of REPS runs.
#
# Prints one markdown table: model, setting, engine, prefill tok/s, decode tok/s, the decode
# ratio webtensor / llama.cpp, the bytes of matmul weights read per decode token (every 2-d
# weight but token_embd, of which a step reads one row; KV cache reads not counted) and the
# GB/s that implies at each engine's decode speed. Then how many leading greedy tokens the two
# engines agree on (a sanity check: random weights, so quantized models may diverge early).
set -euo pipefail

cd "$(dirname "$0")/.."
REPS="${REPS:-3}"
THREADS="${THREADS:-2}"
N_DECODE=64
GEN=target/release/examples/generate

cargo build --release --example generate
python3 scripts/decoder-models.py --bench

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

ids() {  # ids N: BOS then N-1 ids cycling 1000..4000, comma-separated
    python3 -c "import sys; n=int(sys.argv[1]); print(','.join(['1']+[str(1000+i%3001) for i in range(n-1)]))" "$1"
}

MODELS=(bench-stories15m-f32 bench-stories15m-q8_0 bench-stories15m-q4_0)
SETTINGS=("short 256 128" "long 1024 900")

for m in "${MODELS[@]}"; do
    path="models/decoder/$m.gguf"
    for s in "${SETTINGS[@]}"; do
        read -r name ctx np <<<"$s"
        prompt="$(ids "$np")"
        for r in $(seq "$REPS"); do
            out="$("$GEN" "$path" --ids "$prompt" -n $((N_DECODE + 1)) --context "$ctx" --device cpu)"
            line="$(grep '^devices ' <<<"$out")"
            pre="$(sed -E 's/.*prefill [0-9]+ tokens [0-9.]+ ms \(([0-9.]+) tokens\/s\).*/\1/' <<<"$line")"
            dec="$(sed -E 's/.*decode ([0-9]+) tokens [0-9.]+ ms \(([0-9.]+) tokens\/s\).*/\2/' <<<"$line")"
            nd="$(sed -E 's/.*decode ([0-9]+) tokens.*/\1/' <<<"$line")"
            [ "$nd" = "$N_DECODE" ] || { echo "webtensor decoded $nd tokens, not $N_DECODE: $line" >&2; exit 1; }
            toks="$(grep '^ids: ' <<<"$out" | sed -E 's/^ids: \[(.*)\]$/\1/; s/ //g')"
            echo "$m $name webtensor $r $pre $dec $toks" >>"$WORK/results"
            echo "webtensor $m $name rep $r: prefill $pre tok/s, decode $dec tok/s" >&2
        done
    done
done

python3 - "$WORK/results" "$REPS" "$THREADS" "$N_DECODE" "${MODELS[@]}" <<'EOF'
import statistics
import sys
import time

import gguf
import numpy as np
from llama_cpp import Llama
import llama_cpp

results, reps, threads, n_decode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
models = sys.argv[5:]
settings = [("short", 256, 128), ("long", 1024, 900)]


def ids(n):
    return [1] + [1000 + i % 3001 for i in range(n - 1)]


def llama_run(path, ctx, prompt):
    llm = Llama(model_path=path, n_ctx=ctx, n_batch=512, n_threads=threads, n_threads_batch=threads,
                flash_attn=False, n_gpu_layers=0, seed=0, verbose=False)
    nv = llm.n_vocab()
    last = lambda: int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(nv,))))  # noqa: E731
    runs = []
    for r in range(reps):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        tok = last()
        t1 = time.perf_counter()
        out = [tok]
        for _ in range(n_decode):
            llm.eval([tok])
            tok = last()
            out.append(tok)
        t2 = time.perf_counter()
        runs.append((len(prompt) / (t1 - t0), n_decode / (t2 - t1), out))
        print(f"llama.cpp {path} ctx {ctx} rep {r + 1}: prefill {runs[-1][0]:.1f} tok/s, "
              f"decode {runs[-1][1]:.1f} tok/s", file=sys.stderr, flush=True)
    del llm
    return runs


def weight_bytes(path):
    r = gguf.GGUFReader(path)
    return sum(int(t.n_bytes) for t in r.tensors if len(t.shape) == 2 and t.name != "token_embd.weight")


wt = {}
with open(results) as f:
    for line in f:
        m, s, _, _, pre, dec, toks = line.split()
        wt.setdefault((m, s), []).append((float(pre), float(dec), [int(t) for t in toks.split(",")]))

rows, notes = [], []
for m in models:
    path = f"models/decoder/{m}.gguf"
    wb = weight_bytes(path)
    for s, ctx, n in settings:
        lr = llama_run(path, ctx, ids(n))
        w = wt[(m, s)]
        med = lambda rs, i: statistics.median(x[i] for x in rs)  # noqa: E731
        wp, wd, lp, ld = med(w, 0), med(w, 1), med(lr, 0), med(lr, 1)
        short = m.replace("bench-", "")
        rows.append(f"| {short} | {s} ({n}+{n_decode}, ctx {ctx}) | webtensor | {wp:.0f} | {wd:.1f} | "
                    f"{wd / ld:.2f} | {wb / 1e6:.1f} MB | {wb * wd / 1e9:.2f} |")
        rows.append(f"| {short} | {s} ({n}+{n_decode}, ctx {ctx}) | llama.cpp | {lp:.0f} | {ld:.1f} | "
                    f"| {wb / 1e6:.1f} MB | {wb * ld / 1e9:.2f} |")
        a, b = w[0][2], lr[0][2]
        agree = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        notes.append(f"{short} {s}: greedy tokens agree on the first {agree}/{len(b)}; "
                     f"webtensor reps prefill {[round(x[0]) for x in w]} decode {[round(x[1], 1) for x in w]}; "
                     f"llama.cpp reps prefill {[round(x[0]) for x in lr]} decode {[round(x[1], 1) for x in lr]}")

print()
print(f"llama-cpp-python {llama_cpp.__version__}, {threads} threads, median of {reps}; "
      f"decode = {n_decode} greedy steps after the prompt")
print()
print("| model | setting | engine | prefill tok/s | decode tok/s | decode ratio wt/llama | weights read / decode token | decode GB/s |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    print(r)
print()
for n in notes:
    print(n)
EOF
