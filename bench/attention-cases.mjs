// The fused attention op against the unfused nodes on webtensor's wasm CPU kernels, same
// page or process: the cases of `cargo bench --bench attention` (the decoder's layout, f16
// K/V caches stored on the device once, a causal mask), medians of 7 runs after a warm-up,
// at each thread count of `threads`. Shared by bench/attention.mjs (Node) and
// bench/index.html?suite=attention (a browser, where the threaded builds run 2 threads).
// The cases come from the package (`attentionCases()`: the list the native bench runs).

/** Logs a table row per case and thread count; returns the rows. */
export async function runAttention({ webtensor, log = console.log, only, threads = [1], label = '' }) {
  log(`webtensor ${label}: fused attention against the unfused nodes (ms, medians of 7)`);
  log('| case (heads×d / kv heads, queries × keys) | threads | unfused ms | fused ms | speed-up |');
  log('|---|---|---|---|---|');
  const rows = [];
  for (const c of webtensor.attentionCases()) {
    if (only && !only.test(c.name)) continue;
    // One untimed pass of both forms first: a case's first calls run V8's baseline code
    // (Liftoff) until it swaps in the optimized one, which made the first thread count's
    // figures up to 3× too slow (14×64 / 2, 64 × 128: 2.0 ms fused at 1 thread cold, 0.63 warm).
    for (const fused of [false, true]) await webtensor.attentionBench(c.heads, c.d, c.kvHeads, c.nQ, c.nKv, c.pad, fused, threads[0]);
    for (const t of threads) {
      const run = (fused) => webtensor.attentionBench(c.heads, c.d, c.kvHeads, c.nQ, c.nKv, c.pad, fused, t);
      const unfused = await run(false);
      const fused = await run(true);
      rows.push({ case: c.name, threads: t, unfused, fused });
      log(`| ${c.name} | ${t} | ${unfused.toFixed(3)} | ${fused.toFixed(3)} | ${(unfused / fused).toFixed(2)}x |`);
    }
  }
  return { rows };
}
