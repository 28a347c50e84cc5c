// The engine's module Worker (index.js starts it: load() with the default { worker: true }).
// It loads one build here (engine.js; a threaded build starts its pool of workers from here)
// and answers the page's proxy (proxy.js): one message per call, { id, op, args }, answered
// with { id, result } or { id, error: { name, message } }, and { id, progress } on the way.
// Calls run one at a time, in order; { abort: id } drops a call still queued (a call already
// running finishes here, and the page has already rejected it). Objects live here, named by
// handles: runtimes, models, tokenizers and their streams, device tensors, graphs (replayed
// from the page's recording).
import { WebtensorError, errorFromMessage, errorToMessage } from './errors.js';
import { loadEngine } from './engine.js';
import { cache } from './cache.js';
import { TOKENIZER_GETTERS } from './proxy.js';

let engine;
const objects = new Map();
let nextHandle = 1;
const queued = new Map(); // id → { aborted, controller }: calls queued or running

function keep(obj) {
  const h = nextHandle++;
  objects.set(h, obj);
  return h;
}

function get(h, what) {
  const obj = objects.get(h);
  if (!obj) throw new WebtensorError('DISPOSED', `this ${what} was disposed`);
  return obj;
}

// A graph recorded in the page (proxy.js's Graph), built here call by call. `map` turns the
// page's tensor ids into this graph's; a call that fails leaves the graph failed, and every
// later use gives the same error.
function graph(ref) {
  let g = objects.get(`graph:${ref.gid}`);
  if (!g) {
    g = { graph: new engine.Graph(), map: [], applied: 0, error: null };
    objects.set(`graph:${ref.gid}`, g);
  }
  if (g.error) throw g.error;
  const id = (x) => {
    const t = g.map[x];
    if (t === undefined) throw new WebtensorError('INVALID_ARGUMENT', `tensor ${x} is not in this graph`);
    return t;
  };
  for (const [i, call] of ref.calls.entries()) {
    const at = ref.from + i;
    if (at < g.applied) continue;
    const [method, args, tensorArgs, returnsId] = call;
    try {
      const real = args.map((a, k) => (tensorArgs.includes(k) && a !== null && a !== undefined ? id(a) : a));
      const out = g.graph[method](...real);
      if (returnsId) g.map.push(out);
    } catch (e) {
      g.error = errorFromMessage({ ...errorToMessage(e), message: `${method}: ${e.message}` });
      throw g.error;
    }
    g.applied = at + 1;
  }
  return g.graph;
}

function inputs(obj) {
  if (obj === null || typeof obj !== 'object') return obj;
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    out[k] = v && v.__gpuTensor ? get(v.__gpuTensor, 'GpuTensor') : v && v.__state ? get(v.__state, 'State') : v;
  }
  return out;
}

const transferable = (a) => (ArrayBuffer.isView(a) && a.buffer instanceof ArrayBuffer ? [a.buffer] : []);

// dispose() of a runtime, model or device tensor: frees it and forgets its handle.
function drop({ handle }) {
  objects.get(handle)?.dispose();
  objects.delete(handle);
}

// A load's options as the page sent them (proxy.js's loadCall), with this call's progress
// reporter and abort signal.
function loadOptions(options, progress, signal) {
  const opts = { ...options, signal };
  if (opts.onProgress) opts.onProgress = progress;
  return opts;
}

function gpuRef(t) {
  return { __gpuTensor: keep(t), dtype: t.dtype, shape: t.shape, device: t.device };
}

