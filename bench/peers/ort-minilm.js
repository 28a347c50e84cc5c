// onnxruntime-web peer of the all-MiniLM-L6-v2 benchmark (issue 6): runs models/minilm.onnx
// (scripts/export-onnx.py: input_ids + attention_mask int64 [batch, seq] -> embeddings f32
// [batch, 384], mean-pooled and L2-normalized inside the graph) with onnxruntime-web 1.30.0 from
// bench/node_modules.
//
//   const peer = await loadOrt({ modelUrl, device: 'cpu' | 'webgpu', tokenize });
//   const vecs = await peer.embed(['a sentence', ...]);   // Float32Array(384) per text
//
// 'cpu'    = the wasm EP of dist/ort.wasm.min.mjs (ort-wasm-simd-threaded.wasm), SIMD required,
//            numThreads = `threads` (default 1; more needs a cross-origin isolated page), proxy off.
// 'webgpu' = the WebGPU EP of dist/ort.webgpu.min.mjs, which in 1.30 runs on the asyncify build
//            (ort-wasm-simd-threaded.asyncify.wasm, the C++ WebGPU EP; no JSEP). Throws when the
//            browser has no WebGPU adapter. ORT may still place a few nodes on its CPU kernels.
// Each bundle keeps its own `ort.env`, initialized once per page: numThreads is fixed by the
// first session of that bundle.

const DIST = new URL('../node_modules/onnxruntime-web/dist/', import.meta.url).href;
const BUNDLES = { cpu: 'ort.wasm.min.mjs', webgpu: 'ort.webgpu.min.mjs' };
const MAX_POSITIONS = 512; // the model's position table
const DIM = 384;

// Per bundle: { ort, memory } once loaded; memory is ORT's wasm linear memory, caught when its
// Emscripten module creates it (threaded builds import a JS-made shared WebAssembly.Memory).
const loaded = {};

async function bundle(device, threads = 1) {
  if (loaded[device]) return loaded[device];
  const ort = await import(DIST + BUNDLES[device]);
  ort.env.wasm.wasmPaths = DIST; // the .mjs/.wasm pair is fetched from here, not the page's URL
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.simd = true; // throws at init if the browser lacks WASM SIMD (the only build anyway)
  ort.env.wasm.proxy = false;
  loaded[device] = { ort, memory: null };
  return loaded[device];
}

/** Runs `fn` while recording every WebAssembly.Memory constructed; resolves to [result, memories]. */
async function catchingMemories(fn) {
  const Real = WebAssembly.Memory;
  const made = [];
  WebAssembly.Memory = new Proxy(Real, {
    construct(target, args, newTarget) {
      const m = Reflect.construct(target, args, newTarget === WebAssembly.Memory ? target : newTarget);
      if (args[0] && args[0].initial > 0) made.push(m); // skips the 0-page SharedArrayBuffer probe
      return m;
    },
  });
  try {
    return [await fn(), made];
  } finally {
    WebAssembly.Memory = Real;
  }
}

export async function loadOrt({ modelUrl, device = 'cpu', tokenize, threads = 1 }) {
  if (!BUNDLES[device]) throw new Error(`loadOrt: device must be 'cpu' or 'webgpu', not ${JSON.stringify(device)}`);
  if (typeof tokenize !== 'function') throw new Error('loadOrt: tokenize(text) => token ids is required');
  if (device === 'webgpu') {
    const adapter = typeof navigator !== 'undefined' && navigator.gpu ? await navigator.gpu.requestAdapter() : null;
    if (!adapter) {
      throw new Error('onnxruntime-web webgpu: this browser has no WebGPU adapter (navigator.gpu missing or ' +
        'requestAdapter() gave null; Chromium needs --enable-unsafe-webgpu where WebGPU is not on by default)');
    }
  }
  const b = await bundle(device, threads);
  const { ort } = b;
  const res = await fetch(modelUrl);
  if (!res.ok) throw new Error(`loadOrt: ${modelUrl}: HTTP ${res.status} (run scripts/export-onnx.py)`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const options = {
    executionProviders: [device === 'webgpu' ? 'webgpu' : 'wasm'],
    graphOptimizationLevel: 'all',
  };
  let session;
  try {
    const [s, memories] = await catchingMemories(() => ort.InferenceSession.create(bytes, options));
    session = s;
    if (!b.memory && memories.length) b.memory = memories[memories.length - 1];
  } catch (err) {
    throw new Error(`onnxruntime-web ${device}: cannot create the session: ${err.message || err}`);
  }

  return {
    name: 'onnxruntime-web',
    device,
    version: ort.env.versions?.web ?? null,

    /** One L2-normalized Float32Array(384) per text; the batch is padded to its longest. */
    async embed(texts) {
      const seqs = texts.map((t) => tokenize(t));
      const n = Math.max(...seqs.map((s) => s.length));
      if (n > MAX_POSITIONS) throw new Error(`onnxruntime-web: ${n} tokens, the model takes at most ${MAX_POSITIONS}`);
      const ids = new BigInt64Array(texts.length * n);
      const mask = new BigInt64Array(texts.length * n);
      seqs.forEach((s, r) => {
        for (let i = 0; i < s.length; i++) {
          ids[r * n + i] = BigInt(s[i]);
          mask[r * n + i] = 1n;
        }
      });
      const feeds = {
        input_ids: new ort.Tensor('int64', ids, [texts.length, n]),
        attention_mask: new ort.Tensor('int64', mask, [texts.length, n]),
      };
      const out = await session.run(feeds);
      const e = out.embeddings;
      const data = e.data; // on the CPU for both EPs (preferredOutputLocation defaults to 'cpu')
      const rows = texts.map((_, r) => data.slice(r * DIM, (r + 1) * DIM));
      e.dispose();
      feeds.input_ids.dispose();
      feeds.attention_mask.dispose();
      return rows;
    },

    /** Bytes of ORT's wasm linear memory (shared by sessions of this bundle), or null. */
    memoryBytes() {
      return b.memory ? b.memory.buffer.byteLength : null;
    },

    async dispose() {
      await session.release();
    },
  };
}
