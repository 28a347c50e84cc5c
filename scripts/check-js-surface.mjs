#!/usr/bin/env node
// scripts/check-js-surface.mjs [--pkg DIR] [--js DIR] [--self-test]
//
// One JS surface: the package's public API is written four times, and this checks that they
// agree, printing each difference (which name, which place lacks it) and exiting 1:
//   1. the Rust exports (src/wasm/*.rs), as wasm-bindgen wrote them into a built package's
//      <build>/webtensor.d.ts (every build under --pkg, default pkg/, that has one);
//   2. js/worker.js's call table OPS (the engine's worker);
//   3. js/proxy.js: GRAPH_CALLS (Graph's recorded methods) and the proxy classes and module
//      that proxyModule() returns (the page's side in worker mode, the default);
//   4. js/index.d.ts: WorkerModule and the RuntimeProxy / SentenceEmbedderProxy /
//      TokenizerProxy / TokenStreamProxy / GpuTensorProxy / StateProxy interfaces.
// The rules:
//   - every Graph method of the bindings is in GRAPH_CALLS and every GRAPH_CALLS name is a
//     Graph method (its tensor-argument positions within the method's parameters), but for
//     GRAPH_EXEMPT; a Graph getter is a member of the proxy's Graph;
//   - every method, static method and getter of Runtime, SentenceEmbedder, Tokenizer,
//     TokenStream, GpuTensor and State (the classes of PROXIED) is a
//     member of the proxy class and of its index.d.ts interface (a static one: of
//     WorkerModule's Runtime / SentenceEmbedder), and every (static) method has its worker op
//     (`runtime.run`, `model.embed`, `gpu.read`), but for CLASS_EXEMPT; and back: every such
//     op, proxy member and interface member is in the bindings, or in JS_ONLY;
//   - every free function is a worker op, a member of proxyModule()'s module and of
//     WorkerModule, but for FUNCTION_EXEMPT; and back, but for JS_ONLY;
//   - a class of the bindings that this script does not know is an error (add its rules);
//   - an exemption that no longer applies (the name is gone from the bindings, or the name is
//     covered after all) is an error too, so the lists stay true.
// proxy.js and worker.js are imported (worker.js with `self` and `postMessage` stubbed), so
// the tables read are the ones that run. OK: one summary line, exit 0.
//
// --self-test: shows that the check fails. It runs the check on temporary copies of js/ and of
// a d.ts with one difference made in each (a GRAPH_CALLS entry removed, a worker op removed, a
// proxy method removed, an index.d.ts member removed, a Graph method and a free function added
// to the bindings, an exempt method removed from them), and asserts exit 1 and the expected
// message each time (and exit 0 on the unchanged copies). scripts/test.sh runs the check,
// then the self-test, right after the step that builds pkg/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUILDS = ['simd128', 'simd128-relaxed', 'threads', 'threads-relaxed'];

// ---------------------------------------------------------------------------- exemptions
// Each: name → why it is not (or need not be) in worker mode. `gated`: the name exists only in
// some builds (a cargo feature, the threaded builds), so it is looked for in src/wasm/*.rs
// when the d.ts read lacks it, instead of being called stale.

/** Graph methods of the bindings that are not in GRAPH_CALLS (documented as in-thread only). */
const GRAPH_EXEMPT = {
  // wasm-bindgen's own: frees the Rust object; the proxy's Graph is freed by the worker when
  // the page's Graph is garbage-collected (proxy.js's FinalizationRegistry, op graph.free).
  free: 'wasm-bindgen memory management; worker mode frees through graph.free',
  '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  // Answers synchronously from the built graph, which in worker mode exists only in the worker:
  // the proxy's Graph.shape() throws, naming load({ worker: false }) (README, js/README.md).
  shape: 'in-thread only: needs the engine in the calling thread (the proxy throws)',
};

/** Members of the proxied classes that worker mode does not have, per class. */
const CLASS_EXEMPT = {
  Runtime: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  SentenceEmbedder: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  Tokenizer: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  TokenStream: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  GpuTensor: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
    // How Runtime.run (Rust) recognizes a device tensor among its inputs; the page's proxy
    // tensors travel as { __gpuTensor: handle } and the worker swaps in the real one.
    __webtensorGpuTensor: 'internal: marks a GpuTensor for Runtime.run inside the engine',
  },
  TextGenerator: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  Generation: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
  },
  State: {
    free: 'wasm-bindgen memory management; worker mode has dispose()',
    '[Symbol.dispose]': 'wasm-bindgen memory management (same as free)',
    // As for GpuTensor: the page's proxy states travel as { __state: handle }.
    __webtensorState: 'internal: marks a State for Runtime.run inside the engine',
  },
};

