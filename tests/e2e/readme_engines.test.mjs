// scripts/readme-engines.mjs: the check that keeps the README's browser table what the test
// run saw fails on a changed behaviour column, notes a changed version, tolerates a cosine's
// last digit, and --write's splice replaces only the block between the markers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { table, compare, splice } from '../../scripts/readme-engines.mjs';

const run = (over = {}) => ({
  chromium: {
    engine: 'chromium', version: over.version ?? 'chrome 156.0',
    modes: {
      worker: {
        build: over.build ?? 'threads-relaxed', threads: 2, reasons: [], webgpu: 'WebGPU (adapter | x)', f16: false,
        runs: {
          'cpu-f32': { minCosine: over.cos ?? 0.999998, embedMs: 60.6 },
          'cpu-q8_0': { minCosine: 0.99505, embedMs: over.ms ?? 28.2 },
        },
      },
    },
  },
  webkit: {
    engine: 'webkit', version: 'MiniBrowser 2.50.6',
    modes: { worker: { build: 'simd128', threads: 1, reasons: ['no shared memory'], webgpu: 'no', f16: null, runs: {} } },
  },
});

test('the same run compares equal; times and versions do not fail it', () => {
  const readme = table(run());
  assert.deepEqual(compare(readme, table(run())), { errors: [], notes: [] });
  const r = compare(readme, table(run({ ms: 99.9, version: 'chrome 157.0' })));
  assert.deepEqual(r.errors, []);
  assert.equal(r.notes.length, 1);
  assert.match(r.notes[0], /chrome 156\.0 in the README, chrome 157\.0 in this run/);
});

test('a changed build, a drifted cosine or a missing engine fails', () => {
  const readme = table(run());
  assert.match(compare(readme, table(run({ build: 'simd128' }))).errors.join('\n'), /Build picked.*threads-relaxed.*simd128/);
  assert.deepEqual(compare(readme, table(run({ cos: 0.99997 }))).errors, []);  // within 4e-5
  assert.match(compare(readme, table(run({ cos: 0.9991 }))).errors.join('\n'), /cosine/);
  const one = run();
  delete one.webkit;
  assert.match(compare(readme, table(one)).errors.join('\n'), /webkit: in the README, not in this run/);
  assert.match(compare(table(one), readme).errors.join('\n'), /webkit: in this run, not in the README/);
});

test('--write splices between the markers only, and the README has them once', () => {
  const md = table(run(), { date: '2026-12-06', commit: 'abc1234' });
  const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
  const begin = readme.match(/<!-- browser-table:begin[^>]*-->/g), end = readme.match(/<!-- browser-table:end -->/g);
  assert.equal(begin?.length, 1);
  assert.equal(end?.length, 1);
  const out = splice(readme, md);
  assert.ok(out.includes('From the test run of 2026-12-06 at `abc1234`:'));
  const before = readme.slice(0, readme.indexOf(begin[0])), after = readme.slice(readme.indexOf(end[0]));
  assert.ok(out.startsWith(before) && out.endsWith(after));
  assert.throws(() => splice('no markers here', md), /browser-table/);
});
