// A small W3C WebDriver client, for the page tests and benchmarks that run the same script in
// every engine here (tests/e2e/engines.test.mjs): Chromium (chromedriver), Firefox ESR
// (geckodriver) and WebKitGTK's MiniBrowser (WebKitWebDriver, under Xvfb). playwright-core
// cannot drive the last two with Debian's builds; the Chromium-only tests stay on it
// (scripts/chromium.mjs).
//
//   const b = await launchEngine('firefox');   // 'chromium', 'firefox' or 'webkit'
//   await b.goto(url);
//   const r = await b.evaluate(async (arg) => { ... }, arg, { timeoutMs });
//   await b.close();
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The drivers scripts/setup.sh installs (scripts/.env.sh names them). */
function driverPaths() {
  const env = { ...process.env };
  const file = path.join(ROOT, 'scripts/.env.sh');
  if (fs.existsSync(file)) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/^export (WEBTENSOR_\w+DRIVER)="?([^"\n]*)"?$/gm)) {
      env[m[1]] ??= m[2];
    }
  }
  return {
    chromium: process.env.CHROMEDRIVER || '/usr/bin/chromedriver',
    firefox: env.WEBTENSOR_GECKODRIVER || `${process.env.HOME}/.cache/wasm-toolchain/geckodriver/bin/geckodriver`,
    webkit: env.WEBTENSOR_WEBKITDRIVER || '/usr/bin/WebKitWebDriver',
  };
}

/** Engines this machine can run: name → why not, or null when it can. */
export function engineAvailability() {
  const paths = driverPaths();
  const has = (cmd) => { try { execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }); return true; } catch { return false; } };
  return {
    chromium: !fs.existsSync(paths.chromium) ? `no chromedriver at ${paths.chromium} (chromium-driver, scripts/setup.sh)` : null,
    firefox: !fs.existsSync(paths.firefox) ? `no geckodriver at ${paths.firefox} (scripts/setup.sh)`
      : !has('firefox-esr') && !has('firefox') ? 'no firefox-esr (scripts/setup.sh)' : null,
    webkit: !fs.existsSync(paths.webkit) ? `no WebKitWebDriver at ${paths.webkit} (webkit2gtk-driver, scripts/setup.sh)`
      : !has('xvfb-run') ? 'no xvfb-run (scripts/setup.sh)' : null,
  };
}

/**
 * A test's `skip` option for `engine`: why this machine cannot run it, or false. With
 * E2E_REQUIRE_ENGINES=1 always false, so a missing engine fails the test instead.
 */
export function engineSkip(engine, available = engineAvailability()) {
  const why = available[engine];
  return why && process.env.E2E_REQUIRE_ENGINES !== '1' ? why : false;
}

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.on('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/** The browsers' options for the tests (also wasm-bindgen-test's): headless, WebGPU on. */
const OPTIONS = JSON.parse(fs.readFileSync(path.join(ROOT, 'webdriver.json'), 'utf8'));

/**
 * Starts `engine` ('firefox' headless, or 'webkit': MiniBrowser under Xvfb) through its
 * WebDriver and opens a session. Rejects with the driver's output when it cannot.
 */
export async function launchEngine(engine) {
  const why = engineAvailability()[engine];
  if (why) throw new Error(`${engine}: ${why}`);
  const port = await freePort();
  const paths = driverPaths();
  const [cmd, args] = {
    chromium: [paths.chromium, [`--port=${port}`]],
    firefox: [paths.firefox, ['--port', String(port), '--host', '127.0.0.1']],
    webkit: ['xvfb-run', ['-a', '-s', '-screen 0 1280x1024x24', paths.webkit, `--port=${port}`]],
  }[engine];
  // Its own process group, so that close() ends the driver, the browser and Xvfb together.
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const kill = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  const base = `http://127.0.0.1:${port}`;
  const call = async (method, url, body) => {
    const res = await fetch(base + url, {
      method, headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const v = json.value ?? {};
      throw new Error(`${engine} WebDriver ${method} ${url}: ${v.error ?? res.status}: ${v.message ?? ''}`);
    }
    return json.value;
  };
  // The driver is up once it answers /status (Xvfb first, for WebKit: a few seconds).
  const t0 = Date.now();
  for (;;) {
    try { await call('GET', '/status'); break; } catch (e) {
      if (proc.exitCode !== null || Date.now() - t0 > 30_000) {
        kill();
        throw new Error(`${engine}: its WebDriver did not start (${e.message}); output: ${log.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const capabilities = {
    chromium: { 'goog:chromeOptions': OPTIONS['goog:chromeOptions'] },
    firefox: { 'moz:firefoxOptions': OPTIONS['moz:firefoxOptions'] },
    webkit: {},
  }[engine];
  let session;
  try {
    session = await call('POST', '/session', { capabilities: { alwaysMatch: capabilities } });
  } catch (e) {
    kill();
    throw new Error(`${e.message}; driver output: ${log.slice(-2000)}`);
  }
  const id = session.sessionId;
  const caps = session.capabilities ?? {};
  return {
    engine,
    /** The browser's name and version, as its driver reports them. */
    version: `${caps.browserName ?? engine} ${caps.browserVersion ?? '?'}`,
    goto: (url) => call('POST', `/session/${id}/url`, { url }),
    /**
     * Runs `fn(arg)` (an async function; its source is sent, so it must not close over
     * anything) in the page and returns its JSON-able result; a rejection becomes an Error
     * here with the page's message.
     */
    async evaluate(fn, arg, { timeoutMs = 300_000 } = {}) {
      await call('POST', `/session/${id}/timeouts`, { script: timeoutMs });
      const script = `const done = arguments[arguments.length - 1];
        (${fn.toString()})(arguments[0]).then(
          (value) => done({ value }),
          (e) => done({ error: String(e && e.message || e), stack: String(e && e.stack || '') }));`;
      const r = await call('POST', `/session/${id}/execute/async`, { script, args: [arg ?? null] });
      if (r && 'error' in r) throw new Error(`in ${engine}: ${r.error}\n${r.stack}`);
      return r?.value;
    },
    /**
     * Opens `url` and waits for the page's `window.benchResult` (how the bench pages hand
     * over their figures), polling every `pollMs`; returns it.
     */
    async benchResult(url, { timeoutMs = 900_000, pollMs = 200 } = {}) {
      await this.goto(url);
      return this.evaluate(async (ms) => {
        while (!window.benchResult) await new Promise((r) => setTimeout(r, ms));
        return window.benchResult;
      }, pollMs, { timeoutMs });
    },
    async close() {
      try { await call('DELETE', `/session/${id}`); } catch { /* the browser may be gone */ }
      kill();
    },
  };
}
