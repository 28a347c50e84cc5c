//! Graph builders: one method per op, each inferring the result's shape and checking operands.

use super::*;

fn shape_err(op: &'static str, msg: String) -> Error {
    Error::Shape { op, msg }
}

fn dtype_err(op: &'static str, dtype: DType, msg: &str) -> Error {
    Error::DType {
        op,
        dtype: format!("{dtype:?}"),
        msg: msg.to_string(),
    }
}

/// Pads a 1-4 element shape with 1s.
fn shape4(op: &'static str, ne: &[usize]) -> Result<[usize; MAX_DIMS]> {
    if ne.is_empty() || ne.len() > MAX_DIMS {
        return Err(shape_err(
            op,
            format!("expected 1 to 4 dims, got {}", ne.len()),
        ));
    }
    let mut out = [1; MAX_DIMS];
    out[..ne.len()].copy_from_slice(ne);
    Ok(out)
}

impl Graph {
    fn new_tensor(
        &mut self,
        op: Op,
        src: Vec<TensorId>,
        dtype: DType,
        ne: [usize; MAX_DIMS],
        role: Role,
    ) -> Result<TensorId> {
        let nb = contiguous_strides(dtype, ne)?;
        let name = format!("{}#{}", op.name(), self.len());
        Ok(self.push(Tensor {
            name,
            dtype,
            ne,
            nb,
            op,
            src,
            view_of: None,
            view_offset: 0,
            role,
            is_output: false,
        }))
    }

    fn node(
        &mut self,
        op: Op,
        src: Vec<TensorId>,
        dtype: DType,
        ne: [usize; 4],
    ) -> Result<TensorId> {
        self.new_tensor(op, src, dtype, ne, Role::Compute)
    }

    /// A caller-provided input of `dtype` and shape `ne` (1 to 4 dims, innermost first).
    pub fn input(&mut self, name: &str, dtype: DType, ne: &[usize]) -> Result<TensorId> {
        let id = self.new_tensor(Op::Leaf, vec![], dtype, shape4("input", ne)?, Role::Input)?;
        self.set_name(id, name)?;
        Ok(id)
    }

    /// A weight (parameter) of `dtype` and shape `ne`, provided once.
    pub fn weight(&mut self, name: &str, dtype: DType, ne: &[usize]) -> Result<TensorId> {
        let id = self.new_tensor(Op::Leaf, vec![], dtype, shape4("weight", ne)?, Role::Weight)?;
        self.set_name(id, name)?;
        Ok(id)
    }

    /// A state of `dtype` and shape `ne`: memory that outlives a run (a KV cache), bound when
    /// the graph runs (a runtime's `State`). Every op may read it; `set_rows` on it (or on an
    /// earlier `set_rows` of it) writes its rows in place, and the state's later readers in
    /// the graph read that result (reading an older version after a write is a plan error).
    pub fn state(&mut self, name: &str, dtype: DType, ne: &[usize]) -> Result<TensorId> {
        if dtype.is_quantized() {
            return Err(dtype_err("state", dtype, "states are f32, f16 or i32"));
        }
        let id = self.new_tensor(Op::Leaf, vec![], dtype, shape4("state", ne)?, Role::State)?;
        self.set_name(id, name)?;
        Ok(id)
    }

    fn expect_dtype(&self, op: &'static str, id: TensorId, allowed: &[DType]) -> Result<&Tensor> {
        let t = self.get(id)?;
        if !allowed.contains(&t.dtype) {
            return Err(dtype_err(op, t.dtype, &format!("takes {allowed:?}")));
        }
        if t.dtype.is_quantized() && !t.rows_contiguous() {
            return Err(shape_err(
                op,
                format!("quantized operand {} must have packed rows", t.name),
            ));
        }
        Ok(t)
    }

    /// Element-wise `a op b`, `b` repeated to `a`'s shape (each `a.ne[i]` a multiple of `b.ne[i]`).
    pub fn binary(&mut self, op: BinaryOp, a: TensorId, b: TensorId) -> Result<TensorId> {
        let name = "binary";
        let ta = self.expect_dtype(name, a, &[DType::F32])?;
        let tb = self.expect_dtype(name, b, &[DType::F32])?;
        if (0..MAX_DIMS).any(|i| tb.ne[i] == 0 || ta.ne[i] % tb.ne[i] != 0) {
            return Err(shape_err(
                name,
                format!(
                    "{op:?}: {} cannot broadcast to {}",
                    tb.shape_str(),
                    ta.shape_str()
                ),
            ));
        }
        let ne = ta.ne;
        self.node(Op::Binary(op), vec![a, b], DType::F32, ne)
    }

