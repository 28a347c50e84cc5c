// Types of the package entry (js/index.js). The engine's own classes are those of any one
// build (simd128/webtensor.d.ts); in worker mode (the default) the page gets proxies of them
// whose methods all return Promises.
import type * as Engine from './simd128/webtensor.js';

export type Build = 'threads-relaxed' | 'threads' | 'simd128-relaxed' | 'simd128';
export interface LoadOptions {
  /** Run the engine in a module Worker (default: true in a page, false inside a worker). */
  worker?: boolean;
  /** CPU threads (1..64; default navigator.hardwareConcurrency, at most 8). */
  threads?: number;
  /** Force a build (for tests). */
  build?: Build;
  /** How long a worker (the engine's, a pool thread's) may take to start, in ms (default 20000). */
  workerTimeoutMs?: number;
}
/**
 * The cost model's device calibrations kept across page loads (Cache API, cache
 * "webtensor-calibration-v1"): how many were restored at load, and why none were (or '').
 */
export interface CalibrationInfo { restored: number; note: string }
export interface Loaded { build: Build; threads: number; simd: string; reasons: string[]; worker: boolean; calibration: CalibrationInfo }
export declare const BUILDS: Build[];
export declare const DEFAULT_MAX_THREADS: number;
export declare function detect(): { isolated: boolean; sharedMemory: boolean; workers: boolean; relaxedSimd: boolean; cores: number };
export declare function choose(options?: LoadOptions): { build: Build; threads: number; reasons: string[] };

/**
 * Every Error webtensor throws or rejects with has a stable `code` (these strings do not change
 * once released) and a message for people. Branch on `code`, never on the message.
 */
export type ErrorCode =
  /** Bad input: shapes, dtypes, options, a malformed graph, an out-of-range read. */
  | 'INVALID_ARGUMENT'
  /** An op (with these dtypes) that no chosen device runs (`op`, `dtype`, `device`). */
  | 'UNSUPPORTED_OP'
  /** A well-formed model file webtensor does not run: an architecture, tokenizer, RoPE scaling, tensor type or GGUF version (`file`, and `key` or `tensor`). */
  | 'UNSUPPORTED_MODEL'
  /** A malformed, truncated or inconsistent model file (`file`, and `key`, `tensor` or `offset` where one place is to blame). */
  | 'BAD_MODEL_FILE'
  /** More memory than a device or buffer allows (`size`, `max` where known; `device`). */
  | 'OUT_OF_MEMORY'
  /** The GPU device was lost (`device`): create the runtime or model again, or use the CPU. */
  | 'DEVICE_LOST'
  /** Any other device failure (`device`). */
  | 'DEVICE_ERROR'
  /** No device of the kind or name asked for (`device`). */
  | 'NO_DEVICE'
  /** The object was disposed. */
  | 'DISPOSED'
  /** The object is running another call: await it first. */
  | 'BUSY'
  /** A download failed: an HTTP status, a broken connection, a wrong URL, a digest mismatch. */
  | 'NETWORK'
  /** The engine's worker could not start, or stopped. */
  | 'WORKER_FAILED'
  /** This page cannot run webtensor, or the build asked for (no WebAssembly SIMD, no Cache API, …). */
  | 'UNSUPPORTED_ENVIRONMENT'
  /** On the package's own AbortErrors (their `name` is 'AbortError', as the platform's). */
  | 'ABORTED';
export declare const ERROR_CODES: readonly ErrorCode[];
/**
 * The Error webtensor throws (in worker mode and not: `e instanceof WebtensorError`). An
 * aborted call rejects with the signal's reason instead (an `AbortError`; the package's own
 * AbortErrors carry `code: 'ABORTED'`).
 */
