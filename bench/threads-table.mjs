// Prints the CPU matmul results of scripts/bench-threads.sh side by side: one row per case,
// one column per implementation and thread count (median ms and GFLOP/s), then the thread
// scaling of each implementation measured at 1 and 2 threads (1-thread ms / 2-thread ms), and
// webtensor's scaling measured run for run against a 1-thread twin in the same window.
//   node bench/threads-table.mjs target/bench/threads/matmul-*.json
import fs from 'node:fs';

const rows = process.argv.slice(2).flatMap((f) => JSON.parse(fs.readFileSync(f, 'utf8')).rows ?? []);
const cases = [...new Set(rows.map((r) => r.case))];
const cols = [...new Set(rows.map((r) => `${r.impl.replace(/ (f32|q8_0|q4_0)$/, '')} ${r.threads}t`))];
const cell = (c, col) => rows.find((r) => r.case === c && `${r.impl.replace(/ (f32|q8_0|q4_0)$/, '')} ${r.threads}t` === col);
console.log('\nCPU matmul, headless Chromium, cross-origin isolated: median ms (GFLOP/s)');
console.log(['case', ...cols].join(' | '));
for (const c of cases) {
  console.log([c, ...cols.map((col) => { const r = cell(c, col); return r ? `${r.ms} (${r.gflops})` : '-'; })].join(' | '));
}
console.log('\nthread scaling (1-thread ms / 2-thread ms)');
for (const col of cols.filter((c) => c.endsWith(' 2t'))) {
  const one = col.replace(/ 2t$/, ' 1t');
  const s = cases.map((c) => { const a = cell(c, one), b = cell(c, col); return a && b ? `${c}: ${(a.ms / b.ms).toFixed(2)}×` : null; }).filter(Boolean);
  console.log(`${col.replace(/ 2t$/, '')}: ${s.join(', ')}`);
}
const paired = rows.filter((r) => r.scaling);
if (paired.length) {
  console.log('\nwebtensor thread scaling in one window (1-thread twin and 2 threads alternated run by run)');
  const build = (r) => r.impl.replace(/ (f32|q8_0|q4_0)$/, '');
  for (const impl of new Set(paired.map(build))) {
    // By the whole build name: 'threads' is a prefix of 'threads-relaxed'.
    const s = paired.filter((r) => build(r) === impl).map((r) => `${r.case}: ${r.scaling}×`);
    console.log(`${impl} ${paired[0].threads}t: ${s.join(', ')}`);
  }
}