    /// `a * s`.
    pub fn scale(&mut self, a: TensorId, s: f32) -> Result<TensorId> {
        let ne = self.expect_dtype("scale", a, &[DType::F32])?.ne;
        self.node(Op::Scale(s), vec![a], DType::F32, ne)
    }

    /// Element-wise function of `a`.
    pub fn unary(&mut self, op: UnaryOp, a: TensorId) -> Result<TensorId> {
        let ne = self.expect_dtype("unary", a, &[DType::F32])?.ne;
        self.node(Op::Unary(op), vec![a], DType::F32, ne)
    }

    /// `a` limited to `[min, max]` (element-wise `min(max(x, min), max)`).
    pub fn clamp(&mut self, a: TensorId, min: f32, max: f32) -> Result<TensorId> {
        let ne = self.expect_dtype("clamp", a, &[DType::F32])?.ne;
        if min.is_nan() || max.is_nan() || min > max {
            return Err(Error::InvalidArgument(format!(
                "clamp: bounds [{min}, {max}] are not an interval"
            )));
        }
        self.node(Op::Clamp { min, max }, vec![a], DType::F32, ne)
    }

    /// `a` (`[ne0, rows, ne2, ne3]`, f32 or f16) with row `idx[j]` replaced by row `j` of `b`
    /// (`[ne0, n, ne2, ne3]`, f32), per batch: `idx` is I32 `[n, c2, c3]`, its dims 1 and 2
    /// repeated over `b`'s dims 2 and 3 (ggml's `set_rows`, the KV-cache write). Where two
    /// `j` name one row the last wins; an index outside `a`'s rows is an error on the CPU and
    /// writes nothing on WebGPU. The result is a new tensor of `a`'s dtype and shape.
    pub fn set_rows(&mut self, a: TensorId, b: TensorId, idx: TensorId) -> Result<TensorId> {
        let op = "set_rows";
        let ta = self.expect_dtype(op, a, &[DType::F32, DType::F16])?;
        let (dtype, ne) = (ta.dtype, ta.ne);
        let tb = self.expect_dtype(op, b, &[DType::F32])?;
        let ti = self.expect_dtype(op, idx, &[DType::I32])?;
        let fits = tb.ne[0] == ne[0]
            && tb.ne[2] == ne[2]
            && tb.ne[3] == ne[3]
            && ti.ne[0] == tb.ne[1]
            && ti.ne[1] != 0
            && ti.ne[2] != 0
            && tb.ne[2] % ti.ne[1] == 0
            && tb.ne[3] % ti.ne[2] == 0
            && ti.ne[3] == 1;
        if !fits {
            return Err(shape_err(
                op,
                format!(
                    "rows {} at indices {} do not fit {}",
                    tb.shape_str(),
                    ti.shape_str(),
                    ta.shape_str()
                ),
            ));
        }
        self.node(Op::SetRows, vec![a, b, idx], dtype, ne)
    }
    /// `a` (`[k, m, ...]`, any of [`DType::WEIGHTS`]) times `b` (`[k, n, ...]`, f32) → `[m, n, ...]`.
    pub fn matmul(&mut self, a: TensorId, b: TensorId) -> Result<TensorId> {
        let op = "matmul";
        let ta = self.expect_dtype(op, a, DType::WEIGHTS)?;
        let tb = self.expect_dtype(op, b, &[DType::F32])?;
        if ta.ne[0] != tb.ne[0] {
            return Err(shape_err(
                op,
                format!(
                    "inner dims differ: {} vs {}",
                    ta.shape_str(),
                    tb.shape_str()
                ),
            ));
        }
        if (2..MAX_DIMS).any(|i| ta.ne[i] == 0 || tb.ne[i] % ta.ne[i] != 0) {
            return Err(shape_err(
                op,
                format!(
                    "batch dims of {} do not broadcast to {}",
                    ta.shape_str(),
                    tb.shape_str()
                ),
            ));
        }
        let ne = [ta.ne[1], tb.ne[1], tb.ne[2], tb.ne[3]];
        self.node(Op::MatMul, vec![a, b], DType::F32, ne)
    }