export declare class WebtensorError extends Error {
  constructor(code: ErrorCode, message: string, fields?: Partial<WebtensorErrorFields>);
  name: 'WebtensorError';
  readonly code: ErrorCode;
}
export interface WebtensorError extends Partial<WebtensorErrorFields> {}
/** What an error names, where one thing is to blame. */
export interface WebtensorErrorFields {
  op: string;
  dtype: string;
  device: string;
  tensor: string;
  key: string;
  offset: number;
  file: string;
  size: number;
  max: number;
}

/** Where a model's bytes came from (SentenceEmbedder.load with a URL). */
export interface ModelSource { url: string; fromCache: boolean; bytes: number; ms: number; note: string }
export interface CachedModel { url: string; bytes: number; sha256: string; etag: string; stored: string }
export interface ModelCache {
  readonly name: string;
  list(): Promise<CachedModel[]>;
  delete(url: string): Promise<boolean>;
  clear(): Promise<boolean>;
}
export declare const cache: ModelCache;

export interface LoadModelOptions {
  device?: 'auto' | 'webgpu' | 'cpu';
  costModel?: boolean;
  onProgress?: (stage: string, loaded: number, total: number) => void;
  /** Read and write the model cache (default true). */
  cache?: boolean;
  signal?: AbortSignal;
}
export interface CallOptions { signal?: AbortSignal }
export type Inputs = Record<string, Float32Array | Int32Array | Uint8Array | GpuTensorProxy | StateProxy>;
export type Outputs = Record<string, Float32Array | Int32Array | Uint8Array | GpuTensorProxy>;

/** Options of `Tokenizer.fromGguf` (for a URL: how it is fetched). */
export interface TokenizerSourceOptions {
  /** "cache" or "download" progress, in bytes. */
  onProgress?: (stage: string, loaded: number, total: number) => void;
  /** Read and write the model cache (default true). */
  cache?: boolean;
  signal?: AbortSignal;
}

/** Options of `TextGenerator.load` through the package (a URL goes through the model cache). */
export interface GeneratorLoadOptions extends Engine.GeneratorOptions {
  /** Read and write the model cache (default true). */
  cache?: boolean;
  signal?: AbortSignal;
}
/** What `generate` returns: an async iterator of text pieces (whole UTF-8), then `result()`. */
export interface GenerationStream extends AsyncIterableIterator<string> {
  /** The next piece, or undefined at the end. */
  nextPiece(): Promise<string | undefined>;
  /** The text so far, the tokens, why it ended and its timings (a Promise: after an abort it first tells the generation). */
  result(): Promise<Engine.GenerationResult>;
  /** Ends it now: later pulls give nothing, and `result().stopReason` is "aborted" (what an aborted `signal` does). */
  abort(): Promise<void> | void;
  /** Ends it and frees it (a Promise in worker mode, as every worker-mode dispose()). */
  dispose(): Promise<void> | void;
}
/** `generate`'s options through the package: the engine's, and an AbortSignal. */
export type GenerateCallOptions = Engine.GenerateOptions & { signal?: AbortSignal };

/** In-thread mode ({ worker: false }): the build's exports. */
export type ThreadModule = typeof Engine & {
  loaded: Loaded;
  memory: WebAssembly.Memory;
  cache: ModelCache;
  worker: false;
  SentenceEmbedder: typeof Engine.SentenceEmbedder & {
    load(source: string | Uint8Array | Blob, options?: LoadModelOptions): Promise<Engine.SentenceEmbedder & { source: ModelSource | null }>;
  };
  TextGenerator: typeof Engine.TextGenerator & {
    load(source: string | Uint8Array | Blob, options?: GeneratorLoadOptions): Promise<Omit<Engine.TextGenerator, 'generate' | 'chat'> & {
      source: ModelSource | null;
      generate(prompt: string | Uint32Array | number[], options?: GenerateCallOptions): GenerationStream;
      chat(messages: Engine.ChatMessage[], options?: GenerateCallOptions): GenerationStream;
    }>;
  };
  /** fromGguf is async here (it may fetch a URL through the model cache). */
  Tokenizer: Omit<typeof Engine.Tokenizer, 'fromGguf'> & {
    fromGguf(source: string | Uint8Array, options?: TokenizerSourceOptions): Promise<Engine.Tokenizer & { source: ModelSource | null }>;
  };
};

