// A minimal ONNX model, encoded by hand (protobuf): Y[n, m] = MatMul(X[n, k], W[k, m]) with W a
// constant initializer (as model weights are), so runtimes may pre-pack it.

function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const bytes = (field, data) => [...key(field, 2), ...varint(data.length), ...data];
const str = (field, s) => bytes(field, [...new TextEncoder().encode(s)]);
const int = (field, v) => [...key(field, 0), ...varint(v)];

function valueInfo(name, dims) {
  const shape = dims.flatMap((d) => bytes(1, int(1, d)));
  const tensorType = [...int(1, 1 /* FLOAT */), ...bytes(2, shape)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

/** ONNX bytes of `X[n,k] · W[k,m]`, W filled from `w` (Float32Array of k*m). */
export function matmulModel(n, k, m, w) {
  const raw = new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
  const init = [...int(1, k), ...int(1, m), ...int(2, 1), ...str(8, 'W'), ...bytes(9, raw)];
  const node = [...str(1, 'X'), ...str(1, 'W'), ...str(2, 'Y'), ...str(3, 'mm'), ...str(4, 'MatMul')];
  const graph = [
    ...bytes(1, node), ...str(2, 'matmul'), ...bytes(5, init),
    ...bytes(11, valueInfo('X', [n, k])), ...bytes(12, valueInfo('Y', [n, m])),
  ];
  const opset = [...str(1, ''), ...int(2, 13)];
  return new Uint8Array([...int(1, 8), ...str(2, 'webtensor-bench'), ...bytes(7, graph), ...bytes(8, opset)]);
}
