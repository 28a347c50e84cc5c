// The headless Chromium that the page tests (tests/e2e/), the benchmarks (bench/*.mjs) and
// the soak test drive: Debian's /usr/bin/chromium (CHROMIUM=path for another) through
// playwright-core, with one set of flags.
import { chromium } from 'playwright-core';

// No sandbox (CI runs as root), /tmp instead of a small /dev/shm, nothing fetched or synced
// in the background (no network here, and no stray load beside a benchmark).
const BASE_ARGS = ['--no-sandbox', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'];

/**
 * Launches Chromium. `webgpu` (default true): WebGPU on (SwiftShader's software adapter here:
 * `--enable-unsafe-webgpu`); `args`: more flags.
 */
export function launchChromium({ webgpu = true, args = [] } = {}) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [...BASE_ARGS, ...(webgpu ? ['--enable-unsafe-webgpu'] : []), ...args],
  });
}

/**
 * Opens `url` in `page` and waits for the page's `window.benchResult` (how the bench pages
 * hand over their figures, as scripts/webdriver.mjs's `benchResult` does for the other
 * engines); returns it.
 */
export async function benchResult(page, url, { timeoutMs = 900_000, pollMs = 200 } = {}) {
  await page.goto(url);
  await page.waitForFunction(() => window.benchResult, null, { timeout: timeoutMs, polling: pollMs });
  return page.evaluate(() => window.benchResult);
}
