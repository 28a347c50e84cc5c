// A small static server for the built demo (www/dist): right MIME types for .wasm, and the
// COOP/COEP headers (Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy:
// require-corp) that make a page cross-origin isolated, so it has SharedArrayBuffer and the
// loader takes a threaded build.
// CLI: node scripts/serve.mjs [dir] [--no-isolation] ; port from $PORT (default 8080), host
// 127.0.0.1. --no-isolation leaves the headers out (the page then runs on one thread and
// says why).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.json': 'application/json', '.css': 'text/css',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.gguf': 'application/octet-stream',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Serves `dir` on 127.0.0.1:`port` (0 = any free port); resolves to the listening server.
 * Options: `isolate` (default true) sends COOP/COEP; `headers` adds response headers.
 */
export function startServer(dir, port = 8080, { isolate = true, headers = {} } = {}) {
  const isolation = isolate
    ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' }
    : {};
  const root = path.resolve(dir);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found'); return; }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
        ...isolation,
        'cache-control': 'no-cache',
        ...headers,
      });
      res.end(data);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const dir = args.find((a) => !a.startsWith('--')) || 'www/dist';
  const isolate = !args.includes('--no-isolation');
  const port = Number(process.env.PORT || 8080);
  const server = await startServer(dir, port, { isolate });
  console.log(`webtensor demo: http://127.0.0.1:${server.address().port}/  (serving ${dir}, ` +
    `${isolate ? 'cross-origin isolated' : 'without COOP/COEP: one thread'}; Ctrl-C stops)`);
}
