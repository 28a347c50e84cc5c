// Node runner of bench/attention-cases.mjs (1 thread: Node runs the package's nodejs build,
// without threads): node bench/attention.mjs, after scripts/bench-cpu.sh built
// bench/.pkg-node (BENCH_PKG=.pkg-X another nodejs build, BENCH_ONLY=regex the cases). In a
// browser at 1 and 2 threads: BENCH_QUERY="suite=attention&threads=2&peers=0" node
// bench/browser.mjs (bench/.pkg, or pkgdir=.pkg-X).
import { createRequire } from 'node:module';
import { runAttention } from './attention-cases.mjs';

const require = createRequire(import.meta.url);
const pkg = process.env.BENCH_PKG || '.pkg-node';
const webtensor = require(`./${pkg}/webtensor.js`);
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
await runAttention({ webtensor, only, label: `${pkg}, Node ${process.version}` });