/** Free functions of the bindings that are not worker ops / WorkerModule members. */
const FUNCTION_EXEMPT = {
  // #[wasm_bindgen(start)] (src/wasm/mod.rs): runs by itself when the module is instantiated.
  start: { why: 'wasm-bindgen start function: runs at instantiation (the panic hook)' },
  initThreadPool: { why: 'the loader (engine.js) calls it at load, inside the worker in worker mode' },
  setLoadNote: { why: 'the loader (engine.js) calls it at load' },
  threadPoolProbe: { why: 'for tests, in-thread (tests/e2e/threads.test.mjs)' },
  __webtensorPoolWorker: { why: 'each thread-pool worker runs it (js/thread_pool.js)', gated: 'threaded builds' },
  simdPeakProbe: { why: 'benchmarks only, in-thread', gated: 'cargo feature bench' },
};

/** Classes of the bindings that worker mode does not proxy. */
const CLASS_NOT_PROXIED = {
  MatmulBench: { why: 'benchmarks only, in-thread', gated: 'cargo feature bench' },
};

/** What exists only on the JS side (not in the bindings), by place. */
const JS_ONLY = {
  // engine.js's SentenceEmbedder.load sets `source` (where the model's bytes came from).
  SentenceEmbedder: ['source'],
  // engine.js's Tokenizer.fromGguf sets `source` too.
  Tokenizer: ['source'],
  // The worker's own calls: loading the engine, freeing a recorded graph, the model cache.
  ops: ['init', 'graph.free', 'cache.list', 'cache.delete', 'cache.clear'],
  // The module's members that are not the engine's functions.
  module: ['loaded', 'worker', 'cache', 'terminate', 'Graph', 'Runtime', 'SentenceEmbedder', 'Tokenizer', 'TokenStream',
    'GpuTensor', 'State', 'TextGenerator', 'Generation'],
  // engine.js's TextGenerator.load sets `source` too.
  TextGenerator: ['source'],
};

/** The proxied classes: their worker-op prefix and index.d.ts interface. */
const PROXIED = {
  Runtime: { op: 'runtime', iface: 'RuntimeProxy' },
  SentenceEmbedder: { op: 'model', iface: 'SentenceEmbedderProxy' },
  Tokenizer: { op: 'tokenizer', iface: 'TokenizerProxy' },
  TokenStream: { op: 'stream', iface: 'TokenStreamProxy' },
  GpuTensor: { op: 'gpu', iface: 'GpuTensorProxy' },
  State: { op: 'state', iface: 'StateProxy' },
  TextGenerator: { op: 'generator', iface: 'TextGeneratorProxy' },
  Generation: { op: 'generation', iface: 'GenerationProxy' },
};

// wasm-bindgen's own exports of every --target web module (the loader calls them).
const GLUE_FUNCTIONS = new Set(['default', 'initSync']);

// ------------------------------------------------------------------------- d.ts parsing

/** The text without comments (strings kept). */
function stripComments(src) {
  let out = '';
  for (let i = 0; i < src.length;) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      const skipped = src.slice(i, end < 0 ? src.length : end + 2);
      out += skipped.replace(/[^\n]/g, ' '); // keep line starts where they were
      i += skipped.length;
    } else if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += src.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The index just past the bracket that closes the one at `open`. */
function closing(src, open) {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      i = j;
    } else if ('({['.includes(c) || (c === '<' && src[i - 1] !== '<')) depth++;
    else if (')}]'.includes(c) || (c === '>' && src[i - 1] !== '=')) {
      if (--depth === 0) return i + 1;
    }
  }
  throw new Error(`unbalanced bracket at offset ${open}`);
}

