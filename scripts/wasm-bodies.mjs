// node scripts/wasm-bodies.mjs FILE.wasm [LIMIT]: prints the largest function bodies' sizes
// in bytes and exits 1 if any is over LIMIT (default 100000: JavaScriptCore never compiles a
// wasm function with its optimizing tier, OMG, when the body is larger than that
// (`maximumOMGCandidateCost`): such a function runs on the baseline tier, 2x slower in
// WebKit; see scripts/wasm-build.sh's wasm-opt flags). Reads the code section itself, so it needs no
// wabt on a clean machine.
import { readFileSync } from 'node:fs';

const [file, limitArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/wasm-bodies.mjs FILE.wasm [LIMIT]');
  process.exit(2);
}
const limit = Number(limitArg ?? 100000);
const bytes = readFileSync(file);
let at = 8; // magic and version
function leb() {
  let value = 0, shift = 0, byte;
  do {
    if (at >= bytes.length) throw new Error(`${file}: truncated LEB128 at byte ${at}`);
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return value;
}
let imported = 0;
const sizes = [];
while (at < bytes.length) {
  const id = bytes[at++];
  const size = leb();
  const end = at + size;
  if (id === 2) {
    // Imports: function indices count the imported functions first.
    const count = leb();
    for (let i = 0; i < count; i++) {
      for (let field = 0; field < 2; field++) {
        const length = leb(); // module, then name
        at += length;
      }
      const kind = bytes[at++];
      if (kind === 0) {
        leb();
        imported++;
      } else if (kind === 1 || kind === 2) {
        if (kind === 1) at++; // reference type
        const flags = bytes[at++];
        leb();
        if (flags & 1) leb();
      } else if (kind === 3) {
        at += 2; // value type, mutability
      } else {
        at++;
        leb();
      }
    }
  } else if (id === 10) {
    const count = leb();
    for (let i = 0; i < count; i++) {
      const body = leb();
      sizes.push({ index: i, size: body });
      at += body;
    }
  }
  at = end;
}
if (!sizes.length) throw new Error(`${file}: no code section`);
sizes.sort((a, b) => b.size - a.size);
const over = sizes.filter((s) => s.size > limit);
const top = sizes.slice(0, 3).map((s) => `#${s.index + imported} ${s.size}`).join(', ');
console.log(`${file}: ${sizes.length} function bodies, largest ${top} bytes (limit ${limit})`);
if (over.length) {
  console.error(`${file}: ${over.length} function bod${over.length > 1 ? 'ies' : 'y'} over ${limit} bytes, `
    + 'which JavaScriptCore (WebKit) never optimizes: split the function or inline less');
  process.exit(1);
}
