// wllama peer for the text-generation benchmark (bench/generate.html): llama.cpp's server in
// wasm (npm @wllama/wllama, version pinned in bench/package.json) on the same GGUF file.
//
//   const m = await loadWllamaGenerator({ modelUrl, threads: 2, nCtx: 1024 });
//   const r = await m.generate('the of and ...', 128, { maxTokens: 65, ban: [3, 4, ...] });
//   // { promptTokens, generatedTokens, ttftMs, prefillTokensPerS, decodeTokensPerS, ... }
//
// Loading as bench/peers/wllama-minilm.js does (the memory64 + JSPI build, no CDN compat
// fallback, n_threads, n_gpu_layers 0, the model handed over as a Blob, the worker's wasm memory
// read by a listener added to its source), with n_ctx = the context asked for, one slot
// (n_parallel 1) and wllama's defaults otherwise (n_batch, KV cache type, flash attention).
// A generation is one createCompletion, streamed (onData) so the page sees the first token:
//   - prompt: a text (wllama 3.8.1 fails with "Invalid typed array length" on a prompt of token
//     ids), tokenized by llama.cpp; the run must have taken exactly `promptTokens` tokens;
//     cache_prompt false, so every run prefills the whole prompt;
//   - temperature 0 (greedy), ignore_eos (EOS/EOT banned: every run makes max_tokens tokens);
//   - logit_bias bans `ban` (token ids whose text is not whole UTF-8: llama-server's JSON
//     writer throws "invalid UTF-8 byte" on random-weight output otherwise,
//     bench/generate-facts.py lists them).
// Timings are llama-server's (the last chunk's `timings`): prefill = prompt_n / prompt_ms;
// decode = (predicted_n - 1) / predicted_ms, since predicted_ms runs from the end of the
// prompt, so covers the first token's sampling and predicted_n - 1 decode steps (webtensor's
// decodeTokensPerS is also decode steps per second). ttftMs: the page's clock, from the call to
// the first streamed token (it includes the worker's message round trip).
import { Wllama, LogLevel } from '../node_modules/@wllama/wllama/esm/index.js';
import { hasJspi, hasMemory64, withMemoryProbe, askMemory } from './wllama-minilm.js';

const WASM_URL = new URL('../node_modules/@wllama/wllama/esm/wasm/wllama.wasm', import.meta.url).href;

export async function loadWllamaGenerator({ modelUrl, threads = 1, nCtx = 1024, log = false } = {}) {
  if (!hasJspi() || !hasMemory64()) {
    throw new Error(
      `wllama needs WebAssembly JSPI and memory64 (JSPI ${hasJspi()}, memory64 ${hasMemory64()}); ` +
        'its compat build would come from a CDN, which this benchmark does not use',
    );
  }
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
      n_ctx: nCtx,
      n_parallel: 1, // one slot with the whole context (wllama's default 4 would split it)
      log_level: log ? LogLevel.INFO : LogLevel.WARN,
    }),
  ).catch(async (err) => {
    await wllama.exit().catch(() => {});
    throw err;
  });
  const info = wllama.getLoadedContextInfo();
  if (info.success === false || !(info.n_ctx > 0)) {
    const why = recent.filter((l) => l.startsWith('error:')).join('\n') || recent.slice(-10).join('\n');
    await wllama.exit().catch(() => {});
    throw new Error(`wllama could not load ${modelUrl}:\n${why}`);
  }

  return {
    threads: wllama.getNumThreads(),
    nCtx: info.n_ctx,
    async generate(prompt, promptTokens, { maxTokens, ban = [] }) {
      let first = null;
      let timings = null;
      let text = '';
      const t0 = performance.now();
      await wllama.createCompletion({
        prompt,
        max_tokens: maxTokens,
        temperature: 0,
        cache_prompt: false,
        ignore_eos: true,
        logit_bias: ban.map((id) => [id, false]),
        stream: true,
        onData: (chunk) => {
          if (first === null && chunk.choices?.[0]?.text) first = performance.now();
          text += chunk.choices?.[0]?.text ?? '';
          if (chunk.timings) timings = chunk.timings;
        },
      });
      if (!timings) throw new Error('wllama: no timings in the answer');
      if (timings.prompt_n !== promptTokens) {
        throw new Error(`wllama ran ${timings.prompt_n} prompt tokens, not ${promptTokens}`);
      }
      return {
        promptTokens: timings.prompt_n,
        generatedTokens: timings.predicted_n,
        ttftMs: (first ?? performance.now()) - t0,
        prefillMs: timings.prompt_ms,
        prefillTokensPerS: (timings.prompt_n * 1e3) / timings.prompt_ms,
        decodeTokensPerS: ((timings.predicted_n - 1) * 1e3) / timings.predicted_ms,
        text,
      };
    },
    memoryBytes() {
      return askMemory(worker);
    },
    async dispose() {
      await wllama.exit();
    },
  };
}
