// webtensor's errors: every Error the package throws or rejects with carries a stable,
// machine-readable `code` (ERROR_CODES) beside its message for people, and, where one place
// is to blame, the fields naming it (op, dtype, device, tensor, key, offset, file, size, max).
// The engine's errors (Rust) and the package's own (JS) are both `WebtensorError`s, and stay
// so across the worker: `e instanceof WebtensorError` and `e.code` hold in worker mode and
// not. Aborted calls reject with the signal's reason (an AbortError) as the platform does.

export const ERROR_CODES = Object.freeze([
  'INVALID_ARGUMENT', // bad input: shapes, dtypes, options, a malformed graph, an out-of-range read
  'UNSUPPORTED_OP', // an op (with these dtypes) no chosen device runs
  'UNSUPPORTED_MODEL', // a well-formed model file webtensor does not run (architecture, tokenizer, …)
  'BAD_MODEL_FILE', // a malformed, truncated or inconsistent model file
  'OUT_OF_MEMORY', // more memory than a device or buffer allows
  'DEVICE_LOST', // the GPU device was lost: make a new runtime or model
  'DEVICE_ERROR', // any other device failure
  'NO_DEVICE', // no device of the kind or name asked for
  'DISPOSED', // the object was disposed
  'BUSY', // the object is running another call: await it first
  'NETWORK', // a download failed (HTTP status, a broken connection, a wrong URL, a digest mismatch)
  'WORKER_FAILED', // the engine's worker could not start, or stopped
  'UNSUPPORTED_ENVIRONMENT', // this page cannot run webtensor (or the build asked for)
  'ABORTED', // on the package's own AbortErrors (named 'AbortError', as the platform's)
]);

export class WebtensorError extends Error {
  /** An Error with `code` (one of ERROR_CODES) and `fields` copied onto it. */
  constructor(code, message, fields = {}) {
    super(message);
    this.name = 'WebtensorError';
    this.code = code;
    Object.assign(this, fields);
  }

  // The engine's errors are plain Errors named WebtensorError with a code (made in wasm):
  // they are instances too.
  static [Symbol.hasInstance](e) {
    return e instanceof Error && e.name === 'WebtensorError' && typeof e.code === 'string';
  }
}

const FIELDS = ['op', 'dtype', 'device', 'tensor', 'key', 'offset', 'file', 'size', 'max'];

/** A structured-clone-safe form of any thrown value, for the worker's replies. */
export function errorToMessage(e) {
  if (!(e instanceof Error) && !(e && typeof e.message === 'string')) return { name: 'Error', message: String(e) };
  const out = { name: e.name || 'Error', message: e.message };
  if (typeof e.code === 'string') out.code = e.code;
  for (const f of FIELDS) if (e[f] !== undefined) out[f] = e[f];
  return out;
}

/** The Error a worker's reply describes (errorToMessage's inverse). */
export function errorFromMessage(m) {
  if (m.name === 'WebtensorError' && typeof m.code === 'string') {
    const fields = {};
    for (const f of FIELDS) if (m[f] !== undefined) fields[f] = m[f];
    return new WebtensorError(m.code, m.message, fields);
  }
  const e = new Error(m.message);
  if (m.name && m.name !== 'Error') e.name = m.name;
  if (typeof m.code === 'string') e.code = m.code;
  return e;
}
