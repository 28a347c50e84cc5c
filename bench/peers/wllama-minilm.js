// wllama peer for the MiniLM latency benchmark: llama.cpp compiled to wasm (npm @wllama/wllama,
// version pinned in bench/package.json), running the same GGUF file as webtensor
// (models/minilm-*.gguf, llama.cpp's `bert` conventions, mean pooling in the file).
//
//   const m = await loadWllama({ modelUrl: '../models/minilm-f32.gguf' });
//   const vecs = await m.embed(['a sentence', 'another']);   // Float32Array(384) each, unit length
//
// What wllama 3.x needs and what this module does about it:
// - One wasm build (esm/wasm/wllama.wasm) for single thread, pthreads and WebGPU. It is a
//   memory64 + JSPI module, so it runs as is on Chromium ≥ 137. Without JSPI or memory64,
//   wllama would switch to a "compat" build fetched from a CDN; we refuse that (setCompat(null)
//   plus an explicit check) so a benchmark never silently measures something else.
// - Single thread: n_threads 1 keeps wllama off pthreads (it also falls back to one thread on
//   its own where the page is not cross-origin isolated, since it needs SharedArrayBuffer).
// - CPU only: n_gpu_layers 0 (wllama offloads every layer to WebGPU by default; with 0 it also
//   makes the worker's requestAdapter() return null, so no WebGPU device is created).
// - The model is fetched here and handed over as a Blob (loadModel), the same bytes
//   loadModelFromUrl would fetch, but without its copy into the origin-private file system.
// - Embeddings: embeddings true, pooling from the file (mean), n_ctx = n_batch = n_ubatch = 512
//   so a whole sequence (up to 512 tokens) is one ubatch, as a non-causal model requires.
//   llama-server's embedding task L2-normalizes (embd_normalize 2), as sentence-transformers does.
// - Batches: wllama 3.8.1's createEmbedding takes an array of inputs but returns only one
//   result (its non-streaming reader keeps a single chunk), so each text is its own
//   createEmbedding call. By default (concurrent: true) the calls are issued together
//   (Promise.all) with n_parallel = MAX_BATCH slots, so llama-server puts the pending sequences
//   into one llama_decode where they fit in n_batch (512 tokens) instead of one decode per text;
//   each result belongs to its own request, so the order is the texts' order. concurrent: false
//   awaits one call after the other.
// - Memory: the wasm memory lives in wllama's worker. To read its size, the worker source is
//   extended (once, while loading) with a listener that answers with Module.wasmMemory's length.
//   If that fails, memoryBytes() returns null.

import { Wllama, LogLevel } from '../node_modules/@wllama/wllama/esm/index.js';

const WASM_URL = new URL('../node_modules/@wllama/wllama/esm/wasm/wllama.wasm', import.meta.url).href;
const MAX_BATCH = 16; // llama-server slots: the most texts one llama_decode can take together
const N_CTX = 512; // BERT's position table; also n_batch and n_ubatch
const MEM_VERB = 'webtensor.wasmMemory';

export function hasJspi() {
  return typeof WebAssembly.Suspending === 'function';
}

export function hasMemory64() {
  try {
    new WebAssembly.Memory({ address: 'i64', initial: 1n });
    return true;
  } catch {
    return false;
  }
}

// While `fn` runs, workers created from a blob: URL whose source is wllama's worker get a
// listener that reports the wasm memory size. Returns fn's result and the worker (or null).
export async function withMemoryProbe(fn) {
  const RealWorker = globalThis.Worker;
  let probed = null;
  const probe =
    `\n;addEventListener('message', (e) => { if (e.data && e.data.verb === '${MEM_VERB}') ` +
    `postMessage({ verb: '${MEM_VERB}', args: [typeof Module !== 'undefined' && Module && Module.wasmMemory ` +
    `? Number(Module.wasmMemory.buffer.byteLength) : null] }); });\n`;
  globalThis.Worker = function Worker(url, options) {
    let target = url;
    try {
      if (!probed && typeof url === 'string' && url.startsWith('blob:')) {
        const xhr = new XMLHttpRequest();
        xhr.open('GET', url, false); // a blob: URL, read synchronously (Worker's constructor is synchronous)
        xhr.send();
        if (xhr.status === 200 && xhr.responseText.includes('RUN_OPTIONS')) {
          target = URL.createObjectURL(new Blob([xhr.responseText + probe], { type: 'text/javascript' }));
        }
      }
    } catch {
      target = url;
    }
    const w = new RealWorker(target, options);
    if (target !== url) probed = w;
    return w;
  };
  globalThis.Worker.prototype = RealWorker.prototype;
  try {
    return { result: await fn(), worker: probed };
  } finally {
    globalThis.Worker = RealWorker;
  }
}