    /// Row softmax of `a * scale + mask`; `mask` is `[ne0, ne1]` of `a`, repeated over dims 2, 3.
    pub fn softmax(&mut self, a: TensorId, mask: Option<TensorId>, scale: f32) -> Result<TensorId> {
        let op = "softmax";
        let ne = self.expect_dtype(op, a, &[DType::F32])?.ne;
        let mut src = vec![a];
        if let Some(m) = mask {
            let tm = self.expect_dtype(op, m, &[DType::F32])?;
            // Rows of the mask repeat over a's rows, heads and batch (e.g. a key-padding
            // mask `[n_kv, 1, 1, batch]` for scores `[n_kv, n_q, heads, batch]`).
            let ok =
                tm.ne[0] == ne[0] && (1..MAX_DIMS).all(|i| tm.ne[i] != 0 && ne[i] % tm.ne[i] == 0);
            if !ok {
                return Err(shape_err(
                    op,
                    format!("mask {} does not fit {ne:?}", tm.shape_str()),
                ));
            }
            src.push(m);
        }
        self.node(Op::SoftMax { scale }, src, DType::F32, ne)
    }

    /// Scaled dot-product attention of `q` (f32 `[d, n_q, heads, batch]`) over keys `k` and
    /// values `v` (f32 or f16, `[d, n_kv, kv_heads, batch]` and `[d_v, n_kv, kv_heads,
    /// batch]`; views of a longer cache are fine), with an optional additive `mask` (f32
    /// `[n_kv, n_q, ..]`, repeated over heads and batch as in [`Graph::softmax`]):
    /// `softmax(q·kᵀ * scale + mask) · v` per head, `heads` a multiple of `kv_heads` (head
    /// `h` reads KV head `h / (heads / kv_heads)`). Result f32 `[d_v, heads, n_q, batch]`.
    pub fn attention(
        &mut self,
        q: TensorId,
        k: TensorId,
        v: TensorId,
        mask: Option<TensorId>,
        scale: f32,
    ) -> Result<TensorId> {
        let op = "attention";
        let tq = self.expect_dtype(op, q, &[DType::F32])?.clone();
        let tk = self.expect_dtype(op, k, &[DType::F32, DType::F16])?.clone();
        let tv = self.expect_dtype(op, v, &[tk.dtype])?.clone();
        let [d, n_q, heads, batch] = tq.ne;
        let [dk, n_kv, kv_heads, kv_batch] = tk.ne;
        let fail = |what: String| Err(shape_err(op, what));
        if dk != d {
            return fail(format!(
                "q {} and k {} differ in head size",
                tq.shape_str(),
                tk.shape_str()
            ));
        }
        if tv.ne[1..] != tk.ne[1..] {
            return fail(format!(
                "v {} does not match k {} in rows, heads or batch",
                tv.shape_str(),
                tk.shape_str()
            ));
        }
        if kv_heads == 0 || heads % kv_heads != 0 || kv_batch == 0 || batch % kv_batch != 0 {
            return fail(format!(
                "k {} does not broadcast to q {} (heads and batch must be multiples of k's)",
                tk.shape_str(),
                tq.shape_str()
            ));
        }
        let mut src = vec![q, k, v];
        if let Some(m) = mask {
            let tm = self.expect_dtype(op, m, &[DType::F32])?;
            let scores = [n_kv, n_q, heads, batch];
            let ok = tm.ne[0] == n_kv
                && (1..MAX_DIMS).all(|i| tm.ne[i] != 0 && scores[i] % tm.ne[i] == 0);
            if !ok {
                return fail(format!(
                    "mask {} does not fit the scores {scores:?}",
                    tm.shape_str()
                ));
            }
            src.push(m);
        }
        self.node(
            Op::Attention { scale },
            src,
            DType::F32,
            [tv.ne[0], heads, n_q, batch],
        )
    }

    /// Layer norm over rows (no affine; follow with `mul`/`add`).
    pub fn norm(&mut self, a: TensorId, eps: f32) -> Result<TensorId> {
        let ne = self.expect_dtype("norm", a, &[DType::F32])?.ne;
        self.node(Op::Norm { eps }, vec![a], DType::F32, ne)
    }

