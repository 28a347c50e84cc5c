// The page's side of the engine worker (worker.js): the same classes and functions as the
// in-thread module (engine.js), each call a message to the worker. What changes:
//   - every method returns a Promise (encode, explain, copyStats and clear too);
//   - `Graph` records its calls here and the worker builds the graph at its first run/explain
//     (the calls after that are sent once each); a bad call's error comes from that run, and
//     `shape()` cannot answer here: it throws, naming the way out;
//   - run outputs and embeddings are transferred from the worker (not copied); inputs are
//     the caller's, so they are copied;
//   - Tokenizer.stream() resolves to a TokenStream whose push/finish are Promises too (the
//     decoder lives in the worker, next to the vocabulary; calls answer in order); one the page
//     drops is freed in the worker when it is garbage-collected;
//   - `{ signal }` (an AbortSignal) on run, embed and SentenceEmbedder.load rejects the call
//     with an AbortError: a call still queued never runs, a download stops, a computation
//     already running finishes in the worker and its result is dropped.
// An error in the worker rejects the call with an Error carrying the original message; a
// worker that dies rejects every call in flight and every later one, with the reason.

import { checkCallback, checkSignal } from './check.js';
import { WebtensorError, errorFromMessage } from './errors.js';

function abortError(signal) {
  const r = signal?.reason;
  if (r instanceof Error) return r;
  const e = new Error(r === undefined ? 'the call was aborted' : String(r));
  e.name = 'AbortError';
  e.code = 'ABORTED';
  return e;
}

export class Link {
  constructor(worker) {
    this.worker = worker;
    this.pending = new Map();
    this.nextId = 1;
    this.dead = null;
    worker.addEventListener('message', ({ data }) => this.receive(data));
    worker.addEventListener('error', (e) => {
      e.preventDefault?.();
      this.fail(`the webtensor worker stopped: ${e.message || 'an error without a message (a module that failed to load?)'}`);
    });
    worker.addEventListener('messageerror', () => this.fail('the webtensor worker sent a message that could not be read'));
  }

  receive(data) {
    const p = this.pending.get(data?.id);
    if (!p) return;
    if (data.progress) { p.onProgress?.(...data.progress); return; }
    this.pending.delete(data.id);
    p.signal?.removeEventListener('abort', p.onAbort);
    if (data.error) {
      p.reject(errorFromMessage(data.error));
    } else {
      p.resolve(data.result);
    }
  }

  fail(why) {
    if (!this.dead) { this.dead = why; this.onDead?.(); }
    for (const p of this.pending.values()) p.reject(new WebtensorError('WORKER_FAILED', this.dead));
    this.pending.clear();
  }

  /** Sends one call; `signal` aborts it, `onProgress` gets its progress messages. */
  call(op, args = {}, { signal, onProgress, transfer = [] } = {}) {
    if (this.dead) return Promise.reject(new WebtensorError('WORKER_FAILED', this.dead));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const p = { resolve, reject, onProgress, signal };
      if (signal) {
        p.onAbort = () => {
          this.pending.delete(id);
          this.worker.postMessage({ abort: id });
          reject(abortError(signal));
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.pending.set(id, p);
      try {
        this.worker.postMessage({ id, op, args }, transfer);
      } catch (e) {
        this.pending.delete(id);
        signal?.removeEventListener('abort', p.onAbort);
        reject(new WebtensorError('INVALID_ARGUMENT', `cannot send this call to the webtensor worker: ${e.message}`));
      }
    });
  }

  terminate() {
    this.worker.terminate();
    this.fail('the webtensor worker was terminated (webtensor.terminate())');
  }
}