// The calls the page's proxy (proxy.js) may send, by op name: the engine's functions by
// their names, class members as runtime.*, model.* (SentenceEmbedder), gpu.* (GpuTensor),
// state.* (State), generator.* (TextGenerator), generation.* (Generation),
// tokenizer.* (Tokenizer), stream.* (TokenStream, a Tokenizer's streaming decoder).
// Exported for scripts/check-js-surface.mjs, which checks them against webtensor.d.ts.
export const OPS = {
  async init({ options }) {
    engine = await loadEngine(options);
    return { loaded: engine.loaded };
  },
  listDevices: () => engine.listDevices(),
  vectorAdd: ({ device, a, b }) => engine.vectorAdd(device, a, b),
  buildInfo: () => engine.buildInfo(),
  gpuBuffers: () => engine.gpuBuffers(),
  calibrations: () => engine.calibrations(),
  setCalibrations: ({ text }) => engine.setCalibrations(text),
  'cache.list': () => cache.list(),
  'cache.delete': ({ url }) => cache.delete(url),
  'cache.clear': () => cache.clear(),

  async 'runtime.create'({ options }) {
    const rt = await engine.Runtime.create(options);
    return { handle: keep(rt), devices: rt.devices, notes: rt.notes };
  },
  async 'runtime.run'({ handle, graph: ref, inputs: ins, options }) {
    const rt = get(handle, 'Runtime');
    const outs = await rt.run(graph(ref), inputs(ins), options);
    const result = {};
    const transfer = [];
    for (const [k, v] of Object.entries(outs)) {
      if (v instanceof engine.GpuTensor) result[k] = gpuRef(v);
      else { result[k] = v; transfer.push(...transferable(v)); }
    }
    return { value: result, transfer };
  },
  'runtime.createState'({ handle, dtype, shape, options }) {
    const s = get(handle, 'Runtime').createState(dtype, shape, options);
    return { __state: keep(s), name: s.name, dtype: s.dtype, shape: s.shape, device: s.device };
  },
  'runtime.explain': ({ handle, graph: ref }) => get(handle, 'Runtime').explain(graph(ref)),
  'runtime.copyStats': ({ handle }) => get(handle, 'Runtime').copyStats(),
  'runtime.profileStart': ({ handle }) => get(handle, 'Runtime').profileStart(),
  'runtime.profileStop': ({ handle }) => get(handle, 'Runtime').profileStop(),
  'runtime.clear': ({ handle }) => get(handle, 'Runtime').clear(),
  'runtime.dispose': drop,
  'graph.free': ({ gid }) => { objects.delete(`graph:${gid}`); },

  async 'model.load'({ source, options }, progress, signal) {
    const model = await engine.SentenceEmbedder.load(source, loadOptions(options, progress, signal));
    return {
      handle: keep(model), dim: model.dim, maxTokens: model.maxTokens, devices: model.devices,
      notes: model.notes, source: model.source ?? null,
    };
  },
  async 'model.embed'({ handle, texts }) {
    const embs = await get(handle, 'SentenceEmbedder').embed(texts);
    return { value: embs, transfer: embs.flatMap(transferable) };
  },
  'model.encode': ({ handle, text }) => get(handle, 'SentenceEmbedder').encode(text),
  'model.explain': ({ handle }) => get(handle, 'SentenceEmbedder').explain(),
  'model.copyStats': ({ handle }) => get(handle, 'SentenceEmbedder').copyStats(),
  'model.profileStart': ({ handle }) => get(handle, 'SentenceEmbedder').profileStart(),
  'model.profileStop': ({ handle }) => get(handle, 'SentenceEmbedder').profileStop(),
  'model.dispose': drop,

  async 'tokenizer.fromGguf'({ source, options }, progress, signal) {
    const tok = await engine.Tokenizer.fromGguf(source, loadOptions(options, progress, signal));
    const r = { handle: keep(tok), source: tok.source ?? null };
    for (const k of TOKENIZER_GETTERS) r[k] = tok[k];
    return r;
  },
  'tokenizer.encode'({ handle, text, options }) {
    const ids = get(handle, 'Tokenizer').encode(text, options);
    return { value: ids, transfer: transferable(ids) };
  },
  'tokenizer.decode': ({ handle, ids, options }) => get(handle, 'Tokenizer').decode(ids, options),
  'tokenizer.stream': ({ handle, options }) => ({ handle: keep(get(handle, 'Tokenizer').stream(options)) }),
  'tokenizer.token': ({ handle, id }) => get(handle, 'Tokenizer').token(id),
  'tokenizer.dispose': drop,
  'stream.push': ({ handle, id }) => get(handle, 'TokenStream').push(id),
  'stream.finish': ({ handle }) => get(handle, 'TokenStream').finish(),
  'stream.dispose': drop,

  async 'state.read'({ handle }) {
    const v = await get(handle, 'State').read();
    return { value: v, transfer: transferable(v) };
  },
  'state.zero': ({ handle }) => get(handle, 'State').zero(),
  'state.dispose': drop,

  async 'generator.load'({ source, options }, progress, signal) {
    const g = await engine.TextGenerator.load(source, loadOptions(options, progress, signal));
    return {
      handle: keep(g), contextSize: g.contextSize, vocabSize: g.vocabSize, arch: g.arch, name: g.name ?? null,
      chatTemplate: g.chatTemplate, devices: g.devices, notes: g.notes, source: g.source ?? null,
    };
  },
  'generator.generate': ({ handle, prompt, options }) => ({ handle: keep(get(handle, 'TextGenerator').generate(prompt, options)) }),
  'generator.chat': ({ handle, messages, options }) => ({ handle: keep(get(handle, 'TextGenerator').chat(messages, options)) }),
  'generator.encode'({ handle, text, options }) {
    const ids = get(handle, 'TextGenerator').encode(text, options);
    return { value: ids, transfer: transferable(ids) };
  },
  'generator.decode': ({ handle, ids }) => get(handle, 'TextGenerator').decode(ids),
  'generator.cachedTokens': ({ handle }) => get(handle, 'TextGenerator').cachedTokens(),
  'generator.reset': ({ handle }) => get(handle, 'TextGenerator').reset(),
  'generator.explain': ({ handle }) => get(handle, 'TextGenerator').explain(),
  'generator.profileStart': ({ handle }) => get(handle, 'TextGenerator').profileStart(),
  'generator.profileStop': ({ handle }) => get(handle, 'TextGenerator').profileStop(),
  'generator.dispose': drop,
  'generation.nextPiece': ({ handle }) => get(handle, 'Generation').nextPiece(),
  'generation.result': ({ handle }) => get(handle, 'Generation').result(),
  'generation.abort': ({ handle }) => get(handle, 'Generation').abort(),
  'generation.dispose': drop,

  'gpu.read': ({ handle }) => get(handle, 'GpuTensor').read(),
  'gpu.dispose': drop,
};

