// Type-checked (tsc --noEmit, by scripts/build-apps.sh) against the installed package's types:
// what a TypeScript user writes must compile, in worker mode and in this thread.
import { load, cache, type WorkerModule, type ThreadModule, type ModelSource } from 'webtensor';

export async function inWorker(): Promise<number> {
  const wt: WorkerModule = await load();
  const model = await wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { device: 'cpu', cache: true, signal: new AbortController().signal });
  const source: ModelSource | null = model.source;
  const [a]: Float32Array[] = await model.embed(['a cat'], { signal: AbortSignal.timeout(1000) });
  const ids: Uint32Array = await model.encode('a cat');
  const rt = await wt.Runtime.create({ device: 'auto' });
  const g = new wt.Graph();
  const x = g.input('x', 'f32', [4]);
  g.output(g.scale(x, 2));
  const outs = await rt.run(g, { x: new Float32Array(4) }, { keepOnDevice: false });
  const plan: string = await rt.explain(g);
  await rt.dispose();
  await model.dispose();
  wt.terminate();
  return a.length + ids.length + Object.keys(outs).length + plan.length + (source?.bytes ?? 0);
}

export async function inThread(): Promise<number> {
  const wt: ThreadModule = await load({ worker: false, threads: 2 });
  const model = await wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { cache: false });
  const ids: Uint32Array = model.encode('a cat');
  const plan: string = model.explain();
  const listed = await cache.list();
  return ids.length + plan.length + listed.length + wt.memory.buffer.byteLength + wt.loaded.threads;
}