// name → [positions of tensor ids among the arguments, whether it returns a new tensor].
// Every Graph method of the bindings is here but for the in-thread ones (shape);
// scripts/check-js-surface.mjs (run by scripts/test.sh) checks it against webtensor.d.ts.
export const GRAPH_CALLS = {
  input: [[], true], weight: [[], true], output: [[0], false], setName: [[0], false],
  add: [[0, 1], true], sub: [[0, 1], true], mul: [[0, 1], true], div: [[0, 1], true],
  scale: [[0], true], matmul: [[0, 1], true], softmax: [[0, 1], true], norm: [[0], true],
  rmsNorm: [[0], true], gelu: [[0], true], geluErf: [[0], true], silu: [[0], true],
  relu: [[0], true], rope: [[0, 1], true], cpy: [[0], true], cont: [[0], true],
  concat: [[0, 1], true], sumRows: [[0], true], mean: [[0], true], argmax: [[0], true],
  getRows: [[0, 1], true], reshape: [[0], true], view: [[0], true], permute: [[0], true],
  transpose: [[0], true], tanh: [[0], true], sigmoid: [[0], true], exp: [[0], true],
  neg: [[0], true], sqr: [[0], true], sqrt: [[0], true], clamp: [[0], true],
  setRows: [[0, 1, 2], true], state: [[], true], attention: [[0, 1, 2, 3], true],
};

/** The Tokenizer getters the worker sends at fromGguf: the proxy's fields (they never change). */
/**
 * Makes `gen` (a Generation: `nextPiece()` resolves to the next text piece or undefined) an
 * async iterator of its pieces: `for await (const piece of gen)`. An aborted `signal` ends it
 * with the signal's reason at the next pull (the piece in flight finishes: the model stays
 * consistent), and `result().stopReason` is then "aborted" (the generation's `abort()`). In
 * both modes (engine.js in this thread, the proxy in worker mode).
 */
export function asStream(gen, signal) {
  let done = false;
  let aborted = false;
  // Tells the generation once (its abort() ends it where it stands).
  const abort = async () => {
    if (aborted || !signal?.aborted) return;
    aborted = true;
    await gen.abort();
  };
  const result = gen.result.bind(gen);
  gen.result = async () => { await abort(); return result(); };
  gen.next = async () => {
    if (done) return { done: true, value: undefined };
    if (signal?.aborted) {
      done = true;
      await abort();
      throw signal.reason ?? new DOMException('the generation was aborted', 'AbortError');
    }
    const value = await gen.nextPiece();
    if (value === undefined) done = true;
    return done ? { done: true, value: undefined } : { done: false, value };
  };
  gen.return = async () => {
    done = true;
    return { done: true, value: undefined };
  };
  gen[Symbol.asyncIterator] = () => gen;
  return gen;
}

export const TOKENIZER_GETTERS = ['model', 'pre', 'length', 'bos', 'eos', 'eot', 'pad', 'unk', 'addBos', 'addEos'];