export function askMemory(worker) {
  if (!worker) return Promise.resolve(null);
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(null), 2000);
    const onMsg = (e) => {
      if (e.data && e.data.verb === MEM_VERB) done(e.data.args[0] ?? null);
    };
    function done(v) {
      clearTimeout(timer);
      worker.removeEventListener('message', onMsg);
      resolve(v);
    }
    worker.addEventListener('message', onMsg);
    // callbackId: wllama's own handler ignores an unknown verb that carries one.
    worker.postMessage({ verb: MEM_VERB, args: [], callbackId: -1 });
  });
}

// modelUrl: a GGUF with llama.cpp's bert conventions; threads: llama.cpp threads (1: no pthreads);
// concurrent: see Batches above; log: print llama.cpp's log. memoryBytes() returns a Promise
// (the size is asked of the worker): the wasm memory's current (= peak, it never shrinks) size.
export async function loadWllama({ modelUrl, threads = 1, concurrent = true, log = false } = {}) {
  if (!hasJspi() || !hasMemory64()) {
    throw new Error(
      `wllama needs WebAssembly JSPI and memory64 (JSPI ${hasJspi()}, memory64 ${hasMemory64()}); ` +
        'its compat build would come from a CDN, which this benchmark does not use',
    );
  }
  // Native log lines are kept (the last few) so that a failed load can say why: wllama 3.8.1
  // does not throw when llama.cpp refuses a model, it returns a context of zeros.
  const recent = [];
  const keep = (level) => (...args) => {
    recent.push(`${level}: ${args.map(String).join(' ')}`);
    if (recent.length > 40) recent.shift();
    if (log) console.log(...args);
  };
  const logger = { debug: keep('debug'), log: keep('log'), warn: keep('warn'), error: keep('error') };
  const wllama = new Wllama({ default: WASM_URL }, { logger });
  wllama.setCompat(null);

  const res = await fetch(modelUrl);
  if (!res.ok) throw new Error(`${modelUrl}: HTTP ${res.status}`);
  const blob = await res.blob();

  const { worker } = await withMemoryProbe(() =>
    wllama.loadModel([blob], {
      n_threads: threads,
      n_gpu_layers: 0,
      embeddings: true,
      // pooling_type left unset: llama.cpp takes bert.pooling_type (1 = mean) from the file
      n_ctx: N_CTX,
      n_batch: N_CTX,
      n_ubatch: N_CTX,
      n_parallel: MAX_BATCH,
      log_level: log ? LogLevel.INFO : LogLevel.WARN,
    }),
  ).catch(async (err) => {
    await wllama.exit().catch(() => {});
    throw err;
  });
  const info = wllama.getLoadedContextInfo();
  if (info.success === false || !(info.n_embd > 0) || !(info.n_ctx > 0)) {
    const why = recent.filter((l) => l.startsWith('error:')).join('\n') || recent.slice(-10).join('\n');
    await wllama.exit().catch(() => {});
    throw new Error(`wllama could not load ${modelUrl}:\n${why}`);
  }
  const nEmbd = info.n_embd;

  async function embedOne(text) {
    const r = await wllama.createEmbedding({ input: text });
    const v = r?.data?.[0]?.embedding;
    if (!Array.isArray(v) || v.length !== nEmbd) {
      throw new Error(`wllama: unexpected embedding response ${JSON.stringify(r)?.slice(0, 200)}`);
    }
    return Float32Array.from(v);
  }

  return {
    name: 'wllama',
    device: 'cpu',
    threads: wllama.getNumThreads(),
    wllama,
    async embed(texts) {
      const out = [];
      if (!concurrent) {
        for (const t of texts) out.push(await embedOne(t));
        return out;
      }
      for (let i = 0; i < texts.length; i += MAX_BATCH) {
        out.push(...(await Promise.all(texts.slice(i, i + MAX_BATCH).map(embedOne))));
      }
      return out;
    },
    memoryBytes() {
      return askMemory(worker);
    },
    async dispose() {
      await wllama.exit();
    },
  };
}
