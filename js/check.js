// Option checks shared by the loader (index.js), the in-thread engine (engine.js) and the
// worker's proxy (proxy.js): the same wrong option gives the same message in every mode.
import { WebtensorError } from './errors.js';

/** How an option's value reads in an error message. */
export const typeName = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/** Throws unless `signal` is undefined or an AbortSignal. */
export function checkSignal(signal) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new WebtensorError('INVALID_ARGUMENT', `option signal must be an AbortSignal, got ${typeName(signal)}`);
  }
}

/** Throws unless `f` is undefined or a function. */
export function checkCallback(name, f) {
  if (f !== undefined && typeof f !== 'function') throw new WebtensorError('INVALID_ARGUMENT', `option ${name} must be a function, got ${typeName(f)}`);
}
