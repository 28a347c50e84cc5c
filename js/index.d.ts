// Types of the loader (js/index.js); the exports are those of any one build (simd128/webtensor.d.ts).
export type Build = 'threads-relaxed' | 'threads' | 'simd128-relaxed' | 'simd128';
export interface LoadOptions { threads?: number; build?: Build; workerTimeoutMs?: number }
export interface Loaded { build: Build; threads: number; simd: string; reasons: string[] }
export declare const BUILDS: Build[];
export declare const DEFAULT_MAX_THREADS: number;
export declare function detect(): { isolated: boolean; sharedMemory: boolean; workers: boolean; relaxedSimd: boolean; cores: number };
export declare function choose(options?: LoadOptions): { build: Build; threads: number; reasons: string[] };
export declare function load(options?: LoadOptions): Promise<typeof import('./simd128/webtensor.js') & { loaded: Loaded; memory: WebAssembly.Memory }>;