    /// RMS norm over rows (no affine).
    pub fn rms_norm(&mut self, a: TensorId, eps: f32) -> Result<TensorId> {
        let ne = self.expect_dtype("rms_norm", a, &[DType::F32])?.ne;
        self.node(Op::RmsNorm { eps }, vec![a], DType::F32, ne)
    }

    /// RoPE of `a` (`[head_dim, heads, tokens, batch]`) at positions `pos` (I32 `[tokens]`),
    /// pair `i`'s frequency divided by `factors[i]` where given (f32, `n_dims / 2` values,
    /// contiguous: llama.cpp's freq_factors, Llama 3's `rope_freqs.weight`).
    pub fn rope(
        &mut self,
        a: TensorId,
        pos: TensorId,
        factors: Option<TensorId>,
        p: RopeParams,
    ) -> Result<TensorId> {
        let op = "rope";
        let ne = self.expect_dtype(op, a, &[DType::F32])?.ne;
        let tp = self.expect_dtype(op, pos, &[DType::I32])?;
        if tp.numel() != ne[2] {
            return Err(shape_err(
                op,
                format!("{} positions for {} tokens", tp.numel(), ne[2]),
            ));
        }
        if p.n_dims == 0 || !p.n_dims.is_multiple_of(2) || p.n_dims > ne[0] {
            return Err(shape_err(
                op,
                format!("n_dims {} must be even and ≤ {}", p.n_dims, ne[0]),
            ));
        }
        let mut src = vec![a, pos];
        if let Some(f) = factors {
            let tf = self.expect_dtype(op, f, &[DType::F32])?;
            if tf.numel() != p.n_dims / 2 || !tf.is_contiguous() {
                return Err(shape_err(
                    op,
                    format!(
                        "frequency factors {:?} must be {} contiguous values (n_dims / 2)",
                        tf.ne,
                        p.n_dims / 2
                    ),
                ));
            }
            src.push(f);
        }
        self.node(Op::Rope(p), src, DType::F32, ne)
    }

    /// `a` converted to `dtype`, contiguous (quantizing rows to a dtype whose table row says
    /// `cpy_target`: Q8_0, Q4_0).
    pub fn cpy(&mut self, a: TensorId, dtype: DType) -> Result<TensorId> {
        let op = "cpy";
        let ta = self.get(a)?;
        let (from, to) = (ta.dtype, dtype);
        let ok = if from == DType::I32 || to == DType::I32 {
            from == to
        } else if from.is_quantized() {
            // Dequantizing, or copying blocks as they are.
            (to == from || !to.is_quantized()) && ta.rows_contiguous()
        } else if to.is_quantized() && !to.info().cpy_target {
            return Err(dtype_err(
                op,
                dtype,
                &format!("quantizing to {dtype:?} is not supported yet"),
            ));
        } else {
            true
        };
        if !ok {
            return Err(dtype_err(
                op,
                ta.dtype,
                &format!("cannot convert to {dtype:?}"),
            ));
        }
        let ne = ta.ne;
        self.node(Op::Cpy, vec![a], dtype, ne)
    }

    /// A contiguous copy of `a` (same dtype).
    pub fn cont(&mut self, a: TensorId) -> Result<TensorId> {
        let dtype = self.get(a)?.dtype;
        self.cpy(a, dtype)
    }

    /// `a` and `b` joined along `dim` (all other dims equal, same dtype).
    pub fn concat(&mut self, a: TensorId, b: TensorId, dim: usize) -> Result<TensorId> {
        let op = "concat";
        let ta = self.expect_dtype(op, a, &[DType::F32, DType::I32])?;
        let tb = self.expect_dtype(op, b, &[ta.dtype])?;
        if dim >= MAX_DIMS || (0..MAX_DIMS).any(|i| i != dim && ta.ne[i] != tb.ne[i]) {
            return Err(shape_err(
                op,
                format!("{} and {} along dim {dim}", ta.shape_str(), tb.shape_str()),
            ));
        }
        let mut ne = ta.ne;
        ne[dim] = ne[dim]
            .checked_add(tb.ne[dim])
            .ok_or_else(|| shape_err(op, format!("dim {dim} overflows")))?;
        let dtype = ta.dtype;
        self.node(Op::Concat { dim }, vec![a, b], dtype, ne)
    }