export interface GpuTensorProxy {
  readonly dtype: string;
  readonly shape: number[];
  readonly device: string;
  readonly disposed: boolean;
  read(): Promise<Float32Array | Int32Array | Uint8Array>;
  /** Frees its memory (resolves once freed); later uses throw. */
  dispose(): Promise<void>;
}
/** A State in worker mode (memory kept across runs on one device; it lives in the worker). */
export interface StateProxy {
  readonly name: string;
  readonly dtype: string;
  readonly shape: number[];
  readonly device: string;
  readonly disposed: boolean;
  read(): Promise<Float32Array | Int32Array>;
  zero(): Promise<void>;
  /** Frees its memory (resolves once freed); later uses throw. */
  dispose(): Promise<void>;
}
export interface RuntimeProxy {
  readonly devices: string[];
  readonly notes: string[];
  /** Memory kept across runs on one device, zeroed; give it as the input named after a graph's state leaf. */
  createState(dtype: 'f32' | 'f16' | 'i32', shape: number[], options?: Engine.StateOptions): Promise<StateProxy>;
  run(graph: Engine.Graph, inputs?: Inputs, options?: { keepOnDevice?: boolean; signal?: AbortSignal }): Promise<Outputs>;
  explain(graph: Engine.Graph): Promise<string>;
  copyStats(): Promise<{ perRunBytes: number; perRunWeightBytes: number; oneTimeBytes: number }>;
  /** Starts this runtime's own profile: where its runs spend their time (each node then runs alone). */
  profileStart(): Promise<void>;
  /** Stops it; the profile as a table, most time first. */
  profileStop(): Promise<string>;
  clear(): Promise<void>;
  dispose(): Promise<void>;
}
export interface SentenceEmbedderProxy {
  readonly dim: number;
  readonly maxTokens: number;
  readonly devices: string[];
  readonly notes: string[];
  readonly source: ModelSource | null;
  embed(texts: string[], options?: CallOptions): Promise<Float32Array[]>;
  encode(text: string): Promise<Uint32Array>;
  explain(): Promise<string>;
  copyStats(): Promise<{ perRunBytes: number; perRunWeightBytes: number; oneTimeBytes: number }>;
  /** Starts this model's own profile: where its embeds spend their time (each node then runs alone). */
  profileStart(): Promise<void>;
  /** Stops it; the profile as a table, most time first. */
  profileStop(): Promise<string>;
  dispose(): Promise<void>;
}
/** A Tokenizer in worker mode: its fields are read at fromGguf, its methods are Promises. */
export interface TokenizerProxy {
  /** "llama" (SentencePiece), "gpt2" (byte-level BPE) or "bert" (WordPiece). */
  readonly model: 'llama' | 'gpt2' | 'bert';
  /** The BPE pre-tokenizer (tokenizer.ggml.pre), undefined for the others. */
  readonly pre: string | undefined;
  /** Tokens in the vocabulary. */
  readonly length: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  readonly eot: number | undefined;
  readonly pad: number | undefined;
  readonly unk: number | undefined;
  /** Whether encode with addSpecial puts BOS first / EOS last. */
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly source: ModelSource | null;
  encode(text: string, options?: Engine.EncodeOptions): Promise<Uint32Array>;
  decode(ids: Uint32Array | Int32Array | number[], options?: Engine.DecodeOptions): Promise<string>;
  /** A streaming decoder in the worker. */
  stream(options?: Engine.DecodeOptions): Promise<TokenStreamProxy>;
  token(id: number): Promise<string | undefined>;
  dispose(): Promise<void>;
}
/** A TextGenerator in worker mode: its fields are read at load, its methods are Promises. */
export interface TextGeneratorProxy {
  readonly contextSize: number;
  readonly vocabSize: number;
  readonly arch: string;
  /** The file's general.name, or null. */
  readonly name: string | null;
  /** Whether the file has a chat template (chat() needs one). */
  readonly chatTemplate: boolean;
  readonly devices: string[];
  readonly notes: string[];
  readonly source: ModelSource | null;
  /** Starts a generation (in the worker at the first pull): `for await (const piece of ...)`. */
  generate(prompt: string | Uint32Array | number[], options?: GenerateCallOptions): GenerationStream;
  /** The assistant's answer to a conversation, through the file's chat template. */
  chat(messages: Engine.ChatMessage[], options?: GenerateCallOptions): GenerationStream;
  encode(text: string, options?: Engine.EncodeOptions): Promise<Uint32Array>;
  decode(ids: Uint32Array | number[]): Promise<string>;
  /** Tokens in the cache (the next prompt's shared prefix does not run again). */
  cachedTokens(): Promise<number>;
  reset(): Promise<void>;
  explain(): Promise<string>;
  /** Starts this model's own profile: where its runs spend their time (each node then runs alone). */
  profileStart(): Promise<void>;
  /** Stops it; the profile as a table, most time first. */
  profileStop(): Promise<string>;
  dispose(): Promise<void>;
}
/** A Generation in worker mode (what `generate` streams from). */
export interface GenerationProxy {
  nextPiece(): Promise<string | undefined>;
  result(): Promise<Engine.GenerationResult>;
  abort(): Promise<void>;
  dispose(): Promise<void>;
}
/** Tokenizer.stream() in worker mode: push/finish answer in the order called. */
export interface TokenStreamProxy {
  /** The text this id completes ("" while a character is incomplete). */
  push(id: number): Promise<string>;
  /** What is held (an incomplete character as U+FFFD). */
  finish(): Promise<string>;
  dispose(): Promise<void>;
}
/** Worker mode (the default): the same API through the engine's worker. */
export interface WorkerModule {
  loaded: Loaded;
  worker: true;
  cache: ModelCache;
  listDevices(): Promise<Array<{ name: string; kind: string; description: string; available: boolean; reason?: string; properties: Record<string, unknown> }>>;
  vectorAdd(device: string, a: Float32Array, b: Float32Array): Promise<Float32Array>;
  buildInfo(): Promise<Record<string, unknown>>;
  gpuBuffers(): Promise<{ created: number; live: number; liveBytes: number }>;
  /** The cost model's device calibrations as text (see the README; saved across loads by the engine). */
  calibrations(): Promise<string>;
  /** Seeds calibrations from `calibrations()`'s text; resolves to how many were taken. */
  setCalibrations(text: string): Promise<number>;
  /** Records calls here; the worker builds it at its first run. shape() throws in this mode. */
  Graph: typeof Engine.Graph;
  Runtime: { create(options?: { device?: 'auto' | 'webgpu' | 'cpu'; costModel?: boolean } | null): Promise<RuntimeProxy> };
  SentenceEmbedder: { load(source: string | Uint8Array | Blob, options?: LoadModelOptions): Promise<SentenceEmbedderProxy> };
  Tokenizer: { fromGguf(source: string | Uint8Array, options?: TokenizerSourceOptions): Promise<TokenizerProxy> };
  TokenStream: new (...args: never[]) => TokenStreamProxy;
  GpuTensor: new (...args: never[]) => GpuTensorProxy;
  State: new (...args: never[]) => StateProxy;
  TextGenerator: { load(source: string | Uint8Array | Blob, options?: GeneratorLoadOptions): Promise<TextGeneratorProxy> };
  Generation: new (...args: never[]) => GenerationProxy;
  /** Stops the worker: calls in flight and later ones reject. */
  terminate(): void;
}

export declare function load(options: LoadOptions & { worker: false }): Promise<ThreadModule>;
export declare function load(options?: LoadOptions & { worker?: true }): Promise<WorkerModule>;
export declare function load(options?: LoadOptions): Promise<WorkerModule | ThreadModule>;
