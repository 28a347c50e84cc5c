// The MiniLM benchmark pages' inputs (bench/minilm.html, bench/ab.html): texts of exact token
// counts, and the warm-up before timing.
const WORDS = 'the quick brown fox jumps over a lazy dog while seven happy wizards quietly brew potions'.split(' ');

// A text of exactly `n` tokens ([CLS] and [SEP] included) for the MiniLM tokenizer `tok`.
export function textOf(tok, n) {
  const words = [];
  for (let i = 0; tok.tokenize(words.join(' ')).length < n; i++) words.push(WORDS[i % WORDS.length]);
  while (tok.tokenize(words.join(' ')).length > n) words.pop();
  return words.join(' ');
}

// Calls `fn` long enough (3 calls and 1 s) for V8 to tier up every runtime's hot wasm functions.
export async function warmUp(fn) {
  const w0 = performance.now();
  for (let i = 0; i < 3 || performance.now() - w0 < 1000; i++) await fn();
}
