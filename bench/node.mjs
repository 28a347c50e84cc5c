// Node runner: node bench/node.mjs [out.json] (after scripts/bench-cpu.sh built bench/.pkg-node;
// BENCH_PKG=.pkg-X another nodejs build of the package under bench/, for before/after figures).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { runBench } from './cpu-matmul.mjs';

const require = createRequire(import.meta.url);
const webtensor = require(`./${process.env.BENCH_PKG || '.pkg-node'}/webtensor.js`);
const ort = await import('onnxruntime-web');
ort.env.wasm.numThreads = 1;
const tf = require('@tensorflow/tfjs-core');
const wasmBackend = require('@tensorflow/tfjs-backend-wasm');
wasmBackend.setThreadsCount?.(1);
await tf.setBackend('wasm');
await tf.ready();

const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const result = await runBench({ webtensor, ort, tf, only, reps: Number(process.env.BENCH_REPS || 7) });
const out = process.argv[2];
if (out) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ env: `node ${process.version}`, ...result }, null, 2));
}