    fn reduce_rows(&mut self, op: Op, a: TensorId, out: DType) -> Result<TensorId> {
        let ne = self.expect_dtype("reduce", a, &[DType::F32])?.ne;
        self.node(op, vec![a], out, [1, ne[1], ne[2], ne[3]])
    }
    /// Sum of each row → `[1, ne1, ne2, ne3]`.
    pub fn sum_rows(&mut self, a: TensorId) -> Result<TensorId> {
        self.reduce_rows(Op::SumRows, a, DType::F32)
    }
    /// Mean of each row → `[1, ne1, ne2, ne3]`.
    pub fn mean(&mut self, a: TensorId) -> Result<TensorId> {
        self.reduce_rows(Op::Mean, a, DType::F32)
    }
    /// Index of each row's maximum → I32 `[1, ne1, ne2, ne3]`.
    pub fn argmax(&mut self, a: TensorId) -> Result<TensorId> {
        self.reduce_rows(Op::Argmax, a, DType::I32)
    }

    /// Rows of `a` (`[ne0, rows, b]`) picked by I32 `idx` (`[n, b']`, `b` is 1 or `b'`) → f32.
    pub fn get_rows(&mut self, a: TensorId, idx: TensorId) -> Result<TensorId> {
        let op = "get_rows";
        let ta = self.expect_dtype(op, a, DType::WEIGHTS)?;
        let ti = self.expect_dtype(op, idx, &[DType::I32])?;
        if ta.ne[3] != 1
            || ti.ne[2] != 1
            || ti.ne[3] != 1
            || (ta.ne[2] != 1 && ta.ne[2] != ti.ne[1])
        {
            return Err(shape_err(
                op,
                format!("{} by indices {}", ta.shape_str(), ti.shape_str()),
            ));
        }
        let ne = [ta.ne[0], ti.ne[0], ti.ne[1], 1];
        self.node(Op::GetRows, vec![a, idx], DType::F32, ne)
    }

    /// A view of `a`'s memory with shape `ne`, strides `nb` and byte `offset` from `a`'s start.
    pub fn view(
        &mut self,
        a: TensorId,
        ne: &[usize],
        nb: &[usize],
        offset: usize,
    ) -> Result<TensorId> {
        let op = "view";
        let ne = shape4(op, ne)?;
        let ta = self.get(a)?.clone();
        let mut nb4 = contiguous_strides(ta.dtype, ne)?;
        if nb.len() > MAX_DIMS {
            return Err(shape_err(op, format!("{} strides", nb.len())));
        }
        nb4[..nb.len()].copy_from_slice(nb);
        if nb4[0] != ta.dtype.block_bytes() && ta.dtype.is_quantized() {
            return Err(shape_err(
                op,
                "quantized views must keep packed rows".into(),
            ));
        }
        let (root, base) = self.storage_of(a);
        let root_bytes = self.tensor(root).nbytes();
        let mut t = Tensor {
            name: format!("{}(view)", ta.name),
            dtype: ta.dtype,
            ne,
            nb: nb4,
            op: Op::View,
            src: vec![a],
            view_of: Some(root),
            view_offset: base
                .checked_add(offset)
                .ok_or_else(|| Error::OutOfBounds("view offset overflows".into()))?,
            role: Role::Compute,
            is_output: false,
        };
        let end = t
            .view_offset
            .checked_add(t.nbytes())
            .ok_or_else(|| Error::OutOfBounds("view offset overflows".into()))?;
        if end > root_bytes {
            return Err(Error::OutOfBounds(format!(
                "view {:?}/{:?} at offset {} reaches byte {end} of {} ({root_bytes} bytes)",
                ne, t.nb, t.view_offset, ta.name
            )));
        }
        if ta.role != Role::Compute {
            t.role = ta.role;
        }
        Ok(self.push(t))
    }

    /// `a` (contiguous) seen with shape `ne` of the same element count.
    pub fn reshape(&mut self, a: TensorId, ne: &[usize]) -> Result<TensorId> {
        let ta = self.get(a)?;
        let ne4 = shape4("reshape", ne)?;
        if !ta.is_contiguous() {
            return Err(shape_err(
                "reshape",
                format!("{} is not contiguous; cont() it first", ta.name),
            ));
        }
        // Strides first: they check that the new shape's size does not overflow.
        let nb = contiguous_strides(ta.dtype, ne4)?;
        if ne4.iter().product::<usize>() != ta.numel() {
            return Err(shape_err(
                "reshape",
                format!("{} to {ne:?}", ta.shape_str()),
            ));
        }
        self.view(a, &ne4, &nb, 0)
    }