const reply = (msg, transfer = []) => postMessage(msg, transfer);

let chain = Promise.resolve();

self.addEventListener('message', ({ data }) => {
  if (data?.abort !== undefined) {
    const q = queued.get(data.abort);
    if (q) { q.aborted = true; q.controller.abort(); }
    return;
  }
  const { id, op, args } = data ?? {};
  const entry = { aborted: false, controller: new AbortController() };
  queued.set(id, entry);
  chain = chain.then(async () => {
    if (entry.aborted) {
      queued.delete(id);
      reply({ id, error: { name: 'AbortError', code: 'ABORTED', message: 'the call was aborted before it started' } });
      return;
    }
    try {
      const fn = OPS[op];
      if (!fn) throw new WebtensorError('INVALID_ARGUMENT', `unknown call ${op}`);
      if (op !== 'init' && !engine) throw new WebtensorError('WORKER_FAILED', 'webtensor is not loaded in this worker');
      const progress = (stage, loaded, total) => reply({ id, progress: [stage, loaded, total] });
      const out = await fn(args ?? {}, progress, entry.controller.signal);
      if (out && typeof out === 'object' && 'transfer' in out && 'value' in out) reply({ id, result: out.value }, out.transfer);
      else reply({ id, result: out });
    } catch (e) {
      reply({ id, error: errorToMessage(e) });
    } finally {
      queued.delete(id);
    }
  });
});

postMessage({ ready: true });