/** Splits a body (between braces) into member texts at depth 0 on ; , and newlines. */
function splitMembers(body) {
  const parts = [];
  let depth = 0;
  let cur = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < body.length && body[j] !== c) j += body[j] === '\\' ? 2 : 1;
      cur += body.slice(i, j + 1);
      i = j;
      continue;
    }
    if ('({['.includes(c) || c === '<') depth++;
    else if (')}]'.includes(c) || (c === '>' && body[i - 1] !== '=')) depth--;
    if (depth === 0 && (c === ';' || c === ',' || c === '\n')) {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  // A member continued on the next line (a union, an arrow type) joins its start again.
  const merged = [];
  for (const p of parts.map((s) => s.trim()).filter(Boolean)) {
    const prev = merged.at(-1);
    if (prev !== undefined && (/^(\||&|=>)/.test(p) || /(:|\||&|=>)$/.test(prev))) merged[merged.length - 1] = `${prev} ${p}`;
    else merged.push(p);
  }
  return merged;
}

/**
 * One member's { name, kind, params, type }: kind is method, static, getter (a readonly
 * property or `get`), property, setter, constructor, or call (a call/construct signature).
 */
function parseMember(text) {
  let s = text.trim();
  const mods = new Set();
  for (;;) {
    const m = /^(readonly|static|private|protected|public|get|set|async|declare|abstract)\s+(?=[\w$["'])/.exec(s);
    if (!m) break;
    mods.add(m[1]);
    s = s.slice(m[0].length);
  }
  let name;
  const id = /^(?:[A-Za-z_$][\w$]*|\[[^\]]*\]|"[^"]*"|'[^']*')/.exec(s);
  if (!id || /^new\s*[(<]/.test(s)) return { name: null, kind: 'call', text };
  name = id[0].replace(/^["']|["']$/g, '');
  s = s.slice(id[0].length).trimStart();
  const optional = s.startsWith('?');
  if (optional) s = s.slice(1).trimStart();
  if (s.startsWith('<')) s = s.slice(closing(s, 0)).trimStart();
  if (s.startsWith('(')) {
    const end = closing(s, 0);
    const paramText = s.slice(1, end - 1);
    const params = splitMembers(paramText).map((p) => /^(?:\.\.\.)?([\w$]+)/.exec(p)?.[1] ?? p);
    const type = s.slice(end).replace(/^\s*:\s*/, '').trim();
    let kind = 'method';
    if (name === 'constructor') kind = 'constructor';
    else if (mods.has('get')) kind = 'getter';
    else if (mods.has('set')) kind = 'setter';
    else if (mods.has('static')) kind = 'static';
    return { name, kind, params, type, private: mods.has('private'), optional };
  }
  const type = s.replace(/^:\s*/, '').trim();
  return { name, kind: mods.has('readonly') ? 'getter' : 'property', type, static: mods.has('static'), optional };
}

/** A d.ts file's top-level exported classes, interfaces and functions. */
function parseDts(file) {
  const src = stripComments(fs.readFileSync(file, 'utf8'));
  const out = { classes: new Map(), interfaces: new Map(), functions: new Map() };
  const decl = /^export\s+(?:declare\s+)?(default\s+)?(class|interface|function)\s+([\w$]+)/gm;
  for (let m; (m = decl.exec(src));) {
    const [, isDefault, what, declName] = m;
    const name = isDefault ? 'default' : declName;
    if (what === 'function') {
      const open = src.indexOf('(', m.index + m[0].length);
      const params = splitMembers(src.slice(open + 1, closing(src, open) - 1));
      out.functions.set(name, { name, params });
      continue;
    }
    const open = src.indexOf('{', m.index + m[0].length);
    const body = src.slice(open + 1, closing(src, open) - 1);
    const members = splitMembers(body).map(parseMember).filter((x) => x.name !== null);
    (what === 'class' ? out.classes : out.interfaces).set(name, members);
  }
  return out;
}

/** The members of a type literal `{ a(): T; b: U }`, or [] for any other type. */
function typeLiteralMembers(type) {
  const t = type.trim();
  if (!t.startsWith('{')) return [];
  return splitMembers(t.slice(1, closing(t, 0) - 1)).map(parseMember).filter((x) => x.name !== null);
}

// ---------------------------------------------------------------------------- JS tables

/** GRAPH_CALLS, the proxy's classes and module (proxy.js) and OPS (worker.js), imported. */
async function readJs(jsDir) {
  const proxy = await import(pathToFileURL(path.join(jsDir, 'proxy.js')).href);
  // worker.js runs as a module Worker: give it the worker's globals it touches at load.
  globalThis.self ??= { addEventListener() {} };
  globalThis.postMessage ??= () => {};
  const worker = await import(pathToFileURL(path.join(jsDir, 'worker.js')).href);
  if (!proxy.GRAPH_CALLS || !proxy.proxyModule) throw new Error(`${jsDir}/proxy.js exports no GRAPH_CALLS / proxyModule`);
  if (!worker.OPS) throw new Error(`${jsDir}/worker.js exports no OPS`);
  const link = { dead: null, call: () => Promise.resolve() };
  const mod = proxy.proxyModule(link, {}, {});
  const own = (o) => Object.getOwnPropertyNames(o).filter((k) => !k.startsWith('_'));
  const classes = {};
  for (const name of ['Graph', ...Object.keys(PROXIED)]) {
    const cls = mod[name];
    if (typeof cls !== 'function') throw new Error(`proxyModule() has no class ${name}`);
    // Instance fields come from the constructor: build one from an empty reference.
    const instance = name === 'Graph' ? new cls() : new cls({});
    classes[name] = {
      instance: new Set([...own(cls.prototype), ...own(instance)].filter((k) => k !== 'constructor')),
      statics: new Set(own(cls).filter((k) => !['length', 'name', 'prototype'].includes(k))),
    };
  }
  return { graphCalls: proxy.GRAPH_CALLS, ops: new Set(Object.keys(worker.OPS)), module: new Set(Object.keys(mod)), classes };
}

// ------------------------------------------------------------------------------ the check

/** The differences between the bindings (d.ts files) and the JS (jsDir), as lines. */
async function check({ pkgDir, jsDir }) {
  const problems = [];
  const bad = (msg) => problems.push(msg);

  const read = [];
  const bindings = { classes: new Map(), functions: new Map() };
  for (const b of BUILDS) {
    const f = path.join(pkgDir, b, 'webtensor.d.ts');
    if (!fs.existsSync(f)) continue;
    read.push(b);
    const d = parseDts(f);
    for (const [k, v] of d.functions) if (!bindings.functions.has(k)) bindings.functions.set(k, v);
    for (const [k, members] of d.classes) {
      const known = bindings.classes.get(k) ?? new Map();
      for (const mem of members) {
        const key = `${mem.kind === 'static' ? 'static ' : ''}${mem.name}`;
        if (!known.has(key)) known.set(key, mem);
      }
      bindings.classes.set(k, known);
    }
  }
  if (read.length === 0) {
    return { problems: [`no built webtensor.d.ts under ${pkgDir}/{${BUILDS.join(',')}}/: build the package first (scripts/build-pkg.sh)`], read };
  }
  const dtsName = read.length === 1 ? `${read[0]}/webtensor.d.ts` : `webtensor.d.ts of ${read.join(', ')}`;
  const rustSrc = fs.readdirSync(path.join(ROOT, 'src/wasm')).filter((f) => f.endsWith('.rs'))
    .map((f) => fs.readFileSync(path.join(ROOT, 'src/wasm', f), 'utf8')).join('\n');
  const inRust = (name) => new RegExp(`js_(?:name|class)\\s*=\\s*${name.replace(/\$/g, '\\$')}\\b|pub struct ${name}\\b`).test(rustSrc);

  const js = await readJs(jsDir);
  const types = parseDts(path.join(jsDir, 'index.d.ts'));
  const iface = (n) => {
    const m = types.interfaces.get(n);
    if (!m) bad(`js/index.d.ts has no interface ${n}`);
    return m ?? [];
  };
  const workerModule = iface('WorkerModule');
  const wmNames = new Set(workerModule.map((m) => m.name));
  const members = (cls) => [...(bindings.classes.get(cls)?.values() ?? [])];

  // ---- Graph
  const graph = members('Graph');
  if (graph.length === 0) bad(`${dtsName} has no class Graph`);
  const graphMethods = new Map(graph.filter((m) => m.kind === 'method').map((m) => [m.name, m]));
  for (const [name, m] of graphMethods) {
    if (name in GRAPH_EXEMPT) continue;
    if (!(name in js.graphCalls)) {
      bad(`Graph.${name}: in the bindings (${dtsName}) but not in js/proxy.js GRAPH_CALLS: worker mode lacks it ` +
        '(add it with its tensor-argument positions, or exempt it in GRAPH_EXEMPT with the reason)');
      continue;
    }
    const [tensorArgs, returnsId] = js.graphCalls[name];
    if (!Array.isArray(tensorArgs) || typeof returnsId !== 'boolean' ||
        tensorArgs.some((k) => !Number.isInteger(k) || k < 0 || k >= m.params.length)) {
      bad(`Graph.${name}: GRAPH_CALLS entry ${JSON.stringify(js.graphCalls[name])} does not fit its ${m.params.length} ` +
        `parameters (${m.params.join(', ')}): expected [[tensor-argument positions], returns-a-tensor]`);
    }
  }
  for (const name of Object.keys(js.graphCalls)) {
    if (!graphMethods.has(name)) bad(`Graph.${name}: in js/proxy.js GRAPH_CALLS but not a Graph method of the bindings (${dtsName})`);
  }
  for (const [name, why] of Object.entries(GRAPH_EXEMPT)) {
    if (name === '[Symbol.dispose]' && !graphMethods.has(name)) continue; // wasm-bindgen emits it only with explicit resource management
    if (!graphMethods.has(name)) bad(`GRAPH_EXEMPT.${name} (${why}) is stale: Graph has no method ${name} in ${dtsName}`);
    if (name in js.graphCalls) bad(`GRAPH_EXEMPT.${name} is stale: ${name} is in js/proxy.js GRAPH_CALLS`);
  }
  for (const m of graph) {
    if (m.kind === 'getter' && !js.classes.Graph.instance.has(m.name)) {
      bad(`Graph.${m.name} (getter): in the bindings but not a member of js/proxy.js's Graph`);
    } else if (['static', 'setter', 'property'].includes(m.kind) && !(m.name in GRAPH_EXEMPT)) {
      bad(`Graph.${m.name} (${m.kind}): in the bindings, and the proxy's Graph only records methods (GRAPH_CALLS): proxy it by hand and teach this script, or exempt it`);
    }
  }

  // ---- Runtime, SentenceEmbedder, GpuTensor
  for (const [cls, { op, iface: ifaceName }] of Object.entries(PROXIED)) {
    const bind = members(cls);
    if (bind.length === 0) bad(`${dtsName} has no class ${cls}`);
    const exempt = CLASS_EXEMPT[cls];
    const proxy = js.classes[cls];
    const types = iface(ifaceName);
    const typeNames = new Set(types.map((m) => m.name));
    const staticTypes = new Set(typeLiteralMembers(workerModule.find((m) => m.name === cls)?.type ?? '').map((m) => m.name));
    const bindNames = new Set(bind.map((m) => m.name));
    for (const m of bind) {
      if (m.kind === 'constructor' || m.name in exempt) continue;
      const what = `${cls}.${m.name} (${m.kind === 'static' ? 'static method' : m.kind})`;
      if (m.kind === 'setter' || m.kind === 'property') {
        bad(`${what}: a settable property cannot cross to the worker: make it a method, or exempt it in CLASS_EXEMPT.${cls}`);
        continue;
      }
      const isStatic = m.kind === 'static';
      if ((m.kind === 'method' || isStatic) && !js.ops.has(`${op}.${m.name}`)) {
        bad(`${what}: in the bindings but js/worker.js OPS has no '${op}.${m.name}'`);
      }
      if (!(isStatic ? proxy.statics : proxy.instance).has(m.name)) {
        bad(`${what}: in the bindings but js/proxy.js's ${cls} has no ${isStatic ? 'static ' : ''}member ${m.name}`);
      }
      if (isStatic ? !staticTypes.has(m.name) : !typeNames.has(m.name)) {
        bad(`${what}: in the bindings but js/index.d.ts ${isStatic ? `WorkerModule.${cls}` : ifaceName} has no member ${m.name}`);
      }
    }
    const jsOnly = new Set(JS_ONLY[cls] ?? []);
    for (const k of js.ops) {
      if (k.startsWith(`${op}.`) && !bindNames.has(k.slice(op.length + 1))) {
        bad(`worker op '${k}': in js/worker.js OPS but ${cls} has no member ${k.slice(op.length + 1)} in ${dtsName}`);
      }
    }
    for (const k of [...proxy.instance, ...proxy.statics]) {
      if (!bindNames.has(k) && !jsOnly.has(k)) bad(`${cls}.${k}: a member of js/proxy.js's ${cls} but not of the bindings' ${cls} (nor JS_ONLY.${cls})`);
    }
    for (const k of [...typeNames, ...staticTypes]) {
      if (!bindNames.has(k) && !jsOnly.has(k)) bad(`${cls}.${k}: in js/index.d.ts (${ifaceName} / WorkerModule.${cls}) but not in the bindings' ${cls} (nor JS_ONLY.${cls})`);
    }
    for (const [name, why] of Object.entries(exempt)) {
      if (name === '[Symbol.dispose]' && !bindNames.has(name)) continue;
      if (!bindNames.has(name)) bad(`CLASS_EXEMPT.${cls}.${name} (${why}) is stale: ${cls} has no member ${name} in ${dtsName}`);
    }
  }

  // ---- other classes
  for (const cls of bindings.classes.keys()) {
    if (cls === 'Graph' || cls in PROXIED || cls in CLASS_NOT_PROXIED) continue;
    bad(`class ${cls}: in the bindings (${dtsName}) but neither proxied (js/proxy.js, and PROXIED in this script) nor in CLASS_NOT_PROXIED`);
  }
  for (const [cls, { why, gated }] of Object.entries(CLASS_NOT_PROXIED)) {
    if (!bindings.classes.has(cls) && !(gated && inRust(cls))) bad(`CLASS_NOT_PROXIED.${cls} (${why}) is stale: no class ${cls} in ${dtsName}${gated ? ' nor in src/wasm/' : ''}`);
  }

  // ---- free functions
  const fnNames = new Set([...bindings.functions.keys()].filter((n) => !GLUE_FUNCTIONS.has(n)));
  for (const name of fnNames) {
    if (name in FUNCTION_EXEMPT) continue;
    const lacks = [];
    if (!js.ops.has(name)) lacks.push('js/worker.js OPS');
    if (!js.module.has(name)) lacks.push("js/proxy.js proxyModule()'s module");
    if (!wmNames.has(name)) lacks.push('js/index.d.ts WorkerModule');
    if (lacks.length) bad(`${name}(): a function of the bindings (${dtsName}) missing from ${lacks.join(', ')} (or exempt it in FUNCTION_EXEMPT)`);
  }
  const jsOnlyOps = new Set(JS_ONLY.ops);
  const prefixes = Object.values(PROXIED).map((p) => `${p.op}.`);
  for (const k of js.ops) {
    if (jsOnlyOps.has(k) || prefixes.some((p) => k.startsWith(p))) continue;
    if (!fnNames.has(k)) bad(`worker op '${k}': in js/worker.js OPS but not a function of the bindings (${dtsName}) nor JS_ONLY.ops`);
  }
  for (const k of JS_ONLY.ops) if (!js.ops.has(k)) bad(`JS_ONLY.ops '${k}' is stale: not in js/worker.js OPS`);
  const jsOnlyModule = new Set(JS_ONLY.module);
  for (const k of js.module) {
    if (!jsOnlyModule.has(k) && !fnNames.has(k)) bad(`${k}: in js/proxy.js proxyModule()'s module but not a function of the bindings (${dtsName}) nor JS_ONLY.module`);
  }
  for (const k of wmNames) {
    if (!jsOnlyModule.has(k) && !fnNames.has(k)) bad(`${k}: in js/index.d.ts WorkerModule but not a function of the bindings (${dtsName}) nor JS_ONLY.module`);
  }
  for (const k of JS_ONLY.module) {
    if (!js.module.has(k)) bad(`JS_ONLY.module '${k}' is stale: not in js/proxy.js proxyModule()'s module`);
    if (!wmNames.has(k)) bad(`JS_ONLY.module '${k}': in the proxy's module but not in js/index.d.ts WorkerModule`);
  }
  for (const [name, { why, gated }] of Object.entries(FUNCTION_EXEMPT)) {
    if (!fnNames.has(name) && !(gated && inRust(name))) {
      bad(`FUNCTION_EXEMPT.${name} (${why}) is stale: no function ${name} in ${dtsName}${gated ? ' nor in src/wasm/' : ''}`);
    } else if (js.ops.has(name) && wmNames.has(name)) {
      bad(`FUNCTION_EXEMPT.${name} is stale: ${name} is a worker op and a WorkerModule member`);
    }
  }

  const counts = {
    graph: Object.keys(js.graphCalls).length,
    classes: Object.keys(PROXIED).map((c) => `${c} ${members(c).filter((m) => m.kind !== 'constructor' && !(m.name in CLASS_EXEMPT[c])).length}`).join(', '),
    functions: [...fnNames].filter((n) => !(n in FUNCTION_EXEMPT)).length,
  };
  return { problems, read, counts };
}

async function main(args) {
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i < 0 ? dflt : path.resolve(args[i + 1]);
  };
  const pkgDir = opt('--pkg', path.join(ROOT, 'pkg'));
  const jsDir = opt('--js', path.join(ROOT, 'js'));
  if (args.includes('--self-test')) return selfTest(pkgDir, jsDir);
  const { problems, read, counts } = await check({ pkgDir, jsDir });
  if (problems.length) {
    console.error(`JS surface check: ${problems.length} difference(s) between the wasm-bindgen exports and js/ ` +
      '(scripts/check-js-surface.mjs says what each rule is):');
    for (const p of problems) console.error(`  - ${p}`);
    return 1;
  }
  console.log(`JS surface OK: ${counts.graph} Graph calls, ${counts.classes} members, ${counts.functions} functions agree ` +
    `across the bindings (webtensor.d.ts: ${read.join(', ')}), js/worker.js OPS, js/proxy.js and js/index.d.ts`);
  return 0;
}

// ---------------------------------------------------------------------------- self-test

/** Runs the check on mutated copies of js/ and of one d.ts; each must fail as expected. */
function selfTest(pkgDir, jsDir) {
  const build = BUILDS.find((b) => fs.existsSync(path.join(pkgDir, b, 'webtensor.d.ts')));
  if (!build) {
    console.error(`self-test: no built webtensor.d.ts under ${pkgDir}: build the package first`);
    return 1;
  }
  const dts = fs.readFileSync(path.join(pkgDir, build, 'webtensor.d.ts'), 'utf8');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'webtensor-js-surface-'));
  // Replaces `from` (a string or RegExp) in one file's text; a mutation that does not apply
  // fails the self-test (the file changed: update the case).
  const edit = (file, from, to) => (files) => {
    const before = files[file];
    const after = before.replace(from, to);
    if (after === before) throw new Error(`self-test case does not apply: ${String(from)} not found in ${file}`);
    files[file] = after;
  };
  const graphMethod = /^(\s*)(transpose\(.*;)$/m; // a line of class Graph in the d.ts
  const cases = [
    { name: 'unchanged copies pass', edits: [], expect: null },
    { name: 'a GRAPH_CALLS entry removed', edits: [edit('proxy.js', /\btranspose: \[\[0\], true\],/, '')],
      expect: /Graph\.transpose: in the bindings .* but not in js\/proxy\.js GRAPH_CALLS/ },
    { name: 'a worker op removed', edits: [edit('worker.js', /^\s*'gpu\.read': .*$/m, '')],
      expect: /GpuTensor\.read \(method\): in the bindings but js\/worker\.js OPS has no 'gpu\.read'/ },
    { name: 'a free function\'s worker op removed', edits: [edit('worker.js', /^\s*gpuBuffers: .*$/m, '')],
      expect: /gpuBuffers\(\): a function of the bindings .* missing from js\/worker\.js OPS/ },
    { name: 'a proxy method removed', edits: [edit('proxy.js', /^\s*encode\(text\) \{.*$/m, '')],
      expect: /SentenceEmbedder\.encode \(method\): in the bindings but js\/proxy\.js's SentenceEmbedder has no member encode/ },
    { name: 'a Tokenizer worker op removed', edits: [edit('worker.js', /^\s*'tokenizer\.decode': .*$/m, '')],
      expect: /Tokenizer\.decode \(method\): in the bindings but js\/worker\.js OPS has no 'tokenizer\.decode'/ },
    { name: 'a TokenStream proxy method removed', edits: [edit('proxy.js', /^\s*push\(id\) \{.*$/m, '')],
      expect: /TokenStream\.push \(method\): in the bindings but js\/proxy\.js's TokenStream has no member push/ },
    { name: 'a Tokenizer getter removed from the proxy', edits: [edit('proxy.js', /'eot', /, '')],
      expect: /Tokenizer\.eot \(getter\): in the bindings but js\/proxy\.js's Tokenizer has no member eot/ },
    { name: 'a TokenizerProxy member removed from index.d.ts', edits: [edit('index.d.ts', /^\s*readonly addEos: boolean;$/m, '')],
      expect: /Tokenizer\.addEos \(getter\): in the bindings but js\/index\.d\.ts TokenizerProxy has no member addEos/ },
    { name: 'a static method gone from WorkerModule', edits: [edit('index.d.ts', /^\s*Tokenizer: \{ fromGguf\(.*$/m, '  Tokenizer: {};')],
      expect: /Tokenizer\.fromGguf \(static method\): in the bindings but js\/index\.d\.ts WorkerModule\.Tokenizer has no member fromGguf/ },
    { name: 'an index.d.ts member removed', edits: [edit('index.d.ts', /^\s*copyStats\(\): Promise<.*$/m, '')],
      expect: /Runtime\.copyStats \(method\): in the bindings but js\/index\.d\.ts RuntimeProxy has no member copyStats/ },
    { name: 'a Graph method added to the bindings', edits: [edit('dts', graphMethod, '$1$2\n$1tanhSelfTest(a: number): number;')],
      expect: /Graph\.tanhSelfTest: in the bindings .* but not in js\/proxy\.js GRAPH_CALLS/ },
    { name: 'a free function added to the bindings', edits: [edit('dts', /^export function gpuBuffers\(/m, 'export function selfTestFn(): void;\nexport function gpuBuffers(')],
      expect: /selfTestFn\(\): a function of the bindings .* missing from js\/worker\.js OPS, js\/proxy\.js proxyModule\(\)'s module, js\/index\.d\.ts WorkerModule/ },
    { name: 'an exempt Graph method gone from the bindings (stale exemption)', edits: [edit('dts', /^\s*shape\(t: number\).*$/m, '')],
      expect: /GRAPH_EXEMPT\.shape .* is stale/ },
  ];
  let failed = 0;
  try {
    for (const c of cases) {
      const dir = path.join(tmp, c.name.replace(/\W+/g, '-'));
      const jsCopy = path.join(dir, 'js');
      const pkgCopy = path.join(dir, 'pkg');
      fs.cpSync(jsDir, jsCopy, { recursive: true });
      fs.mkdirSync(path.join(pkgCopy, build), { recursive: true });
      const files = { dts };
      for (const f of ['proxy.js', 'worker.js', 'index.d.ts']) files[f] = fs.readFileSync(path.join(jsCopy, f), 'utf8');
      let why = null;
      try {
        for (const e of c.edits) e(files);
      } catch (e) {
        why = e.message;
      }
      if (!why) {
        fs.writeFileSync(path.join(pkgCopy, build, 'webtensor.d.ts'), files.dts);
        for (const f of ['proxy.js', 'worker.js', 'index.d.ts']) fs.writeFileSync(path.join(jsCopy, f), files[f]);
        const r = spawnSync(process.execPath, [import.meta.filename, '--pkg', pkgCopy, '--js', jsCopy], { encoding: 'utf8' });
        const out = `${r.stdout}${r.stderr}`;
        if (c.expect === null) {
          if (r.status !== 0) {
            console.error(`self-test: the unchanged copies do not pass (exit ${r.status}): the repository's own surface ` +
              `differs, which the check without --self-test names:\n${out}`);
            return 1;
          }
        } else if (r.status !== 1) {
          why = `exit ${r.status}, expected 1:\n${out}`;
        } else if (!c.expect.test(out)) {
          why = `exit 1 but no line matching ${c.expect}:\n${out}`;
        } else {
          why = null;
          const line = out.split('\n').find((l) => c.expect.test(l));
          console.log(`self-test: ${c.name}: fails as it should:\n    ${line.trim()}`);
        }
      }
      if (why) {
        failed++;
        console.error(`self-test: ${c.name}: WRONG: ${why}`);
      } else if (c.expect === null) {
        console.log(`self-test: ${c.name}: passes`);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failed) {
    console.error(`self-test: ${failed} of ${cases.length} cases wrong: the check does not catch what it should`);
    return 1;
  }
  console.log(`self-test OK: ${cases.length} cases (${cases.length - 1} differences each caught, on ${build}'s webtensor.d.ts)`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2)).catch((e) => {
  console.error(`check-js-surface: ${e.stack ?? e}`);
  return 2;
});
