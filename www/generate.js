// The Generate panel: a llama/qwen2/qwen3 GGUF the user picks (a file from disk, read a slice
// at a time in the engine's worker, or a URL through the model cache) on the chosen devices,
// then a conversation streamed piece by piece with tokens/s, Stop (the model stays usable),
// Continue (the same answer, on from where it stopped: the prompt's and the answer's tokens
// are the next prompt, so the cache runs only the last token) and which device runs what.
// A file with a chat template is a chat (TextGenerator.chat over the whole conversation: the
// cache's shared prefix is not run again); one without continues the text typed.
// Nothing is loaded until the user picks a model: the panel never presents a model it chose.
import { webtensor } from './webtensor.js';

const $ = (root, sel) => root.querySelector(sel);
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
const rate = (x) => (x > 0 ? `${x.toFixed(1)} tokens/s` : '—');

export function generateDemo() {
  const section = document.getElementById('generate');
  const status = $(section, '.model-status');
  const bar = $(section, 'progress');
  const transcript = $(section, '.transcript');
  const promptBox = $(section, 'textarea.prompt');
  const stats = $(section, '.stats');
  const buttons = {
    send: $(section, 'button.send'),
    stop: $(section, 'button.stop'),
    cont: $(section, 'button.continue'),
    reset: $(section, 'button.reset'),
    loadUrl: $(section, 'button.load-url'),
  };
  let gen = null;
  let messages = []; // the conversation (chat mode)
  let last = null; // { promptIds, tokens, span, stopReason } of the last generation
  let controller = null; // the running generation's AbortController

  const setState = (state) => {
    section.dataset.state = state;
    const running = state === 'running';
    buttons.send.disabled = !gen || running;
    buttons.stop.disabled = !running;
    buttons.reset.disabled = !gen || running;
    // Continue after a stop or the token limit; after an end-of-text token there is no more.
    buttons.cont.disabled = !gen || running || !last || !['length', 'stopped'].includes(last.stopReason);
  };

  async function load(source, label) {
    controller?.abort();
    const old = gen;
    gen = null;
    last = null;
    messages = [];
    transcript.replaceChildren();
    stats.textContent = '';
    setState('loading');
    await old?.dispose();
    status.textContent = `loading ${label}…`;
    const t0 = performance.now();
    try {
      gen = await webtensor.TextGenerator.load(source, {
        device: $(section, 'select.devices').value,
        onProgress: (stage, loaded, total) => {
          if (total > 0) { bar.max = total; bar.value = loaded; }
          status.textContent = stage === 'devices' ? 'starting devices…' : `${stage}: ${mib(loaded)} / ${mib(total)}`;
        },
      });
    } catch (e) {
      status.textContent = `cannot load ${label}: ${e.message}`;
      setState('error');
      return;
    }
    bar.value = bar.max;
    const ms = performance.now() - t0;
    const mode = gen.chatTemplate ? 'chat (the file\'s chat template)' : 'text completion (the file has no chat template)';
    status.textContent = `${gen.name ?? label}: ${gen.arch}, ${gen.vocabSize} tokens, context ${gen.contextSize}, ` +
      `loaded in ${(ms / 1000).toFixed(2)} s on ${gen.devices.join(' → ')}; ${mode}` +
      (gen.notes.length ? ` — ${gen.notes.join('; ')}` : '');
    Object.assign(section.dataset, { name: gen.name ?? '', mode: gen.chatTemplate ? 'chat' : 'text', loadMs: String(ms) });
    setState('loaded');
  }

  function options() {
    const num = (sel) => Number($(section, sel).value);
    return { maxTokens: num('input.max'), temperature: num('input.temperature'), seed: num('input.seed') };
  }

  function turn(role, text) {
    const div = document.createElement('div');
    div.className = `turn ${role}`;
    const who = document.createElement('span');
    who.className = 'role';
    who.textContent = role === 'user' ? 'You:' : role === 'assistant' ? 'Model:' : '';
    const body = document.createElement('span');
    body.className = 'text';
    body.textContent = text;
    div.append(who, body);
    transcript.append(div);
    return body;
  }

  // Streams `start(signal)`'s pieces into `span`; what it ended with becomes `last`.
  async function stream(start, span) {
    controller = new AbortController();
    const { signal } = controller;
    setState('running');
    const t0 = performance.now();
    let pieces = 0;
    let text = '';
    let failed = null;
    const s = start(signal);
    try {
      for await (const piece of s) {
        text += piece;
        span.textContent += piece;
        pieces++;
        span.dataset.pieces = String(pieces);
        transcript.scrollTop = transcript.scrollHeight;
        const secs = (performance.now() - t0) / 1000;
        stats.textContent = `generating… ${pieces} pieces in ${secs.toFixed(1)} s`;
      }
    } catch (e) {
      if (!signal.aborted) failed = e;
    }
    controller = null;
    if (failed) {
      stats.textContent = `error: ${failed.message}`;
      s.dispose?.();
      setState('error');
      return null;
    }
    const r = await s.result();
    s.dispose?.();
    const stopReason = signal.aborted ? 'stopped' : r.stopReason;
    last = { promptIds: r.promptIds, tokens: r.tokens, span, stopReason };
    stats.textContent = `${r.generatedTokens} tokens (${stopReason}); prompt ${r.promptTokens} tokens, ` +
      `${r.reusedTokens} from the cache, prefill ${rate(r.prefillTokensPerS)}; first token ${r.ttftMs.toFixed(0)} ms; ` +
      `decode ${rate(r.decodeTokensPerS)}`;
    Object.assign(stats.dataset, {
      generated: String(r.generatedTokens), reused: String(r.reusedTokens), decodeTps: String(r.decodeTokensPerS),
      stopReason, tokens: Array.from(r.tokens).join(','),
    });
    $(section, '.explain').textContent = await gen.explain();
    setState(signal.aborted ? 'stopped' : 'done');
    return text;
  }

  async function send() {
    const input = promptBox.value.trim();
    if (!gen || !input) return;
    promptBox.value = '';
    const opts = options();
    if (gen.chatTemplate) {
      messages.push({ role: 'user', content: input });
      turn('user', input);
      const span = turn('assistant', '');
      const text = await stream((signal) => gen.chat(messages, { ...opts, signal }), span);
      if (text !== null) messages.push({ role: 'assistant', content: text });
    } else {
      const span = turn('text', '');
      const p = document.createElement('span');
      p.className = 'prompt-text';
      p.textContent = input;
      span.before(p);
      await stream((signal) => gen.generate(input, { ...opts, signal }), span);
    }
  }

  // The same answer on from where it ended: its prompt and its tokens are the next prompt.
  async function cont() {
    if (!gen || !last) return;
    const ids = new Uint32Array([...last.promptIds, ...last.tokens]);
    const text = await stream((signal) => gen.generate(ids, { ...options(), signal }), last.span);
    if (gen.chatTemplate && text !== null && messages.length) messages[messages.length - 1].content += text;
  }

  async function reset() {
    if (!gen) return;
    await gen.reset();
    messages = [];
    last = null;
    transcript.replaceChildren();
    stats.textContent = '';
    setState('loaded');
  }

  $(section, 'input.file').addEventListener('change', (e) => {
    const file = e.target.files?.[0];
    if (file) load(file, file.name);
  });
  buttons.loadUrl.addEventListener('click', () => {
    const url = $(section, 'input.url').value.trim();
    if (url) load(url, url);
  });
  buttons.send.addEventListener('click', send);
  buttons.stop.addEventListener('click', () => controller?.abort(new Error('stopped by the user')));
  buttons.cont.addEventListener('click', cont);
  buttons.reset.addEventListener('click', reset);
  promptBox.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !buttons.send.disabled) { e.preventDefault(); send(); }
  });
  setState('empty');
}
