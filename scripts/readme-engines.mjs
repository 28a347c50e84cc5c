#!/usr/bin/env node
// The README's browser support table, generated from the test run.
//
// tests/e2e/engines.test.mjs (the test command's end-to-end step) runs MiniLM in Chromium,
// Firefox and WebKitGTK and writes what it saw to target/e2e/engines.json; this script renders
// that as the table (`table`, which the test also uses for target/e2e/engines.md) and
//
//   node scripts/readme-engines.mjs          checks the README's table against the run:
//                                            exits 1 when a column other than the version
//                                            and the times differs (build, threads, reasons,
//                                            WebGPU, shader-f16, cosines to 4e-5), prints a
//                                            changed version as a note;
//   node scripts/readme-engines.mjs --write  puts the run's table into README.md between
//                                            the `browser-table` markers.
//
// The table between the markers is never edited by hand: a change of behaviour in one engine
// (another build picked, WebGPU gone, an embedding drifting) fails the test command until the
// README says so.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const ROOT = path.resolve(import.meta.dirname, '..');
const BEGIN = '<!-- browser-table:begin (scripts/readme-engines.mjs --write; not edited by hand) -->';
const END = '<!-- browser-table:end -->';
const HEADER = ['Engine', 'Version', 'Build picked (threads)', 'Why not a faster one', 'WebGPU', '`shader-f16`',
  'MiniLM min cosine f32 / Q8_0 (CPU; WebGPU f32)', 'embed 6 sentences ms f32 / Q8_0 (CPU; WebGPU f32)'];
// Columns the check compares: all but the version (1, a note) and the times (7).
const CHECKED = [0, 2, 3, 4, 5, 6];
const COSINE_TOLERANCE = 4e-5;

/** The table (Markdown) for engines.json's results, with the run's date and commit above it. */
export function table(results, meta = {}) {
  const cell = (s) => String(s).replace(/\|/g, '/');
  const lines = [];
  if (meta.date) lines.push(`From the test run of ${meta.date}${meta.commit ? ` at \`${meta.commit}\`` : ''}:`, '');
  lines.push(`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`);
  for (const r of Object.values(results)) {
    if (!r?.modes?.worker) continue;
    const w = r.modes.worker;
    const c = (k) => w.runs[k] ? w.runs[k].minCosine.toFixed(5) : '—';
    const ms = (k) => w.runs[k] ? w.runs[k].embedMs.toFixed(1) : '—';
    lines.push(`| ${[r.engine, r.version, `${w.build} (${w.threads})`, w.reasons.map(cell).join('; ') || '—',
      w.webgpu === 'no' ? 'no' : cell(w.webgpu).slice(0, 80), w.f16 ?? '—',
      `${c('cpu-f32')} / ${c('cpu-q8_0')}; ${c('webgpu-f32')}`,
      `${ms('cpu-f32')} / ${ms('cpu-q8_0')}; ${ms('webgpu-f32')}`].join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

/** The run's date and commit (`+` when the tree had changes), for the caption. */
export function runMeta() {
  const git = (...a) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  let commit = null;
  try {
    commit = git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+' : '');
  } catch { /* not a git checkout: no commit in the caption */ }
  return { date: new Date().toISOString().slice(0, 10), commit };
}

/** Rows of a Markdown table as arrays of trimmed cells, keyed by the first cell. */
function rows(md) {
  const out = new Map();
  for (const line of md.split('\n')) {
    if (!line.startsWith('|') || /^\|[-|\s]+\|$/.test(line)) continue;
    const cells = line.slice(1, -1).split(' | ').map((s) => s.trim());
    if (cells[0] === HEADER[0]) continue;
    out.set(cells[0], cells);
  }
  return out;
}

/** The differences that fail the check, and the notes that do not. */
export function compare(readmeMd, runMd) {
  const have = rows(readmeMd), want = rows(runMd);
  const errors = [], notes = [];
  for (const [engine, w] of want) {
    const h = have.get(engine);
    if (!h) { errors.push(`${engine}: in this run, not in the README`); continue; }
    if (h[1] !== w[1]) notes.push(`${engine}: version ${h[1]} in the README, ${w[1]} in this run`);
    for (const i of CHECKED) {
      if (h[i] === w[i] || (i === 6 && sameCosines(h[i], w[i]))) continue;
      errors.push(`${engine}: ${HEADER[i]}: README "${h[i]}", this run "${w[i]}"`);
    }
  }
  for (const engine of have.keys()) if (!want.has(engine)) errors.push(`${engine}: in the README, not in this run`);
  return { errors, notes };
}

function sameCosines(a, b) {
  const nums = (s) => s.split(/[ /;]+/).filter(Boolean);
  const x = nums(a), y = nums(b);
  return x.length === y.length && x.every((v, i) => v === y[i] ||
    (Number.isFinite(+v) && Number.isFinite(+y[i]) && Math.abs(+v - +y[i]) <= COSINE_TOLERANCE));
}

/** Where README.md's marked block starts and ends (after BEGIN, at END). */
function markers(readme) {
  const a = readme.indexOf(BEGIN), b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md has no ${BEGIN} … ${END} block`);
  return [a + BEGIN.length, b];
}

/** README.md's text with the block between the markers replaced by `md`. */
export function splice(readme, md) {
  const [a, b] = markers(readme);
  return readme.slice(0, a) + '\n' + md + readme.slice(b);
}

function block(readme) {
  const [a, b] = markers(readme);
  return readme.slice(a, b);
}

function main(argv) {
  const json = path.join(ROOT, 'target/e2e/engines.json');
  if (!fs.existsSync(json)) {
    console.error(`no ${path.relative(ROOT, json)}: run the end-to-end step first (node --test tests/e2e/engines.test.mjs)`);
    return 2;
  }
  const results = JSON.parse(fs.readFileSync(json, 'utf8'));
  const meta = results._meta ?? {};
  delete results._meta;
  const md = table(results, meta);
  const readmePath = path.join(ROOT, 'README.md');
  const readme = fs.readFileSync(readmePath, 'utf8');
  if (argv.includes('--write')) {
    fs.writeFileSync(readmePath, splice(readme, md));
    console.log(`README.md: browser table from the run of ${meta.date ?? '?'} at ${meta.commit ?? '?'}`);
    return 0;
  }
  const { errors, notes } = compare(block(readme), md);
  for (const n of notes) console.log(`note: ${n}`);
  if (errors.length) {
    console.error(`README.md's browser table does not say what this run saw:\n  ${errors.join('\n  ')}\n` +
      'If the change is meant, `node scripts/readme-engines.mjs --write` puts this run\'s table in the README.');
    return 1;
  }
  console.log(`README.md's browser table matches this run (${rows(md).size} engines; versions and times not compared)`);
  return 0;
}
if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