    /// `a` with its dims moved: dim `i` of `a` becomes dim `axes[i]` of the result.
    pub fn permute(&mut self, a: TensorId, axes: [usize; MAX_DIMS]) -> Result<TensorId> {
        let ta = self.get(a)?;
        let mut seen = [false; MAX_DIMS];
        for &x in &axes {
            if x >= MAX_DIMS || seen[x] {
                return Err(shape_err(
                    "permute",
                    format!("axes {axes:?} are not a permutation"),
                ));
            }
            seen[x] = true;
        }
        if ta.dtype.is_quantized() && axes[0] != 0 {
            return Err(shape_err(
                "permute",
                "quantized tensors keep dim 0 in place".into(),
            ));
        }
        let (mut ne, mut nb) = ([0; MAX_DIMS], [0; MAX_DIMS]);
        for i in 0..MAX_DIMS {
            ne[axes[i]] = ta.ne[i];
            nb[axes[i]] = ta.nb[i];
        }
        self.view(a, &ne, &nb, 0)
    }

    /// `a` with dims 0 and 1 swapped.
    pub fn transpose(&mut self, a: TensorId) -> Result<TensorId> {
        self.permute(a, [1, 0, 2, 3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_infers_shape_and_rejects_mismatch() {
        let mut g = Graph::new();
        let w = g.weight("w", DType::Q8_0, &[64, 10]).unwrap();
        let x = g.input("x", DType::F32, &[64, 3, 2]).unwrap();
        let y = g.matmul(w, x).unwrap();
        assert_eq!(g.tensor(y).ne, [10, 3, 2, 1]);
        let bad = g.input("b", DType::F32, &[63, 3]).unwrap();
        assert!(matches!(g.matmul(w, bad), Err(Error::Shape { .. })));
    }

    #[test]
    fn views_are_bounds_checked() {
        let mut g = Graph::new();
        let a = g.input("a", DType::F32, &[4, 4]).unwrap();
        assert!(g.view(a, &[4], &[4], 48).is_ok());
        assert!(matches!(
            g.view(a, &[4], &[4], 52),
            Err(Error::OutOfBounds(_))
        ));
        let t = g.transpose(a).unwrap();
        assert!(!g.tensor(t).is_contiguous());
        assert!(g.reshape(t, &[16]).is_err());
        let c = g.cont(t).unwrap();
        assert!(g.reshape(c, &[16]).is_ok());
    }

    #[test]
    fn broadcast_rules() {
        let mut g = Graph::new();
        let a = g.input("a", DType::F32, &[6, 4, 2]).unwrap();
        let b = g.input("b", DType::F32, &[6, 1, 2]).unwrap();
        let c = g.input("c", DType::F32, &[4]).unwrap();
        assert!(g.add(a, b).is_ok());
        assert!(g.add(a, c).is_err());
    }

    #[test]
    fn rope_factors_are_checked() {
        let mut g = Graph::new();
        let q = g.input("q", DType::F32, &[4, 1, 2]).unwrap();
        let pos = g.input("pos", DType::I32, &[2]).unwrap();
        let p = RopeParams {
            n_dims: 4,
            mode: crate::graph::RopeMode::Normal,
            freq_base: 10000.0,
            freq_scale: 1.0,
        };
        let ok = g.input("ff", DType::F32, &[2]).unwrap();
        let y = g.rope(q, pos, Some(ok), p).unwrap();
        assert_eq!(g.tensor(y).src, [q, pos, ok]);
        // (tests/e2e/bad_input.test.mjs expects this message from JS.)
        let three = g.input("ff3", DType::F32, &[3]).unwrap();
        assert_eq!(
            g.rope(q, pos, Some(three), p).unwrap_err().to_string(),
            "shape mismatch in rope: frequency factors [3, 1, 1, 1] must be 2 contiguous \
             values (n_dims / 2)"
        );
        let ints = g.input("ffi", DType::I32, &[2]).unwrap();
        assert!(matches!(
            g.rope(q, pos, Some(ints), p),
            Err(Error::DType { .. })
        ));
    }
}