/** Builds the proxied module over a started worker link. */
export function proxyModule(link, loaded, cache) {
  const graphs = new FinalizationRegistry((gid) => { if (!link.dead) link.call('graph.free', { gid }).catch(() => {}); });
  let nextGid = 1;

  class Graph {
    #gid = nextGid++;
    #calls = [];
    #sent = 0;
    #count = 0;
    constructor() { graphs.register(this, this.#gid); }
    get length() { return this.#count; }
    shape() {
      throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', 'Graph.shape() needs the engine in this thread, and it runs in a worker: load({ worker: false }) runs it here');
    }
    /** The calls the worker has not seen yet (internal). */
    _take() {
      return { gid: this.#gid, from: this.#sent, calls: this.#calls.slice(this.#sent) };
    }
    _sent(ref) { this.#sent = Math.max(this.#sent, ref.from + ref.calls.length); }
    _record(method, args) {
      const [tensorArgs, returnsId] = GRAPH_CALLS[method];
      for (const k of tensorArgs) {
        const t = args[k];
        if (t === undefined || t === null) continue;
        if (!Number.isInteger(t) || t < 0 || t >= this.#count) throw new WebtensorError('INVALID_ARGUMENT', `tensor ${t} is not in this graph`);
      }
      if (method === 'weight' && ArrayBuffer.isView(args[3])) args[3] = args[3].slice(); // the caller may reuse its array
      this.#calls.push([method, args, tensorArgs, returnsId]);
      if (returnsId) return this.#count++;
      return undefined;
    }
  }
  for (const method of Object.keys(GRAPH_CALLS)) {
    Object.defineProperty(Graph.prototype, method, {
      value: function (...args) { return this._record(method, args); },
      writable: true, configurable: true,
    });
  }

  const graphRef = (g) => {
    if (!(g instanceof Graph)) throw new WebtensorError('INVALID_ARGUMENT', 'graph must be a webtensor Graph');
    return g._take();
  };
  // Sends a graph's new calls with a call; weights recorded since are transferred (the copies
  // are ours). The calls count as sent once the worker has them, whatever the answer.
  const withGraph = async (g, op, args, opts = {}) => {
    const ref = graphRef(g);
    const transfer = ref.calls.filter((c) => c[0] === 'weight' && ArrayBuffer.isView(c[1][3])).map((c) => c[1][3].buffer);
    const p = link.call(op, { ...args, graph: ref }, { ...opts, transfer: [...(opts.transfer ?? []), ...transfer] });
    g._sent(ref);
    return p;
  };

  // Every dispose() in worker mode returns a Promise that resolves once the worker freed the
  // memory (the object is unusable at once); for these three a worker already gone frees
  // nothing and is no error.
  const freed = (call) => call.then(() => {}, () => {});

  class GpuTensor {
    #handle; #disposed = false;
    constructor(ref) {
      this.#handle = ref.__gpuTensor;
      this.dtype = ref.dtype;
      this.shape = ref.shape;
      this.device = ref.device;
    }
    get disposed() { return this.#disposed; }
    _ref() {
      if (this.#disposed) throw new WebtensorError('DISPOSED', 'this GpuTensor was disposed');
      return { __gpuTensor: this.#handle };
    }
    read() {
      if (this.#disposed) return Promise.reject(new WebtensorError('DISPOSED', 'this GpuTensor was disposed'));
      return link.call('gpu.read', { handle: this.#handle });
    }
    dispose() {
      if (this.#disposed) return Promise.resolve();
      this.#disposed = true;
      return freed(link.call('gpu.dispose', { handle: this.#handle }));
    }
  }

  class State {
    #handle; #disposed = false;
    constructor(ref) {
      this.#handle = ref.__state;
      this.name = ref.name;
      this.dtype = ref.dtype;
      this.shape = ref.shape;
      this.device = ref.device;
    }
    get disposed() { return this.#disposed; }
    _ref() {
      if (this.#disposed) throw new WebtensorError('DISPOSED', 'this State was disposed');
      return { __state: this.#handle };
    }
    read() {
      if (this.#disposed) return Promise.reject(new WebtensorError('DISPOSED', 'this State was disposed'));
      return link.call('state.read', { handle: this.#handle });
    }
    zero() {
      if (this.#disposed) return Promise.reject(new WebtensorError('DISPOSED', 'this State was disposed'));
      return link.call('state.zero', { handle: this.#handle });
    }
    dispose() {
      if (this.#disposed) return Promise.resolve();
      this.#disposed = true;
      return freed(link.call('state.dispose', { handle: this.#handle }));
    }
  }

  // A model's load(source, options) in the worker: the callback and the signal stay here (the
  // worker reports progress and the call can be aborted), the rest goes with the call.
  const loadCall = (op, source, options) => {
    let args = { source, options };
    let opts = {};
    if (options && typeof options === 'object' && !Array.isArray(options)) {
      const { onProgress, signal, ...rest } = options;
      checkCallback('onProgress', onProgress);
      checkSignal(signal);
      // A relative URL means what it means on this page, not next to the worker's script.
      const base = typeof source === 'string' ? globalThis.document?.baseURI ?? globalThis.location?.href : undefined;
      args = { source, options: { ...rest, ...(onProgress ? { onProgress: true } : {}), ...(base ? { base } : {}) } };
      opts = { signal, onProgress };
    } else if (typeof source === 'string' && options === undefined) {
      args = { source, options: { base: globalThis.document?.baseURI ?? globalThis.location?.href } };
    }
    return link.call(op, args, opts);
  };

  // Generations and generators the page forgets are freed in the worker when collected here.
  const generations = new FinalizationRegistry((handle) => { if (!link.dead) link.call('generation.dispose', { handle }).catch(() => {}); });

  class Generation {
    #handle; #disposed = false;
    constructor(handle) { this.#handle = handle; generations.register(this, handle, this); }
    nextPiece() { return this.#call('generation.nextPiece'); }
    result() { return this.#call('generation.result'); }
    abort() { return this.#call('generation.abort'); }
    dispose() {
      if (this.#disposed) return Promise.resolve();
      this.#disposed = true;
      generations.unregister(this);
      return freed(link.call('generation.dispose', { handle: this.#handle }));
    }
    #call(op) {
      if (this.#disposed) return Promise.reject(new WebtensorError('DISPOSED', 'this Generation was disposed'));
      return link.call(op, { handle: this.#handle });
    }
  }

  class TextGenerator {
    #handle;
    constructor(r) {
      this.#handle = r.handle;
      for (const k of ['contextSize', 'vocabSize', 'arch', 'name', 'chatTemplate', 'devices', 'notes', 'source']) this[k] = r[k];
    }
    static async load(source, options) {
      return new TextGenerator(await loadCall('generator.load', source, options));
    }
    // Both return at once; the worker starts them at the first pull (bad options reject there).
    generate(prompt, options) { return this.#start('generator.generate', { prompt }, options); }
    chat(messages, options) { return this.#start('generator.chat', { messages }, options); }
    #start(op, args, options) {
      let signal;
      let rest = options;
      if (options && typeof options === 'object' && !Array.isArray(options)) ({ signal, ...rest } = options);
      checkSignal(signal);
      const started = link.call(op, { handle: this.#handle, ...args, options: rest });
      const ready = started.then((r) => new Generation(r.handle));
      ready.catch(() => {}); // reported by the first pull
      const stream = {
        nextPiece: () => ready.then((g) => g.nextPiece()),
        result: () => ready.then((g) => g.result()),
        abort: () => ready.then((g) => g.abort()),
        dispose: () => ready.then((g) => g.dispose(), () => {}),
      };
      return asStream(stream, signal);
    }
    encode(text, options) { return link.call('generator.encode', { handle: this.#handle, text, options }); }
    decode(ids) { return link.call('generator.decode', { handle: this.#handle, ids }); }
    cachedTokens() { return link.call('generator.cachedTokens', { handle: this.#handle }); }
    reset() { return link.call('generator.reset', { handle: this.#handle }); }
    explain() { return link.call('generator.explain', { handle: this.#handle }); }
    profileStart() { return link.call('generator.profileStart', { handle: this.#handle }); }
    profileStop() { return link.call('generator.profileStop', { handle: this.#handle }); }
    dispose() { return link.call('generator.dispose', { handle: this.#handle }); }
  }

  class Runtime {
    #handle;
    constructor(r) { this.#handle = r.handle; this.devices = r.devices; this.notes = r.notes; }
    static async create(options) {
      return new Runtime(await link.call('runtime.create', { options }));
    }
    run(graph, inputs, options) {
      try {
        let rest = options;
        let signal;
        if (options && typeof options === 'object' && !Array.isArray(options)) {
          ({ signal, ...rest } = options);
          checkSignal(signal);
        }
        let ins = inputs;
        if (inputs && typeof inputs === 'object' && !Array.isArray(inputs) && !ArrayBuffer.isView(inputs)) {
          ins = {};
          for (const [k, v] of Object.entries(inputs)) ins[k] = v instanceof GpuTensor || v instanceof State ? v._ref() : v;
        }
        return withGraph(graph, 'runtime.run', { handle: this.#handle, inputs: ins, options: rest }, { signal })
          .then((outs) => {
            for (const [k, v] of Object.entries(outs)) if (v && v.__gpuTensor) outs[k] = new GpuTensor(v);
            return outs;
          });
      } catch (e) {
        return Promise.reject(e);
      }
    }
    async createState(dtype, shape, options) {
      return new State(await link.call('runtime.createState', { handle: this.#handle, dtype, shape, options }));
    }
    async explain(graph) { return withGraph(graph, 'runtime.explain', { handle: this.#handle }); }
    copyStats() { return link.call('runtime.copyStats', { handle: this.#handle }); }
    profileStart() { return link.call('runtime.profileStart', { handle: this.#handle }); }
    profileStop() { return link.call('runtime.profileStop', { handle: this.#handle }); }
    clear() { return link.call('runtime.clear', { handle: this.#handle }); }
    dispose() { return link.call('runtime.dispose', { handle: this.#handle }); }
  }

  class SentenceEmbedder {
    #handle;
    constructor(r) {
      this.#handle = r.handle;
      this.dim = r.dim;
      this.maxTokens = r.maxTokens;
      this.devices = r.devices;
      this.notes = r.notes;
      this.source = r.source;
    }
    static async load(source, options) {
      return new SentenceEmbedder(await loadCall('model.load', source, options));
    }
    embed(texts, options) {
      try {
        checkSignal(options?.signal);
        return link.call('model.embed', { handle: this.#handle, texts }, { signal: options?.signal });
      } catch (e) {
        return Promise.reject(e);
      }
    }
    encode(text) { return link.call('model.encode', { handle: this.#handle, text }); }
    explain() { return link.call('model.explain', { handle: this.#handle }); }
    copyStats() { return link.call('model.copyStats', { handle: this.#handle }); }
    profileStart() { return link.call('model.profileStart', { handle: this.#handle }); }
    profileStop() { return link.call('model.profileStop', { handle: this.#handle }); }
    dispose() { return link.call('model.dispose', { handle: this.#handle }); }
  }

  // A stream the page forgets is freed in the worker when it is garbage-collected here.
  const streams = new FinalizationRegistry((handle) => { if (!link.dead) link.call('stream.dispose', { handle }).catch(() => {}); });

  class TokenStream {
    #handle; #disposed = false;
    constructor(r) { this.#handle = r.handle; streams.register(this, r.handle, this); }
    push(id) { return this.#call('stream.push', { id }); }
    finish() { return this.#call('stream.finish'); }
    dispose() {
      if (this.#disposed) return Promise.resolve();
      this.#disposed = true;
      streams.unregister(this);
      return link.call('stream.dispose', { handle: this.#handle });
    }
    #call(op, args) {
      if (this.#disposed) return Promise.reject(new WebtensorError('DISPOSED', 'this TokenStream was disposed'));
      return link.call(op, { handle: this.#handle, ...args });
    }
  }

  class Tokenizer {
    #handle;
    constructor(r) {
      this.#handle = r.handle;
      for (const k of TOKENIZER_GETTERS) this[k] = r[k];
      this.source = r.source;
    }
    static async fromGguf(source, options) {
      let sent = options; // anything but an object goes as it is: the engine's error names it
      let opts = {};
      const isObject = options && typeof options === 'object' && !Array.isArray(options);
      if (isObject) {
        const { onProgress, signal, ...rest } = options;
        checkCallback('onProgress', onProgress);
        checkSignal(signal);
        sent = { ...rest, ...(onProgress ? { onProgress: true } : {}) };
        opts = { signal, onProgress };
      }
      // A relative URL means what it means on this page, not next to the worker's script.
      const base = typeof source === 'string' ? globalThis.document?.baseURI ?? globalThis.location?.href : undefined;
      if (base && (isObject || options === undefined)) sent = { ...sent, base };
      return new Tokenizer(await link.call('tokenizer.fromGguf', { source, options: sent }, opts));
    }
    encode(text, options) { return link.call('tokenizer.encode', { handle: this.#handle, text, options }); }
    decode(ids, options) { return link.call('tokenizer.decode', { handle: this.#handle, ids, options }); }
    async stream(options) { return new TokenStream(await link.call('tokenizer.stream', { handle: this.#handle, options })); }
    token(id) { return link.call('tokenizer.token', { handle: this.#handle, id }); }
    dispose() { return link.call('tokenizer.dispose', { handle: this.#handle }); }
  }

  return Object.freeze({
    loaded,
    worker: true,
    cache,
    listDevices: () => link.call('listDevices'),
    vectorAdd: (device, a, b) => link.call('vectorAdd', { device, a, b }),
    buildInfo: () => link.call('buildInfo'),
    gpuBuffers: () => link.call('gpuBuffers'),
    calibrations: () => link.call('calibrations'),
    setCalibrations: (text) => link.call('setCalibrations', { text }),
    Graph,
    Runtime,
    SentenceEmbedder,
    Tokenizer,
    TokenStream,
    GpuTensor,
    State,
    TextGenerator,
    Generation,
    terminate: () => link.terminate(),
  });
}
